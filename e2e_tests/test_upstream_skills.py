"""Upstream's skills e2e tests (agent_skills_test.py: a workflow agent that evaluates an
expression with the math-calculator skill, one that runs the joke-generator skill's
Python script, and a ReAct agent with a row output schema), run on the local runner with
only the model connection changed (e2e_tests/upstream_skills_agent.py) and, since
commands run only where the user allows them, ``skills.commands.enabled`` set.
"""

from __future__ import annotations

from typing import Any

from e2e_tests.upstream_skills_agent import MODEL, SkillTestAgent, current_dir, offline_connection
from flink_agents.api.agents.agent import Agent
from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.core_options import AgentExecutionOptions, ErrorHandlingStrategy
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceName, ResourceType
from flink_agents.api.skills import Skills


def _run(agent: Agent, value: Any, *, commands: bool = True, env: Any = None) -> Any:
    env = env or AgentsExecutionEnvironment.get_execution_environment()
    if commands:
        env.get_config().set(AgentExecutionOptions.SKILLS_COMMANDS_ENABLED, True)
    outputs = env.from_list([{"key": 1, "value": value}]).apply(agent).to_list()
    env.execute()
    assert len(outputs) == 1
    return outputs[0][1]


def test_workflow_with_skills() -> None:
    # The model loads math-calculator and runs `echo "(2 ^ 3)" | bc`.
    assert "8" in _run(SkillTestAgent(), {"a": 2, "b": 3})


def test_execute_python_script() -> None:
    # The model loads joke-generator and runs its script from the skill's folder.
    assert "Too many cheetahs" in _run(SkillTestAgent(), "Tell me a joke about cat.")


def test_commands_do_not_run_unless_allowed() -> None:
    output = _run(SkillTestAgent(), "Tell me a joke about cat.", commands=False)
    assert "Too many cheetahs" not in output
    assert "skills.commands.enabled" in output


def test_react_agent_with_skills() -> None:
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.get_config().set(AgentExecutionOptions.ERROR_HANDLING_STRATEGY, ErrorHandlingStrategy.RETRY)
    env.get_config().set(AgentExecutionOptions.MAX_RETRIES, 3)
    env.add_resource(
        "openai", ResourceType.CHAT_MODEL_CONNECTION, offline_connection()
    ).add_resource(
        "my_skill",
        ResourceType.SKILLS,
        Skills.from_local_dir(str(current_dir / "resources" / "skills")),
    )
    prompt = Prompt.from_messages(
        messages=[
            ChatMessage(
                role=MessageRole.SYSTEM,
                content="You are a math calculate assistant. Use the math-calculator skill when asked to evaluate "
                "an expression. You **must load the skill first** and strictly follow the instructions "
                "of the skill.",
            ),
            ChatMessage(role=MessageRole.USER, content="Please evaluate the expression: {a} ^ {b}"),
        ],
    )
    from pyflink.common.typeinfo import BasicTypeInfo, RowTypeInfo

    agent = ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=ResourceName.ChatModel.OPENAI_COMPLETIONS_SETUP,
            connection="openai",
            model=MODEL,
            skills=["math-calculator"],
            allowed_commands=["echo", "bc"],
        ),
        prompt=prompt,
        output_schema=RowTypeInfo([BasicTypeInfo.INT_TYPE_INFO()], ["result"]),
    )
    assert _run(agent, {"a": 2, "b": 3}, env=env).result == 8
