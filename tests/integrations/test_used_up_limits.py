"""A successful answer whose rate-limit headers say a limit is used up reaches the
connection's limiter (`hear_used_up_limits` on the SDK's HTTP client): through the real
``openai`` and ``anthropic`` SDKs on a local fake server, on each transport and with an
HTTP client of the user's. Time is a fake clock."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone
from typing import Any

import httpx2
import pytest

from flink_agents.api.chat_models.rate_limit import bind_used_up_limits, release_used_up_limits
from flink_agents.api.message import ChatMessage
from flink_agents.api.resource import ResourceType
from flink_agents.integrations._provider_client import hear_used_up_limits
from flink_agents.integrations._sdk_errors import used_up_limit_wait
from flink_agents.integrations.chat_models.anthropic import (
    AnthropicChatModelConnection,
    AnthropicChatModelSetup,
)
from flink_agents.integrations.chat_models.openai import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.integrations.embedding_models.openai_embedding_model import (
    OpenAIEmbeddingModelConnection,
    OpenAIEmbeddingModelSetup,
)
from flink_agents.runtime.request_gate import limits_of, use_limiter
from flink_agents.runtime.request_limiter import RequestLimiter
from tests.api.fake_clock import FakeClock
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.embedding_models.embedding_helpers import bound, embed_once

OPENAI_KEY = "sk-test-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-SECRETKEY1234567890"

CHAT_REPLY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-test-2026",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5},
}
MESSAGE_REPLY: dict[str, Any] = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 4, "output_tokens": 1},
}
EMBEDDING_REPLY: dict[str, Any] = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.5, 1.0]}],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 2, "total_tokens": 2},
}
# 10 requests a window that is whole again in 20 s: one comes back every 2 s.
USED_UP = {
    "x-ratelimit-limit-requests": "10",
    "x-ratelimit-remaining-requests": "0",
    "x-ratelimit-reset-requests": "20s",
}


def limited(connection: Any, clock: FakeClock) -> RequestLimiter:
    limiter = RequestLimiter(limits_of(connection), clock=clock, sleep=clock.sleep)
    use_limiter(connection, limiter)
    return limiter


def lookup(connection: Any) -> Any:
    def get(name: str, kind: ResourceType) -> Any:
        assert name == "conn"
        return connection

    return get


def openai_chat(connection: OpenAIChatModelConnection) -> OpenAIChatModelSetup:
    return OpenAIChatModelSetup(
        connection="conn", model="gpt-test-2026", get_resource=lookup(connection)
    )


@pytest.mark.parametrize(
    "settings",
    [
        {},  # the default transport: the SDK's aiohttp client
        {"http_transport": "httpx"},
        {"http_client": lambda: httpx2.AsyncClient()},  # the user's own client
    ],
    ids=["aiohttp", "httpx", "own-client"],
)
async def test_an_openai_answer_saying_a_limit_is_used_up_pauses_its_connection(
    settings: dict[str, Any],
) -> None:
    clock = FakeClock(start=0.0)
    with FakeProviderServer() as server:
        server.enqueue(ScriptedResponse(body=CHAT_REPLY, headers=USED_UP), CHAT_REPLY)
        connection = OpenAIChatModelConnection(
            base_url=server.base_url, api_key=OPENAI_KEY, **settings
        )
        limiter = limited(connection, clock)
        setup = openai_chat(connection)
        assert (await setup.achat([ChatMessage.user("hi")])).message.text == "ok"
        assert limiter.used_up == 1 and limiter.overloads == 0
        assert limiter.paused_until == 2.0 and limiter.limit == 1
        call = asyncio.ensure_future(setup.achat([ChatMessage.user("again")]))
        await clock.advance(1.9)
        assert not call.done() and len(server.requests) == 1  # held back, nothing sent
        await clock.advance(0.1)
        assert (await call).message.text == "ok" and len(server.requests) == 2


async def test_an_answer_with_requests_left_changes_nothing() -> None:
    clock = FakeClock(start=0.0)
    with FakeProviderServer() as server:
        left = {**USED_UP, "x-ratelimit-remaining-requests": "1"}
        server.enqueue(ScriptedResponse(body=CHAT_REPLY, headers=left))
        connection = OpenAIChatModelConnection(base_url=server.base_url, api_key=OPENAI_KEY)
        limiter = limited(connection, clock)
        await openai_chat(connection).achat([ChatMessage.user("hi")])
        assert limiter.used_up == 0 and limiter.limit is None and limiter.paused_until is None


async def test_an_anthropic_answer_saying_its_tokens_are_used_up_pauses_its_connection() -> None:
    clock = FakeClock(start=0.0)
    with FakeProviderServer() as server:
        # Anthropic gives the reset as a time: 30 s on for 60 tokens, one every 0.5 s.
        now = time.time()
        reset = datetime.fromtimestamp(now + 30.0, timezone.utc).isoformat()
        headers = {
            "anthropic-ratelimit-tokens-limit": "60",
            "anthropic-ratelimit-tokens-remaining": "0",
            "anthropic-ratelimit-tokens-reset": reset,
        }
        assert used_up_limit_wait(headers, now=now) == pytest.approx(0.5)
        server.enqueue(ScriptedResponse(body=MESSAGE_REPLY, headers=headers))
        connection = AnthropicChatModelConnection(base_url=server.base_url, api_key=ANTHROPIC_KEY)
        limiter = limited(connection, clock)
        setup = AnthropicChatModelSetup(
            connection="conn", model="claude-test", get_resource=lookup(connection)
        )
        await setup.achat([ChatMessage.user("hi")])
        assert limiter.used_up == 1 and limiter.limit == 1
        paused = limiter.paused_until
        assert paused is not None and 0.45 < paused <= 0.5  # read against the real time


async def test_an_embedding_answer_saying_a_limit_is_used_up_pauses_its_connection() -> None:
    clock = FakeClock(start=0.0)
    with FakeProviderServer() as server:
        server.enqueue(ScriptedResponse(body=EMBEDDING_REPLY, headers=USED_UP))
        connection = OpenAIEmbeddingModelConnection(
            base_url=f"{server.base_url}/v1", api_key=OPENAI_KEY
        )
        limiter = limited(connection, clock)
        setup = bound(OpenAIEmbeddingModelSetup, connection, model="text-embedding-3-small")
        assert (await embed_once(setup, ["hi"])).embeddings == [[0.5, 1.0]]
        assert limiter.used_up == 1 and limiter.paused_until == 2.0


async def test_the_hook_reports_only_successful_answers() -> None:
    heard: list[float] = []
    token = bind_used_up_limits(heard.append)
    try:
        refused = httpx2.Response(429, headers=USED_UP)
        await hear_used_up_limits(refused)  # a refusal's headers are the error's to read
        await hear_used_up_limits(httpx2.Response(200, headers=USED_UP))
    finally:
        release_used_up_limits(token)
    await hear_used_up_limits(httpx2.Response(200, headers=USED_UP))  # no call: nobody
    assert heard == [2.0]


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        (USED_UP, 2.0),
        ({**USED_UP, "x-ratelimit-limit-requests": "nope"}, 20.0),  # the whole reset
        ({k: v for k, v in USED_UP.items() if k != "x-ratelimit-limit-requests"}, 20.0),
        ({**USED_UP, "x-ratelimit-reset-requests": "soon"}, None),
        ({**USED_UP, "x-ratelimit-remaining-requests": "3"}, None),
        (
            {
                **USED_UP,
                "x-ratelimit-limit-tokens": "1000",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-tokens": "6m0s",
            },
            2.0,  # the longest: requests 20 / 10, tokens 360 / 1000
        ),
        ({}, None),
        (None, None),
    ],
)
def test_used_up_limit_wait(headers: dict[str, str] | None, wait: float | None) -> None:
    assert used_up_limit_wait(headers) == wait
