"""Tool-call arguments that are not valid JSON, end to end through each adapter.

The three adapters agree: the call is kept (its raw arguments under ``_raw_arguments``),
the built-in tool action answers it with an ``is_error`` result without running the
tool, the model reads that result on the next turn, and the arguments go back verbatim.
Runs on the local runner, through the real SDKs, against a local fake server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from flink_agents.api import BaseChatModelConnection, ChatMessage
from flink_agents.integrations.chat_models.anthropic import AnthropicChatModelConnection
from flink_agents.integrations.chat_models.openai import (
    OpenAIChatModelConnection,
    OpenAIResponsesChatModelConnection,
)
from tests.fakes.http_server import FakeProviderServer
from tests.runtime.chat_agents import chat_agent, only_response, run_local

API_KEY = "sk-test-invalid-arguments-0123"
RAW = '{"city": "Par'
CALLS: list[str] = []


def weather(city: str) -> str:
    """The weather in a city."""
    CALLS.append(city)
    return "sunny"


@dataclass
class Adapter:
    connection: Callable[[str], BaseChatModelConnection]
    tool_turn: dict[str, Any]
    answer_turn: dict[str, Any]
    replayed_call: Callable[[Any], Any]
    """The assistant's tool call as the second request sends it back."""
    tool_result: Callable[[Any], tuple[str, bool | None]]
    """(the text the model reads, the error flag sent) from the second request."""


ANTHROPIC = Adapter(
    connection=lambda url: AnthropicChatModelConnection(api_key=API_KEY, base_url=url),
    tool_turn={
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "test-model",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": RAW}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
    answer_turn={
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "test-model",
        "content": [{"type": "text", "text": "Sorry, I sent bad arguments."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
    replayed_call=lambda body: body["messages"][1],
    tool_result=lambda body: (
        body["messages"][2]["content"][0]["content"],
        body["messages"][2]["content"][0].get("is_error"),
    ),
)

RESPONSES = Adapter(
    connection=lambda url: OpenAIResponsesChatModelConnection(api_key=API_KEY, base_url=url),
    tool_turn={
        "id": "resp_1",
        "status": "completed",
        "model": "test-model",
        "output": [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "weather",
                "arguments": RAW,
            }
        ],
    },
    answer_turn={
        "id": "resp_2",
        "status": "completed",
        "model": "test-model",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Sorry, I sent bad arguments."}],
            }
        ],
    },
    replayed_call=lambda body: body["input"][1],
    tool_result=lambda body: (body["input"][2]["output"], None),
)

CHAT = Adapter(
    connection=lambda url: OpenAIChatModelConnection(api_key=API_KEY, base_url=url),
    tool_turn={
        "id": "chatcmpl-1",
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": RAW},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    },
    answer_turn={
        "id": "chatcmpl-2",
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Sorry, I sent bad arguments."},
                "finish_reason": "stop",
            }
        ],
    },
    replayed_call=lambda body: body["messages"][1],
    tool_result=lambda body: (body["messages"][2]["content"], None),
)


@pytest.fixture(autouse=True)
def _forget_calls() -> None:
    CALLS.clear()


@pytest.mark.parametrize(
    ("adapter", "replayed", "error_flag", "prefix"),
    [
        pytest.param(
            ANTHROPIC,
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "weather",
                        "input": {"_raw_arguments": RAW},
                    }
                ],
            },
            True,
            "tool 'weather'",
            id="anthropic",
        ),
        pytest.param(
            RESPONSES,
            {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": RAW},
            None,
            "tool 'weather'",
            id="responses",
        ),
        pytest.param(
            CHAT,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": RAW},
                    }
                ],
            },
            None,
            "Error: tool 'weather'",
            id="chat-completions",
        ),
    ],
)
def test_invalid_arguments_give_the_model_an_error_result(
    server: FakeProviderServer,
    adapter: Adapter,
    replayed: dict[str, Any],
    error_flag: bool | None,
    prefix: str,
) -> None:
    server.enqueue(adapter.tool_turn, adapter.answer_turn)
    agent = chat_agent(
        adapter.connection(server.base_url),  # type: ignore[arg-type]
        tools={"weather": weather},
    )

    outputs, _ = run_local(agent, [{"key": "k", "value": [ChatMessage.user("Weather?")]}])

    response = only_response(outputs)
    assert response.error is None
    assert response.response is not None
    assert response.response.text == "Sorry, I sent bad arguments."
    assert CALLS == []  # the tool never ran
    assert len(server.requests) == 2
    second = server.bodies[1]
    assert adapter.replayed_call(second) == replayed
    text, flag = adapter.tool_result(second)
    assert flag is error_flag
    assert text.startswith(prefix)
