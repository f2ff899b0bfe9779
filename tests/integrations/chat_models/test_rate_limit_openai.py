"""A provider connection's limiter through the real ``openai`` SDK on a local fake server:
the 429's ``retry-after`` header reaches the limiter, so do the headers of an answer that
say a limit is used up (on every transport), the reported usage corrects the token
estimate. Time is a fake clock."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import httpx2
import pytest

from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.api.resource import ResourceType
from flink_agents.integrations.chat_models.openai import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.runtime.request_gate import limiter_for, limits_of, use_limiter
from flink_agents.runtime.request_limiter import RequestLimiter
from tests.api.fake_clock import FakeClock
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse

API_KEY = "sk-test-0123456789abcdef"

REPLY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-test-2026",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50},
}
RATE_LIMITED = ScriptedResponse(
    429,
    {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}},
    headers={"retry-after": "7"},
)


def setup_for(connection: OpenAIChatModelConnection) -> OpenAIChatModelSetup:
    def lookup(name: str, kind: ResourceType) -> Any:
        assert (name, kind) == ("conn", ResourceType.CHAT_MODEL_CONNECTION)
        return connection

    return OpenAIChatModelSetup(
        connection="conn", model="gpt-test-2026", max_tokens=100, get_resource=lookup
    )


async def test_a_429_pauses_the_connection_for_its_retry_after_header() -> None:
    clock = FakeClock(start=0.0)
    with FakeProviderServer() as server:
        server.enqueue(RATE_LIMITED, REPLY)
        connection = OpenAIChatModelConnection(base_url=server.base_url, api_key=API_KEY)
        limiter = RequestLimiter(limits_of(connection), clock=clock, sleep=clock.sleep)
        use_limiter(connection, limiter)
        model = setup_for(connection)
        try:
            await model.achat([ChatMessage.user("hi")])
            raise AssertionError("the 429 did not raise")
        except ChatModelError as exc:
            assert exc.status_code == 429 and exc.retry_after == 7.0
        assert limiter.overloads == 1 and limiter.paused_until == 7.0
        assert limiter.limit == 1  # no call in flight the provider took
        call = asyncio.ensure_future(model.achat([ChatMessage.user("hi")]))
        await clock.advance(6.9)
        assert not call.done() and len(server.requests) == 1  # held back, nothing sent
        await clock.advance(0.1)
        assert (await call).message.text == "ok"
        assert len(server.requests) == 2 and limiter.wait_s == 7.0


async def test_a_429_without_retry_after_pauses_until_the_used_up_limit_resets() -> None:
    clock = FakeClock(start=0.0)
    with FakeProviderServer() as server:
        exhausted = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2.5s"}
        server.enqueue(ScriptedResponse(429, RATE_LIMITED.body, headers=exhausted))
        connection = OpenAIChatModelConnection(base_url=server.base_url, api_key=API_KEY)
        limiter = RequestLimiter(limits_of(connection), clock=clock, sleep=clock.sleep)
        use_limiter(connection, limiter)
        try:
            await setup_for(connection).achat([ChatMessage.user("hi")])
            raise AssertionError("the 429 did not raise")
        except ChatModelError as exc:
            assert exc.retry_after == 2.5
        assert limiter.paused_until == 2.5


USED_UP = {
    # 10 requests a window that is whole again in 20 s: one comes back every 2 s.
    "x-ratelimit-limit-requests": "10",
    "x-ratelimit-remaining-requests": "0",
    "x-ratelimit-reset-requests": "20s",
}


@pytest.mark.parametrize(
    "settings",
    [
        {},  # the default transport: the SDK's aiohttp client
        {"http_transport": "httpx"},
        {"http_client": lambda: httpx2.AsyncClient()},  # the user's own client
    ],
    ids=["aiohttp", "httpx", "own-client"],
)
async def test_an_answer_saying_a_limit_is_used_up_pauses_the_connection(
    settings: dict[str, Any],
) -> None:
    clock = FakeClock(start=0.0)
    with FakeProviderServer() as server:
        server.enqueue(ScriptedResponse(body=REPLY, headers=USED_UP), REPLY)
        connection = OpenAIChatModelConnection(
            base_url=server.base_url, api_key=API_KEY, **settings
        )
        limiter = RequestLimiter(limits_of(connection), clock=clock, sleep=clock.sleep)
        use_limiter(connection, limiter)
        model = setup_for(connection)
        assert (await model.achat([ChatMessage.user("hi")])).message.text == "ok"
        assert limiter.used_up == 1 and limiter.overloads == 0
        assert limiter.paused_until == 2.0 and limiter.limit == 1
        call = asyncio.ensure_future(model.achat([ChatMessage.user("again")]))
        await clock.advance(1.9)
        assert not call.done() and len(server.requests) == 1  # held back, nothing sent
        await clock.advance(0.1)
        assert (await call).message.text == "ok" and len(server.requests) == 2


async def test_an_answer_with_requests_left_changes_nothing() -> None:
    clock = FakeClock(start=0.0)
    with FakeProviderServer() as server:
        left = {**USED_UP, "x-ratelimit-remaining-requests": "1"}
        server.enqueue(ScriptedResponse(body=REPLY, headers=left))
        connection = OpenAIChatModelConnection(base_url=server.base_url, api_key=API_KEY)
        limiter = RequestLimiter(limits_of(connection), clock=clock, sleep=clock.sleep)
        use_limiter(connection, limiter)
        await setup_for(connection).achat([ChatMessage.user("hi")])
        assert limiter.used_up == 0 and limiter.limit is None and limiter.paused_until is None


async def test_tokens_per_minute_counts_the_usage_the_provider_reports() -> None:
    clock = FakeClock(start=0.0)
    with FakeProviderServer() as server:
        server.enqueue(REPLY)
        connection = OpenAIChatModelConnection(
            base_url=server.base_url, api_key=API_KEY, tokens_per_minute=600
        )
        limiter = RequestLimiter(limits_of(connection), clock=clock, sleep=clock.sleep)
        use_limiter(connection, limiter)
        await setup_for(connection).achat([ChatMessage.user("x" * 400)])
        # Estimated 100 + max_tokens 100 = 200; the provider counted 40 + 10 = 50.
        assert limiter.tokens_available == 600 - 50
        assert limiter.output_tokens_guess() == 10


def test_the_limits_travel_with_a_pickled_connection() -> None:
    connection = OpenAIChatModelConnection(
        api_key=API_KEY, max_concurrent_requests=4, requests_per_second=2.5
    )
    assert limiter_for(connection) is not None
    copy = pickle.loads(pickle.dumps(connection))
    assert (copy.max_concurrent_requests, copy.requests_per_second) == (4, 2.5)
    assert limiter_for(copy) is not limiter_for(connection)  # one per object
