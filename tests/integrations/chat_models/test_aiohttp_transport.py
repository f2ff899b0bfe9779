"""The SDKs' aiohttp transport (``http_client=openai.DefaultAioHttpClient`` or
``anthropic.DefaultAioHttpClient``): the option `docs/providers.md` recommends for many
concurrent calls, through the real SDKs to the local fake server.

The same exact body goes out as through the default transport, the answer is parsed the
same, the class travels with a pickled connection, and a refused connection is a
retryable `ChatModelError`.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import anthropic
import cloudpickle
import openai
import pytest

from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models._provider_connection import ProviderConnection
from flink_agents.integrations.chat_models.anthropic import AnthropicChatModelConnection
from flink_agents.integrations.chat_models.openai import OpenAIChatModelConnection
from tests.fakes.http_server import FakeProviderServer
from tests.integrations.chat_models.provider_helpers import close_sdk_client

pytest.importorskip("aiohttp")

API_KEY = "sk-test-aiohttp-0123456789"

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-test-2026",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Red."}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}
MESSAGE = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "Red."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 3},
}


def _openai(base_url: str, **settings: Any) -> OpenAIChatModelConnection:
    return OpenAIChatModelConnection(
        api_key=API_KEY, base_url=base_url, http_client=openai.DefaultAioHttpClient, **settings
    )


def _anthropic(base_url: str, **settings: Any) -> AnthropicChatModelConnection:
    return AnthropicChatModelConnection(
        api_key=API_KEY, base_url=base_url, http_client=anthropic.DefaultAioHttpClient, **settings
    )


async def test_openai_through_aiohttp_sends_the_exact_body(server: FakeProviderServer) -> None:
    server.enqueue(COMPLETION)
    connection = _openai(server.base_url)
    try:
        result = await connection.achat([ChatMessage.user("Color?")], model="gpt-test")
    finally:
        await close_sdk_client(connection)
    [request] = server.requests
    assert request.path == "/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "Color?"}],
    }
    assert result.message.text == "Red."
    assert result.usage.input_tokens == 12


async def test_anthropic_through_aiohttp_sends_the_exact_body(
    server: FakeProviderServer,
) -> None:
    server.enqueue(MESSAGE)
    connection = _anthropic(server.base_url)
    try:
        result = await connection.achat([ChatMessage.user("Color?")], model="claude-test")
    finally:
        await close_sdk_client(connection)
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert API_KEY in (request.headers.get("x-api-key") or request.headers["authorization"])
    assert request.body == {
        "model": "claude-test",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Color?"}]}],
    }
    assert result.message.text == "Red."


async def test_many_concurrent_calls_share_one_aiohttp_client(server: FakeProviderServer) -> None:
    server.enqueue(*[COMPLETION] * 20)
    connection = _openai(server.base_url)
    try:
        results = await asyncio.gather(
            *[connection.achat([ChatMessage.user(f"q{i}")], model="gpt-test") for i in range(20)]
        )
        client: Any = connection._sdk_client()
        assert isinstance(client._client, openai.DefaultAioHttpClient)
    finally:
        await close_sdk_client(connection)
    assert [r.message.text for r in results] == ["Red."] * 20
    assert sorted(r.body["messages"][0]["content"] for r in server.requests) == sorted(
        f"q{i}" for i in range(20)
    )


@pytest.mark.parametrize(
    ("connect", "reply"),
    [(_openai, COMPLETION), (_anthropic, MESSAGE)],
    ids=["openai", "anthropic"],
)
def test_the_transport_class_travels_with_a_pickled_connection(
    server: FakeProviderServer, connect: Any, reply: dict[str, Any]
) -> None:
    original = connect(server.base_url)
    restored: ProviderConnection[Any] = cloudpickle.loads(cloudpickle.dumps(original))
    assert restored.http_client is original.http_client

    async def ask() -> str:
        try:
            result = await restored.achat([ChatMessage.user("Color?")], model="m")
        finally:
            await close_sdk_client(restored)
        return result.message.text

    server.enqueue(reply)
    assert asyncio.run(ask()) == "Red."


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("connect", [_openai, _anthropic], ids=["openai", "anthropic"])
async def test_a_refused_connection_is_a_retryable_chat_model_error(connect: Any) -> None:
    connection = connect(f"http://127.0.0.1:{_closed_port()}/v1", timeout=5.0)
    try:
        with pytest.raises(ChatModelError) as raised:
            await connection.achat([ChatMessage.user("hi")], model="m")
    finally:
        await close_sdk_client(connection)
    # openai's aiohttp transport reports a refused connection as a timeout, anthropic's
    # as a connection error: either way the chat action retries it.
    assert raised.value.retryable
    assert raised.value.kind in ("connection", "timeout")
    assert API_KEY not in str(raised.value)
