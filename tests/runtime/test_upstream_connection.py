"""A chat model connection written to upstream's contract (its docs' `MyChatModelConnection`
and its adapters' habits) runs here: ``chat(messages, tools=None, output_schema=None,
**kwargs) -> ChatMessage`` calling ``_reject_unsupported_output_schema`` first, answering
with upstream's dict ``tool_calls`` and reading the history as upstream's adapters do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection
from tests.runtime.chat_agents import chat_agent, only_response, run_local

SEEN: list[list[dict[str, Any]]] = []


class MyChatModelConnection(BaseChatModelConnection):
    def chat(  # pyright: ignore[reportIncompatibleMethodOverride]
        self,
        messages: Sequence[ChatMessage],
        tools: list[Any] | None = None,
        output_schema: Any = None,
        **kwargs: Any,
    ) -> ChatMessage:
        self._reject_unsupported_output_schema(output_schema)
        history = []
        for message in messages:  # as upstream's openai_utils reads a conversation
            entry: dict[str, Any] = {"role": message.role.value, "content": message.content}
            if message.tool_calls:
                entry["tool_calls"] = [
                    (call["id"], call["function"]["name"], call["function"]["arguments"])
                    for call in message.tool_calls
                ]
            history.append(entry)
        SEEN.append(history)
        if messages[-1].role == MessageRole.TOOL:
            return ChatMessage(role=MessageRole.ASSISTANT, content=f"it is {messages[-1].content}")
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            tool_calls=[
                {
                    "id": "call-1",
                    "type": "function",
                    "function": {"name": "where", "arguments": {"ticket": "T1"}},
                }
            ],
        )


def where(ticket: str) -> str:
    """Where a ticket is."""
    return f"{ticket} in Lisbon"


def test_a_connection_written_to_upstreams_contract_runs_the_tool_loop() -> None:
    SEEN.clear()
    agent = chat_agent(MyChatModelConnection(), tools={"where": where})
    outputs, _ = run_local(agent, [{"key": "k", "value": "where is T1?"}])
    response = only_response(outputs)
    assert response.ok and response.response is not None
    assert response.response.content == "it is T1 in Lisbon"
    assert SEEN[1] == [
        {"role": "user", "content": "where is T1?"},
        {"role": "assistant", "content": "", "tool_calls": [("call-1", "where", {"ticket": "T1"})]},
        {"role": "tool", "content": "T1 in Lisbon"},
    ]


def test_the_upstream_guard_refuses_a_schema() -> None:
    with pytest.raises(NotImplementedError, match="no native structured-output translation"):
        MyChatModelConnection()._reject_unsupported_output_schema(object())
