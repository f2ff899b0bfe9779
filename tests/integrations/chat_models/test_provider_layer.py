"""The shared provider layer, the same for all three adapters: the SDK client cache, an
injected ``http_client``, the option split, error mapping and the usage policy.

Requests go through the real SDKs to an ``httpx2.MockTransport`` (no socket): a
request that reaches the transport proves the injected client was used.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cloudpickle
import httpx2
import pytest
from anthropic.resources.messages import AsyncMessages
from openai.resources.chat.completions import AsyncCompletions
from pydantic import ValidationError

from flink_agents.api.chat_result import Usage
from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.integrations._sdk_clients import SdkClientCache, freeze
from flink_agents.integrations.chat_models._provider_connection import ProviderConnection
from flink_agents.integrations.chat_models._sdk_arguments import sdk_arguments
from flink_agents.integrations.chat_models.anthropic import AnthropicChatModelConnection
from flink_agents.integrations.chat_models.openai import (
    OpenAIChatModelConnection,
    OpenAIResponsesChatModelConnection,
)

API_KEY = "sk-test-provider-layer-0123"


# ------------------------------------------------------------------ the three adapters


def with_usage(body: dict[str, Any], usage: Any) -> dict[str, Any]:
    """``body`` with this ``usage`` field (``...``: none)."""
    return body if usage is ... else {**body, "usage": usage}


def anthropic_reply(usage: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
    }
    return with_usage(body, usage)


def chat_reply(usage: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
    }
    return with_usage(body, usage)


def responses_reply(usage: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ],
    }
    return with_usage(body, usage)


@dataclass(frozen=True)
class Adapter:
    name: str
    connect: type[ProviderConnection[Any]]
    path: str
    """Where the SDK posts, under its default base URL."""
    reply: Callable[[Any], dict[str, Any]]
    """A one-text answer with this ``usage`` (``...``: no usage field)."""
    input_field: str
    output_field: str
    total_field: str | None
    """The usage field of the provider's total; None when it reports none."""


ADAPTERS = [
    Adapter(
        "anthropic",
        AnthropicChatModelConnection,
        "/v1/messages",
        anthropic_reply,
        "input_tokens",
        "output_tokens",
        None,
    ),
    Adapter(
        "openai-chat",
        OpenAIChatModelConnection,
        "/v1/chat/completions",
        chat_reply,
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
    ),
    Adapter(
        "openai-responses",
        OpenAIResponsesChatModelConnection,
        "/v1/responses",
        responses_reply,
        "input_tokens",
        "output_tokens",
        "total_tokens",
    ),
]
IDS = [adapter.name for adapter in ADAPTERS]
by_adapter = pytest.mark.parametrize("adapter", ADAPTERS, ids=IDS)


@dataclass
class Transport:
    """A mock transport that records requests and answers from a queue."""

    replies: list[httpx2.Response] = field(default_factory=list)
    requests: list[httpx2.Request] = field(default_factory=list)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.replies.pop(0)

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))

    def bodies(self) -> list[Any]:
        return [json.loads(request.content) for request in self.requests]


def reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json=body, headers=headers)


async def ask(connection: ProviderConnection[Any], **params: Any) -> Any:
    return await connection.achat([ChatMessage.user("hi")], model="m", **params)


# --------------------------------------------------------------- injected http_client


@by_adapter
async def test_an_injected_http_client_carries_the_request(adapter: Adapter) -> None:
    transport = Transport([reply(adapter.reply(...))])
    connection = adapter.connect(api_key=API_KEY, http_client=transport.client())

    result = await ask(connection)

    assert result.message.text == "ok"
    (request,) = transport.requests
    assert request.method == "POST"
    assert request.url.path == adapter.path
    assert API_KEY in (request.headers.get("x-api-key") or request.headers["authorization"])


@by_adapter
async def test_a_function_making_the_http_client_is_called_once_per_sdk_client(
    adapter: Adapter,
) -> None:
    transport = Transport([reply(adapter.reply(...)), reply(adapter.reply(...))])
    made: list[httpx2.AsyncClient] = []

    def make() -> httpx2.AsyncClient:
        made.append(transport.client())
        return made[-1]

    connection = adapter.connect(api_key=API_KEY, http_client=make)
    await ask(connection)
    await ask(connection)

    assert len(made) == 1 and len(transport.requests) == 2
    assert connection._sdk_client()._client is made[0]


TRAVELLING = Transport()
"""Module-level, so a pickled connection's client function (`travelling_client`) and
the test see the same transport."""


def travelling_client() -> httpx2.AsyncClient:
    return TRAVELLING.client()


@by_adapter
def test_a_connection_with_a_client_function_travels_and_makes_its_own_client(
    adapter: Adapter,
) -> None:
    TRAVELLING.requests.clear()
    TRAVELLING.replies[:] = [reply(adapter.reply(...)), reply(adapter.reply(...))]
    connection = adapter.connect(api_key=API_KEY, http_client=travelling_client)
    asyncio.run(ask(connection))

    restored = cloudpickle.loads(cloudpickle.dumps(connection))
    asyncio.run(ask(restored))  # on a new loop: a new SDK client, from the function

    assert restored.api_key == API_KEY and restored.http_client is travelling_client
    assert [r.url.path for r in TRAVELLING.requests] == [adapter.path, adapter.path]


@by_adapter
def test_a_connection_holding_an_http_client_instance_refuses_to_pickle(
    adapter: Adapter,
) -> None:
    connection = adapter.connect(api_key=API_KEY, http_client=Transport().client())
    with pytest.raises(TypeError, match="pass a function that makes the client"):
        pickle.dumps(connection)
    with pytest.raises(TypeError, match="pass a function that makes the client"):
        cloudpickle.dumps(connection)
    assert "http_client" not in connection.model_dump()


@by_adapter
def test_a_sync_http_client_is_refused_when_the_connection_is_built(adapter: Adapter) -> None:
    with pytest.raises(ValidationError, match="async HTTP client"):
        adapter.connect(api_key=API_KEY, http_client=httpx2.Client())


# ------------------------------------------------------------------------ client cache


def test_cache_makes_one_client_per_key_and_loop_and_forgets_closed_loops() -> None:
    cache = SdkClientCache()
    made: list[object] = []

    def make() -> object:
        made.append(object())
        return made[-1]

    async def on_one_loop() -> tuple[object, object, object]:
        return cache.get("a", make), cache.get("a", make), cache.get("b", make)

    first_a, again_a, first_b = asyncio.run(on_one_loop())
    assert first_a is again_a and first_a is not first_b
    assert len(cache) == 2

    (other_loop_a, _, _) = asyncio.run(on_one_loop())
    assert other_loop_a is not first_a  # a new loop, a new client
    assert len(cache) == 2  # the first loop closed: its clients were forgotten
    with pytest.raises(RuntimeError):
        cache.get("a", make)  # outside a running loop


class _LoopSeeingClient:
    """Records, when let go of, whether an event loop ran in the thread that let it go: an
    SDK's HTTP client schedules its own closing on that loop."""

    released = threading.Event()
    saw_loop: list[bool] = []

    def __del__(self) -> None:
        try:
            asyncio.get_running_loop()
            self.saw_loop.append(True)
        except RuntimeError:
            self.saw_loop.append(False)
        self.released.set()


def test_clients_of_a_closed_loop_are_let_go_of_where_no_loop_runs() -> None:
    cache = SdkClientCache()

    async def client() -> object:
        return id(cache.get("a", _LoopSeeingClient))  # the cache holds the only reference

    asyncio.run(client())
    assert not _LoopSeeingClient.released.is_set()
    asyncio.run(client())  # forgets the first loop's client, on a loop
    assert _LoopSeeingClient.released.wait(10.0)
    assert _LoopSeeingClient.saw_loop == [False]


def test_freeze_compares_settings_by_value_and_clients_by_identity() -> None:
    assert freeze({"b": 1, "a": [1, 2]}) == freeze({"a": [1, 2], "b": 1})
    one, two = object(), object()
    assert freeze(one) == freeze(one) and freeze(one) != freeze(two)
    assert hash(freeze({"x": one})) == hash(freeze({"x": one}))


@by_adapter
async def test_connections_with_the_same_settings_share_one_client(adapter: Adapter) -> None:
    first = adapter.connect(api_key=API_KEY, base_url="http://127.0.0.1:9/v1")
    second = adapter.connect(api_key=API_KEY, base_url="http://127.0.0.1:9/v1")
    assert first._sdk_client() is second._sdk_client()


SETTING_CHANGES: list[tuple[str, Any]] = [
    ("api_key", "sk-test-another-key-4567"),
    ("base_url", "http://127.0.0.1:10/v1"),
    ("timeout", 5.0),
    ("max_retries", 2),
    ("default_headers", {"x-team": "b"}),
]


@by_adapter
@pytest.mark.parametrize(("name", "value"), SETTING_CHANGES, ids=[n for n, _ in SETTING_CHANGES])
async def test_connections_whose_settings_differ_never_share_a_client(
    adapter: Adapter, name: str, value: Any
) -> None:
    settings: dict[str, Any] = {
        "api_key": API_KEY,
        "base_url": "http://127.0.0.1:9/v1",
        "default_headers": {"x-team": "a"},
    }
    first = adapter.connect(**settings)
    second = adapter.connect(**{**settings, name: value})
    assert first._sdk_client() is not second._sdk_client()


async def test_openai_connections_differing_in_organization_do_not_share() -> None:
    first = OpenAIChatModelConnection(api_key=API_KEY, organization="org-a")
    second = OpenAIChatModelConnection(api_key=API_KEY, organization="org-b")
    assert first._sdk_client() is not second._sdk_client()
    assert first._sdk_client().organization == "org-a"


@by_adapter
async def test_a_different_injected_http_client_is_a_different_client(adapter: Adapter) -> None:
    transport = Transport()
    first = adapter.connect(api_key=API_KEY, http_client=transport.client())
    second = adapter.connect(api_key=API_KEY, http_client=transport.client())
    assert first._sdk_client() is not second._sdk_client()


@by_adapter
async def test_a_changed_setting_or_environment_gets_a_new_client(
    adapter: Adapter, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_var = "ANTHROPIC_API_KEY" if adapter.name == "anthropic" else "OPENAI_API_KEY"
    monkeypatch.setenv(env_var, "sk-test-from-env-first-111")
    connection = adapter.connect(base_url="http://127.0.0.1:9/v1")
    from_env = connection._sdk_client()
    assert from_env.api_key == "sk-test-from-env-first-111"

    monkeypatch.setenv(env_var, "sk-test-from-env-second-222")
    assert connection._sdk_client().api_key == "sk-test-from-env-second-222"

    connection.timeout = 3.0
    assert connection._sdk_client().timeout == 3.0


async def test_both_openai_apis_share_the_openai_client_and_anthropic_has_its_own() -> None:
    settings: dict[str, Any] = {"api_key": API_KEY, "base_url": "http://127.0.0.1:9/v1"}
    chat = OpenAIChatModelConnection(**settings)
    responses = OpenAIResponsesChatModelConnection(**settings)
    anthropic = AnthropicChatModelConnection(**settings)
    assert chat._sdk_client() is responses._sdk_client()
    assert anthropic._sdk_client() is not chat._sdk_client()


# ------------------------------------------------------------------------ option split


def test_fields_the_sdk_names_are_arguments_the_rest_extra_body() -> None:
    request = {"model": "m", "max_tokens": 5, "messages": [], "top_k": 3, "timeout": 9}
    assert sdk_arguments(request, AsyncMessages.create) == {
        "model": "m",
        "max_tokens": 5,
        "messages": [],
        "extra_body": {"top_k": 3, "timeout": 9},
    }
    assert sdk_arguments({"model": "m", "messages": [], "seed": 1}, AsyncCompletions.create) == {
        "model": "m",
        "messages": [],
        "seed": 1,
    }


@by_adapter
async def test_fields_unknown_to_the_sdk_reach_the_body_unchanged(adapter: Adapter) -> None:
    transport = Transport([reply(adapter.reply(...))])
    connection = adapter.connect(api_key=API_KEY, http_client=transport.client())

    await ask(connection, top_k=3, chat_template_kwargs={"thinking": False}, timeout=9)

    (body,) = transport.bodies()
    assert {k: body[k] for k in ("top_k", "chat_template_kwargs", "timeout")} == {
        "top_k": 3,
        "chat_template_kwargs": {"thinking": False},
        "timeout": 9,
    }


# ------------------------------------------------------------------------ error mapping


@by_adapter
async def test_http_errors_map_the_same_way(adapter: Adapter) -> None:
    transport = Transport([reply({"error": {"message": "slow down"}}, 429, {"retry-after": "7"})])
    connection = adapter.connect(api_key=API_KEY, http_client=transport.client())
    with pytest.raises(ChatModelError) as caught:
        await ask(connection)
    error = caught.value
    assert (error.kind, error.status_code, error.retryable, error.retry_after) == (
        "rate_limit",
        429,
        True,
        7.0,
    )
    assert error.provider == adapter.name
    assert error.message == f"{adapter.name} returned HTTP 429: slow down"


@by_adapter
async def test_a_body_that_is_not_json_is_a_malformed_response(adapter: Adapter) -> None:
    transport = Transport(
        [httpx2.Response(200, content=b"<html>", headers={"content-type": "application/json"})]
    )
    connection = adapter.connect(api_key=API_KEY, http_client=transport.client())
    with pytest.raises(ChatModelError) as caught:
        await ask(connection)
    assert (caught.value.kind, caught.value.retryable) == ("malformed_response", False)
    assert caught.value.message == f"{adapter.name} sent a malformed response: the body is not JSON"


@by_adapter
async def test_a_json_body_that_is_not_an_object_is_a_malformed_response(adapter: Adapter) -> None:
    transport = Transport([reply(["not", "a", "response"])])
    connection = adapter.connect(api_key=API_KEY, http_client=transport.client())
    with pytest.raises(ChatModelError) as caught:
        await ask(connection)
    assert caught.value.kind == "malformed_response"
    assert caught.value.provider == adapter.name


# ------------------------------------------------------------------------- usage policy


def usage_cases(adapter: Adapter) -> list[Any]:
    """(usage as sent, expected `Usage`) under the one policy, in this adapter's names."""
    i, o = adapter.input_field, adapter.output_field
    cases: list[Any] = [
        pytest.param(..., Usage(), id="absent"),
        pytest.param(None, Usage(), id="null"),
        pytest.param("many", Usage(), id="not-an-object"),
        pytest.param(
            {i: 10, o: 5}, Usage(input_tokens=10, output_tokens=5, total_tokens=15), id="no-total"
        ),
        pytest.param({o: 5}, Usage(output_tokens=5), id="input-missing"),
        pytest.param({i: "10", o: 5}, Usage(output_tokens=5), id="input-a-string"),
        pytest.param({i: -1, o: 2.5, "x": 1}, Usage(), id="negative-and-float"),
        pytest.param({i: True, o: 5}, Usage(output_tokens=5), id="input-a-bool"),
        pytest.param(
            {i: 0, o: 0}, Usage(input_tokens=0, output_tokens=0, total_tokens=0), id="zero"
        ),
    ]
    if adapter.total_field is not None:
        cases.append(
            pytest.param(
                {i: 10, o: 5, adapter.total_field: 99},
                Usage(input_tokens=10, output_tokens=5, total_tokens=99),
                id="reported-total-kept",
            )
        )
        cases.append(
            pytest.param(
                {o: 5, adapter.total_field: 20},
                Usage(output_tokens=5, total_tokens=20),
                id="total-without-input",
            )
        )
    return cases


USAGE_CASES = [
    pytest.param(adapter, *case.values, id=f"{adapter.name}-{case.id}")
    for adapter in ADAPTERS
    for case in usage_cases(adapter)
]


@pytest.mark.parametrize(("adapter", "usage", "expected"), USAGE_CASES)
async def test_one_usage_policy_in_every_adapter(
    adapter: Adapter, usage: Any, expected: Usage
) -> None:
    transport = Transport([reply(adapter.reply(usage))])
    connection = adapter.connect(api_key=API_KEY, http_client=transport.client())

    result = await ask(connection)

    assert result.message.text == "ok"  # usage never fails an answer
    assert result.usage == expected
