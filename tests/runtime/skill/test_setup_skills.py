"""A chat model setup with ``skills``: the model is told of them in a system message
after the prompt's first, and is offered ``load_skill`` and ``bash`` (upstream's
behaviour); a skill the agent does not have fails the setup with the names it has."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_agents.api import (
    Agent,
    BaseChatModelSetup,
    ChatMessage,
    FunctionChatModelConnection,
    Prompt,
    ResourceDescriptor,
    ResourceType,
)
from flink_agents.api.message import MessageRole
from flink_agents.api.skills import Skills
from tests.runtime.chat_agents import CONNECTION, MODEL, chat_agent, run_local


def _agent(
    tmp_path: Path, connection: FunctionChatModelConnection, skills: list[str] | None
) -> Agent:
    for name in ("calc", "jokes"):
        folder = tmp_path / "skills" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name}.\n",
            encoding="utf-8",
        )
    agent = chat_agent(connection)
    agent.resources[ResourceType.CHAT_MODEL][MODEL] = ResourceDescriptor(
        clazz=BaseChatModelSetup,
        connection=CONNECTION,
        prompt=Prompt.from_messages(
            [ChatMessage.system("You help."), ChatMessage.system("Be brief.")]
        ),
        skills=skills,
    )
    agent.add_resource(
        "my_skills", ResourceType.SKILLS, Skills.from_local_dir(str(tmp_path / "skills"))
    )
    return agent


def test_the_model_is_told_of_its_skills_and_offered_the_skill_tools(tmp_path: Path) -> None:
    connection = FunctionChatModelConnection(function=lambda messages, tools: "ok")
    run_local(_agent(tmp_path, connection, ["calc"]), [{"key": "k", "value": "hi"}])
    [call] = connection.calls
    roles = [m.role for m in call.messages]
    assert roles == [MessageRole.SYSTEM] * 3 + [MessageRole.USER]
    first, listing, second = (m.text for m in call.messages[:3])
    assert (first, second) == ("You help.", "Be brief.")
    assert "<name>calc</name>" in listing and "The calc skill." in listing
    assert "jokes" not in listing  # only the setup's skills
    assert [t.name for t in call.tools] == ["load_skill", "bash"]


def test_without_skills_nothing_is_added(tmp_path: Path) -> None:
    connection = FunctionChatModelConnection(function=lambda messages, tools: "ok")
    run_local(_agent(tmp_path, connection, None), [{"key": "k", "value": "hi"}])
    [call] = connection.calls
    assert [m.text for m in call.messages] == ["You help.", "Be brief.", "hi"]
    assert call.tools == []


def test_the_model_loads_a_skill(tmp_path: Path) -> None:
    def model(messages: list[ChatMessage], tools: object) -> ChatMessage | str:
        results = [m for m in messages if m.role is MessageRole.TOOL]
        if not results:
            from flink_agents.api.chat_message import ToolCallBlock

            call = ToolCallBlock(id="c1", name="load_skill", input={"name": "jokes"})
            return ChatMessage.assistant(tool_calls=[call])
        return results[0].content

    connection = FunctionChatModelConnection(function=model)
    outputs, _ = run_local(_agent(tmp_path, connection, ["jokes"]), [{"key": "k", "value": "hi"}])
    text = outputs[0].value.response.text
    assert "# Skill: jokes" in text and "Do jokes." in text
    assert f"The skill's folder: {(tmp_path / 'skills' / 'jokes').resolve()}" in text


def test_a_skill_the_agent_does_not_have_fails_with_the_names_it_has(tmp_path: Path) -> None:
    connection = FunctionChatModelConnection(function=lambda messages, tools: "ok")
    with pytest.raises(Exception, match=r"no skill named 'nope' \(skills: \['calc', 'jokes'\]\)"):
        run_local(_agent(tmp_path, connection, ["nope"]), [{"key": "k", "value": "hi"}])


def test_upstreams_resource_context_methods(tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    class Setup(BaseChatModelSetup):
        def open(self) -> None:
            context = self.resource_context
            assert context is not None
            seen["prompt"] = context.generate_available_skills_prompt("jokes")
            seen["dirs"] = context.get_skill_dirs("calc")
            super().open()

    connection = FunctionChatModelConnection(function=lambda messages, tools: "ok")
    agent = _agent(tmp_path, connection, ["calc"])
    agent.resources[ResourceType.CHAT_MODEL][MODEL] = ResourceDescriptor(
        clazz=Setup, connection=CONNECTION, skills=["calc"]
    )
    run_local(agent, [{"key": "k", "value": "hi"}])
    assert "<name>jokes</name>" in str(seen["prompt"])
    assert seen["dirs"] == [str((tmp_path / "skills" / "calc").resolve())]


def test_without_skills_the_context_has_none() -> None:
    seen: dict[str, object] = {}

    class Setup(BaseChatModelSetup):
        def open(self) -> None:
            context = self.resource_context
            assert context is not None
            seen["both"] = (context.generate_available_skills_prompt(), context.get_skill_dirs())

    agent = chat_agent(FunctionChatModelConnection(function=lambda messages, tools: "ok"))
    agent.resources[ResourceType.CHAT_MODEL][MODEL] = ResourceDescriptor(
        clazz=Setup, connection=CONNECTION
    )
    run_local(agent, [{"key": "k", "value": "hi"}])
    assert seen["both"] == ("", [])


def test_skills_without_a_skills_resource_say_what_is_missing() -> None:
    agent = chat_agent(FunctionChatModelConnection(function=lambda messages, tools: "ok"))
    agent.resources[ResourceType.CHAT_MODEL][MODEL] = ResourceDescriptor(
        clazz=BaseChatModelSetup, connection=CONNECTION, skills=["calc"]
    )
    with pytest.raises(Exception, match=r"skills=\['calc'\], but its agent declares no skills"):
        run_local(agent, [{"key": "k", "value": "hi"}])


def test_a_tool_the_agent_names_bash_stays_its_own(tmp_path: Path) -> None:
    def model(messages: list[ChatMessage], tools: object) -> ChatMessage | str:
        results = [m for m in messages if m.role is MessageRole.TOOL]
        if not results:
            from flink_agents.api.chat_message import ToolCallBlock

            call = ToolCallBlock(id="c1", name="bash", input={"command": "anything"})
            return ChatMessage.assistant(tool_calls=[call])
        return results[0].content

    def bash(command: str) -> str:
        """The agent's own bash tool."""
        return f"mine: {command}"

    connection = FunctionChatModelConnection(function=model)
    agent = _agent(tmp_path, connection, ["calc"])
    agent.add_resource("bash", ResourceType.TOOL, bash)
    outputs, _ = run_local(agent, [{"key": "k", "value": "hi"}])
    assert outputs[0].value.response.text == "mine: anything"
