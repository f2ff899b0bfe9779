"""ReActAgent on the local runner."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from flink_agents.api import (
    BaseChatModelSetup,
    ChatMessage,
    ChatModelError,
    ImageBlock,
    MessageRole,
    Prompt,
    ReActAgent,
    ResourceDescriptor,
    ResourceType,
    ScriptedChatModelConnection,
    TextBlock,
    ToolCallBlock,
)
from flink_agents.runtime.local_runner import LocalExecutionEnvironment


class Triage(BaseModel):
    label: str
    priority: int


def lookup(ticket: str) -> str:
    """Look a ticket up.

    Args:
        ticket: The ticket id.
    """
    return f"{ticket}: printer on fire"


def run(
    agent: ReActAgent, model: ScriptedChatModelConnection, inputs: list[dict[str, Any]]
) -> list[Any]:
    env = LocalExecutionEnvironment({"error-handling-strategy": "ignore"})
    env.add_resource("local", ResourceType.CHAT_MODEL_CONNECTION, model)
    env.add_resource("lookup", ResourceType.TOOL, lookup)
    out = env.from_list(inputs).apply(agent).to_list()
    env.execute()
    return out


def setup(**extra: Any) -> ResourceDescriptor:
    return ResourceDescriptor(clazz=BaseChatModelSetup, connection="local", **extra)


def test_prompt_tools_and_structured_output() -> None:
    model = ScriptedChatModelConnection(
        replies=[
            ChatMessage.assistant(
                tool_calls=[ToolCallBlock(id="c1", name="lookup", input={"ticket": "T7"})]
            ),
            '{"label": "hardware", "priority": 1}',
        ]
    )
    agent = ReActAgent(
        chat_model=setup(tools=["lookup"]),
        prompt=Prompt.from_messages(
            [ChatMessage.system("You triage tickets."), ChatMessage.user("Ticket {id}: {subject}")]
        ),
        output_schema=Triage,
    )
    out = run(agent, model, [{"key": "T7", "value": {"id": "T7", "subject": "smoke"}}])
    assert out == [{"T7": Triage(label="hardware", priority=1)}]

    first = model.calls[0].messages
    assert [m.role for m in first] == [MessageRole.SYSTEM, MessageRole.SYSTEM, MessageRole.USER]
    assert first[0].text == "You triage tickets."
    instruction = first[1].text
    assert "JSON" in instruction
    assert json.dumps(Triage.model_json_schema(), separators=(",", ":")) in instruction
    assert first[2].text == "Ticket T7: smoke"
    assert [t.name for t in model.calls[0].tools] == ["lookup"]
    assert model.calls[1].messages[-1].tool_result_block is not None


def test_text_input_without_prompt_and_plain_answer() -> None:
    model = ScriptedChatModelConnection(replies=["Paris."])
    out = run(ReActAgent(chat_model=setup()), model, [{"key": 1, "value": "Capital of France?"}])
    assert out == [{1: "Paris."}]
    assert model.calls[0].messages == [ChatMessage.user("Capital of France?")]


def test_message_input_passes_through_with_media() -> None:
    image = ImageBlock(mime_type="image/png", data="iVBORw0KGgo=")
    message = ChatMessage.user([TextBlock(text="What is this?"), image])
    model = ScriptedChatModelConnection(replies=["A pixel."])
    out = run(ReActAgent(chat_model=setup()), model, [{"key": "k", "value": [message]}])
    assert out == [{"k": "A pixel."}]
    assert model.calls[0].messages == [message]


def test_dict_input_without_prompt_becomes_json_text() -> None:
    model = ScriptedChatModelConnection(replies=["ok"])
    run(ReActAgent(chat_model=setup()), model, [{"key": "k", "value": {"a": 1}}])
    assert model.calls[0].messages == [ChatMessage.user('{"a": 1}')]


def test_a_failed_request_outputs_an_error_record() -> None:
    model = ScriptedChatModelConnection(
        replies=[ChatModelError("denied", status_code=401, kind="authentication")]
    )
    out = run(ReActAgent(chat_model=setup()), model, [{"key": "k", "value": "hi"}])
    assert out == [{"k": {"error": "denied", "kind": "authentication"}}]
