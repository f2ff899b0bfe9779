"""``http_transport="aiohttp"``: the SDK's own aiohttp client (``DefaultAioHttpClient`` of
the ``openai`` and ``anthropic`` SDKs), which `docs/providers.md` recommends for many
concurrent calls, through the real SDKs to the local fake server.

The same exact body goes out as through the default transport, the answer is parsed the
same, the setting travels with a pickled connection, a refused connection is a retryable
`ChatModelError`, and what cannot work is refused when the connection is built. (A Flink
job through it: `e2e_tests/test_aiohttp_job.py`.)
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import anthropic
import cloudpickle
import httpx2
import openai
import pytest
from pydantic import ValidationError

from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models._provider_connection import ProviderConnection
from flink_agents.integrations.chat_models.anthropic import AnthropicChatModelConnection
from flink_agents.integrations.chat_models.ollama_chat_model import OllamaChatModelConnection
from flink_agents.integrations.chat_models.openai import OpenAIChatModelConnection
from tests.fakes.http_server import FakeProviderServer
from tests.integrations.chat_models.provider_helpers import (
    close_sdk_client,
    completion_body,
    refused_url,
)

pytest.importorskip("aiohttp")

API_KEY = "sk-test-aiohttp-0123456789"

COMPLETION = completion_body({"content": "Red."})
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
        api_key=API_KEY, base_url=base_url, http_transport="aiohttp", **settings
    )


def _anthropic(base_url: str, **settings: Any) -> AnthropicChatModelConnection:
    return AnthropicChatModelConnection(
        api_key=API_KEY, base_url=base_url, http_transport="aiohttp", **settings
    )


async def test_openai_through_aiohttp_sends_the_exact_body(server: FakeProviderServer) -> None:
    server.enqueue(COMPLETION)
    connection = _openai(server.base_url)
    try:
        result = await connection.achat([ChatMessage.user("Color?")], model="gpt-test")
        client: Any = connection._sdk_client()
        assert isinstance(client._client, openai.DefaultAioHttpClient)
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
        client: Any = connection._sdk_client()
        assert isinstance(client._client, anthropic.DefaultAioHttpClient)
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


async def test_many_concurrent_calls_share_one_sdk_client(server: FakeProviderServer) -> None:
    server.enqueue(*[COMPLETION] * 20)
    connection = _openai(server.base_url)
    try:
        results = await asyncio.gather(
            *[connection.achat([ChatMessage.user(f"q{i}")], model="gpt-test") for i in range(20)]
        )
        assert connection._sdk_client() is connection._sdk_client()
    finally:
        await close_sdk_client(connection)
    assert [r.message.text for r in results] == ["Red."] * 20
    assert sorted(r.body["messages"][0]["content"] for r in server.requests) == sorted(
        f"q{i}" for i in range(20)
    )


async def test_the_transport_is_part_of_the_sdk_client_key(server: FakeProviderServer) -> None:
    default = OpenAIChatModelConnection(api_key=API_KEY, base_url=server.base_url)
    aiohttp = _openai(server.base_url)
    httpx = OpenAIChatModelConnection(
        api_key=API_KEY, base_url=server.base_url, http_transport="httpx"
    )
    try:
        assert default._sdk_client() is aiohttp._sdk_client()  # aiohttp is the default
        assert httpx._sdk_client() is not aiohttp._sdk_client()
    finally:
        await close_sdk_client(aiohttp)
        await close_sdk_client(httpx)


@pytest.mark.parametrize(
    ("connection_class", "sdk"),
    [(OpenAIChatModelConnection, openai), (AnthropicChatModelConnection, anthropic)],
    ids=["openai", "anthropic"],
)
async def test_the_default_transport_is_the_sdks_aiohttp_client_and_httpx_is_a_setting(
    connection_class: Any, sdk: Any
) -> None:
    default = connection_class(api_key=API_KEY, base_url="http://127.0.0.1:1")
    httpx = connection_class(api_key=API_KEY, base_url="http://127.0.0.1:1", http_transport="httpx")
    try:
        assert default.http_transport is None  # nothing to pickle: the worker resolves it
        assert isinstance(default._sdk_client()._client, sdk.DefaultAioHttpClient)
        made = httpx._sdk_client()._client
        assert not isinstance(made, sdk.DefaultAioHttpClient)
        assert isinstance(made, httpx2.AsyncClient)
    finally:
        await close_sdk_client(default)
        await close_sdk_client(httpx)


async def test_an_http_client_of_your_own_wins_over_the_default_transport() -> None:
    mine = httpx2.AsyncClient()
    connection = OpenAIChatModelConnection(
        api_key=API_KEY, base_url="http://127.0.0.1:1", http_client=mine
    )
    try:
        client: Any = connection._sdk_client()
        assert client._client is mine
    finally:
        await mine.aclose()


@pytest.mark.parametrize(
    ("connect", "reply"),
    [(_openai, COMPLETION), (_anthropic, MESSAGE)],
    ids=["openai", "anthropic"],
)
def test_the_aiohttp_session_is_closed_when_its_loop_shuts_down(
    server: FakeProviderServer, connect: Any, reply: dict[str, Any]
) -> None:
    """Left open, an aiohttp session logs "Unclosed client session" (at ERROR) when it is
    collected; the cache closes it on its loop when `asyncio.run` shuts the loop down."""
    connection = connect(server.base_url)
    made: list[Any] = []

    async def ask() -> None:
        await connection.achat([ChatMessage.user("Color?")], model="m")
        made.append(connection._sdk_client()._client)

    server.enqueue(reply)
    asyncio.run(ask())
    [http_client] = made
    assert http_client.is_closed
    assert http_client._transport.client.closed  # the aiohttp session itself


@pytest.mark.parametrize(
    ("connect", "reply"),
    [(_openai, COMPLETION), (_anthropic, MESSAGE)],
    ids=["openai", "anthropic"],
)
def test_the_setting_travels_with_a_pickled_connection(
    server: FakeProviderServer, connect: Any, reply: dict[str, Any]
) -> None:
    restored: ProviderConnection[Any] = cloudpickle.loads(
        cloudpickle.dumps(connect(server.base_url))
    )
    assert restored.http_transport == "aiohttp"

    async def ask() -> str:
        try:
            result = await restored.achat([ChatMessage.user("Color?")], model="m")
        finally:
            await close_sdk_client(restored)
        return result.message.text

    server.enqueue(reply)
    assert asyncio.run(ask()) == "Red."


@pytest.mark.parametrize("connect", [_openai, _anthropic], ids=["openai", "anthropic"])
async def test_a_refused_connection_is_a_retryable_chat_model_error(connect: Any) -> None:
    connection = connect(f"{refused_url()}/v1", timeout=5.0)
    try:
        with pytest.raises(ChatModelError) as raised:
            await connection.achat([ChatMessage.user("hi")], model="m")
    finally:
        await close_sdk_client(connection)
    # openai's aiohttp transport reports a refused connection as a connect timeout (caused
    # by aiohttp's ClientConnectorError), anthropic's as a connection error: both read as
    # what happened, retryable.
    assert raised.value.retryable
    assert raised.value.kind == "connection"
    assert API_KEY not in str(raised.value)


@pytest.mark.parametrize("sdk", [openai, anthropic], ids=["openai", "anthropic"])
def test_the_sdks_aiohttp_class_as_http_client_does_not_travel(sdk: Any) -> None:
    """Found under another name than its own, the class would be pickled by value and fail
    on a worker: pickling the connection says what to set instead."""
    connection = OpenAIChatModelConnection(api_key=API_KEY, http_client=sdk.DefaultAioHttpClient)
    with pytest.raises(TypeError, match="set http_transport='aiohttp'"):
        cloudpickle.dumps(connection)


def test_an_http_client_class_found_by_its_name_travels() -> None:
    connection = OpenAIChatModelConnection(api_key=API_KEY, http_client=httpx2.AsyncClient)
    assert cloudpickle.loads(cloudpickle.dumps(connection)).http_client is httpx2.AsyncClient


def test_an_http_client_and_the_transport_are_refused_together() -> None:
    with pytest.raises(ValidationError, match="give http_client or http_transport, not both"):
        _openai("http://127.0.0.1:1/v1", http_client=openai.DefaultAsyncHttpxClient)


def test_an_adapter_whose_sdk_has_no_aiohttp_client_refuses_the_setting() -> None:
    with pytest.raises(ValidationError, match="has no http_transport of its SDK"):
        OllamaChatModelConnection(http_transport="aiohttp")


def test_without_aiohttp_installed_the_setting_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "aiohttp" else real(name, *a)
    )
    with pytest.raises(ValidationError, match="pip install aiohttp"):
        _openai("http://127.0.0.1:1/v1")


def test_a_session_made_by_the_flink_operator_thread_is_closed_with_the_loop_thread() -> None:
    """The operator thread runs the loop's callbacks itself (`LoopThread`'s inline runs),
    where the loop's async generator hooks are not set: the session made there is still
    closed when the loop thread shuts the loop down."""
    from flink_agents.runtime.flink.loop_thread import LoopThread

    loop_thread = LoopThread(inline=True)
    loop_thread.start()
    made: list[tuple[Any, bool]] = []
    done = threading.Event()

    def make_client() -> None:  # on the loop, inline: on this thread
        connection = _openai("http://127.0.0.1:1/v1")
        made.append((connection._sdk_client()._client, loop_thread.on_loop_thread()))
        done.set()

    try:
        loop_thread.launch(make_client)
        assert done.wait(5.0)
    finally:
        loop_thread.close()
    [(http_client, on_loop_thread)] = made
    assert not on_loop_thread  # the inline path
    assert http_client.is_closed
