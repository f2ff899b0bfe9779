"""Helpers the adapter tests share: a server that answers only when released, a URL
nobody listens on, a history's round trip through the JSON form agent state keeps,
closing a connection's SDK client, the OpenAI answer bodies the fake servers send, and the
weather tool the live tests ask for. The fake server fixtures are in ``conftest.py``."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from flink_agents.api._values import decode_value, encode_value
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.message import ChatMessage
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations._provider_client import ProviderClient
from tests.fakes.http_server import FakeProviderServer, RecordedRequest, ScriptedResponse

__all__ = [
    "WEATHER_TOOL",
    "answer_the_weather_call",
    "close_sdk_client",
    "completion_body",
    "held_server",
    "refused_url",
    "response_body",
    "through_state",
]


@contextmanager
def held_server(reply: Any) -> Iterator[FakeProviderServer]:
    """A server that holds every request until the block ends, then answers ``reply``:
    a client with a short timeout gives up first (no sleeping on either side)."""
    release = threading.Event()

    def hold(request: RecordedRequest) -> ScriptedResponse:
        release.wait(timeout=30)
        return ScriptedResponse(body=reply)

    with FakeProviderServer(hold) as server:
        try:
            yield server
        finally:
            release.set()


def refused_url() -> str:
    """``http://127.0.0.1:<port>`` of a port that was just free: connecting is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def through_state(history: Sequence[ChatMessage]) -> list[ChatMessage]:
    """``history`` after the JSON round trip agent state and events make (value codec)."""
    decoded = decode_value(json.loads(json.dumps(encode_value(list(history)))))
    assert all(isinstance(message, ChatMessage) for message in decoded)
    return decoded


async def close_sdk_client(connection: ProviderClient[Any]) -> None:
    """Close the connection's SDK client inside the test's event loop (else its pool is
    closed after the loop): ``aclose`` where the SDK has it, else ``close``."""
    client: Any = connection._sdk_client()
    close = getattr(client, "aclose", None) or client.close
    await close()


def completion_body(message: dict[str, Any], finish: str = "stop", **extra: Any) -> dict[str, Any]:
    """A Chat Completions answer: one choice whose message has ``message``'s fields (the
    role is the assistant's), with usage; ``extra`` sets or replaces top-level fields."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "gpt-test-2026",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        **extra,
    }


def response_body(text: str, **extra: Any) -> dict[str, Any]:
    """A Responses answer: one assistant message of ``text``; ``extra`` sets or replaces
    top-level fields (``usage``, say)."""
    return {
        "id": "resp_1",
        "object": "response",
        "model": "gpt-test",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        **extra,
    }


WEATHER_TOOL = ToolMetadata(
    name="get_weather",
    description="The current weather in a city.",
    args_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
"""The tool the live tests ask a model to call."""


async def answer_the_weather_call(
    connection: BaseChatModelConnection,
    history: Sequence[ChatMessage],
    first: ChatResult,
    tools: Sequence[ToolMetadata],
    **params: Any,
) -> ChatResult:
    """The model's next answer once the one tool call of ``first`` returned "Sunny, 21 C",
    the history having gone through agent state's JSON (`through_state`)."""
    [call] = first.message.tool_calls
    result = ToolResponse.from_output(call.id, call.name, "Sunny, 21 C").to_result_block()
    history = through_state([*history, first.message, ChatMessage.tool_result(result)])
    return await connection.achat(history, tools, **params)
