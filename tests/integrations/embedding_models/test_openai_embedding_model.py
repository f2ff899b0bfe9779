"""`OpenAIEmbeddingModelConnection` through the real ``openai`` SDK against a local fake
server: the exact JSON sent, the answer read back (floats, base64, out of order), batches,
and failures as `EmbeddingModelError`s naming the model, with the key masked."""

from __future__ import annotations

import base64
import pickle
import struct
from types import SimpleNamespace
from typing import Any
from unittest.mock import MagicMock

import httpx
import openai
import pytest

from flink_agents.api.embedding_models.embedding_model import EmbeddingTokenUsage
from flink_agents.api.errors import ChatModelError, EmbeddingModelError
from flink_agents.api.resource import ResourceDescriptor, ResourceName
from flink_agents.integrations.embedding_models.openai_embedding_model import (
    OpenAIEmbeddingModelConnection,
    OpenAIEmbeddingModelSetup,
)
from flink_agents.runtime.request_gate import limits_of, use_limiter
from flink_agents.runtime.request_limiter import RequestLimiter
from tests.api.fake_clock import FakeClock
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.chat_models.provider_helpers import held_server, refused_url
from tests.integrations.embedding_models.embedding_helpers import bound, embed_once

API_KEY = "sk-embed-0123456789abcdef"
MODEL = "text-embedding-3-small"
RESOURCE = f"connection 'conn', model '{MODEL}'"


def answer(*vectors: Any, order: list[int] | None = None, **extra: Any) -> dict[str, Any]:
    indexes = order or list(range(len(vectors)))
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in indexes],
        "model": MODEL,
        "usage": {"prompt_tokens": 4, "total_tokens": 4},
        **extra,
    }


def connect(base_url: str, **settings: Any) -> OpenAIEmbeddingModelConnection:
    options = {"api_key": API_KEY, "base_url": f"{base_url}/v1", "request_timeout": 5}
    return OpenAIEmbeddingModelConnection(**{**options, **settings})


def model(base_url: str, connection: dict[str, Any] | None = None, **options: Any) -> Any:
    return bound(
        OpenAIEmbeddingModelSetup, connect(base_url, **(connection or {})), model=MODEL, **options
    )


async def test_a_list_exact_body_and_result(server: FakeProviderServer) -> None:
    server.enqueue(answer([0.5, -1.0, 0.25], [1.0, 0.0, 2.0]))
    setup = model(server.base_url, dimensions=3, user="u-7", additional_kwargs={"extra": 1})
    result = await embed_once(setup, ["first text", "second text"])
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/embeddings")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == {
        "model": MODEL,
        "input": ["first text", "second text"],
        "encoding_format": "float",
        "dimensions": 3,
        "user": "u-7",
        "extra": 1,
    }
    assert result.embeddings == [[0.5, -1.0, 0.25], [1.0, 0.0, 2.0]]
    assert result.token_usage == EmbeddingTokenUsage(prompt_tokens=4, total_tokens=4)


async def test_one_text_is_sent_as_a_string_and_gives_one_vector(
    server: FakeProviderServer,
) -> None:
    server.enqueue(answer([0.1, 0.2], usage={"prompt_tokens": 2, "total_tokens": 3}))
    result = await embed_once(model(server.base_url), "hello")
    assert server.bodies == [{"model": MODEL, "input": "hello", "encoding_format": "float"}]
    assert result.embeddings == [0.1, 0.2]
    assert result.token_usage == EmbeddingTokenUsage(prompt_tokens=2, total_tokens=3)


async def test_base64_vectors_and_any_order_come_back_in_order(
    server: FakeProviderServer,
) -> None:
    packed = base64.b64encode(struct.pack("<3f", 0.5, -2.0, 8.0)).decode()
    server.enqueue(answer(packed, [1.0, 1.0, 1.0], order=[1, 0]))
    setup = model(server.base_url, encoding_format="base64")
    result = await embed_once(setup, ["a", "b"])
    assert server.bodies[0]["encoding_format"] == "base64"
    assert result.embeddings == [[0.5, -2.0, 8.0], [1.0, 1.0, 1.0]]


async def test_a_long_list_goes_in_requests_of_batch_size(server: FakeProviderServer) -> None:
    server.enqueue(answer([1.0], [2.0]), answer([3.0], [4.0]), answer([5.0]))
    result = await embed_once(model(server.base_url, batch_size=2), ["a", "b", "c", "d", "e"])
    assert [body["input"] for body in server.bodies] == [["a", "b"], ["c", "d"], ["e"]]
    assert result.embeddings == [[1.0], [2.0], [3.0], [4.0], [5.0]]
    assert result.token_usage == EmbeddingTokenUsage(prompt_tokens=12, total_tokens=12)
    assert OpenAIEmbeddingModelConnection.default_batch_size == 2048


async def test_vectors_of_the_wrong_dimension_fail_naming_the_model(
    server: FakeProviderServer,
) -> None:
    server.enqueue(answer([1.0, 2.0]))
    with pytest.raises(EmbeddingModelError) as caught:
        await embed_once(model(server.base_url, dimensions=3), "hello")
    assert caught.value.resource == RESOURCE
    assert "a vector of dimension 2, expected 3" in str(caught.value)


async def test_an_answer_without_data_is_a_malformed_response(
    server: FakeProviderServer,
) -> None:
    server.enqueue({"object": "list", "model": MODEL}, ScriptedResponse(body="not json"))
    for _ in range(2):  # read from the answer's JSON body: no data, then no JSON at all
        with pytest.raises(EmbeddingModelError) as caught:
            await embed_once(model(server.base_url), "hello")
        assert (caught.value.kind, caught.value.retryable) == ("malformed_response", False)


async def test_a_server_that_is_down_or_slow_fails_retryably_naming_the_model() -> None:
    with pytest.raises(EmbeddingModelError) as refused:
        await embed_once(model(refused_url()), "hello")
    assert (refused.value.kind, refused.value.retryable, refused.value.provider) == (
        "connection",
        True,
        "openai",
    )
    assert str(refused.value).startswith(f"embedding model ({RESOURCE}): could not connect")
    with held_server(answer([1.0])) as slow, pytest.raises(EmbeddingModelError) as late:
        await embed_once(model(slow.base_url, {"request_timeout": 0.2}), "hello")
    assert (late.value.kind, late.value.retryable) == ("timeout", True)


async def test_provider_errors_keep_status_and_retry_after_and_mask_the_key(
    server: FakeProviderServer,
) -> None:
    server.enqueue(
        ScriptedResponse(
            status=429,
            body={"error": {"message": f"slow down, {API_KEY}", "type": "rate_limit"}},
            headers={"retry-after": "3"},
        )
    )
    with pytest.raises(EmbeddingModelError) as caught:
        await embed_once(model(server.base_url), "hello")
    error = caught.value
    assert isinstance(error, ChatModelError)
    assert (error.status_code, error.kind, error.retryable, error.retry_after) == (
        429,
        "rate_limit",
        True,
        3.0,
    )
    assert API_KEY not in str(error) and API_KEY not in repr(error)
    assert RESOURCE in str(error)


def test_the_sync_api_and_upstreams_names(server: FakeProviderServer) -> None:
    server.enqueue(answer([0.25, 0.75]))
    connection = OpenAIEmbeddingModelConnection(
        api_key=API_KEY, base_url=f"{server.base_url}/v1", request_timeout=7.5
    )
    assert connection.request_timeout == 7.5
    assert connection.max_retries == 0
    setup = bound(OpenAIEmbeddingModelSetup, connection, model=MODEL)
    assert setup.embed("hello") == [0.25, 0.75]


def test_the_descriptor_resolves_and_the_connection_travels_without_its_client() -> None:
    descriptor = ResourceDescriptor(
        clazz=ResourceName.EmbeddingModel.OPENAI_CONNECTION, api_key=API_KEY
    )
    assert descriptor.clazz is OpenAIEmbeddingModelConnection
    connection = descriptor.build()
    copy = pickle.loads(pickle.dumps(connection))
    assert isinstance(copy, OpenAIEmbeddingModelConnection)
    assert API_KEY not in repr(copy) and "api_key" not in copy.model_dump()
    assert (
        ResourceDescriptor(clazz=ResourceName.EmbeddingModel.OPENAI_SETUP).clazz
        is OpenAIEmbeddingModelSetup
    )


def test_client_is_upstreams_sync_sdk_client_made_once_and_left_behind_by_pickle(
    server: FakeProviderServer,
) -> None:
    server.enqueue(answer([0.5, 0.25]))
    connection = connect(server.base_url)
    client = connection.client
    assert isinstance(client, openai.OpenAI) and connection.client is client
    assert str(client.base_url).rstrip("/") == f"{server.base_url}/v1"
    assert client.api_key == API_KEY and client.max_retries == 0
    copy = pickle.loads(pickle.dumps(connection))
    assert copy._OpenAIEmbeddingModelConnection__client is None  # pyright: ignore[reportAttributeAccessIssue]
    # The client the connection made is for callers: the calls still take the async path.
    setup = bound(OpenAIEmbeddingModelSetup, connection, model=MODEL)
    assert setup.embed("hello") == [0.5, 0.25]
    assert len(server.requests) == 1
    connection.close()
    assert connection.client is not client


def test_a_client_put_in_place_of_the_sdks_is_the_one_called(server: FakeProviderServer) -> None:
    # Upstream's tests (and users') hold a stand-in in the attribute upstream keeps the SDK
    # client in: the calls go through it, with the usual checks of the answer.
    stand_in = MagicMock()
    stand_in.embeddings.create.return_value = SimpleNamespace(
        data=[SimpleNamespace(embedding=[0.1, 0.2, 0.3])],
        usage=SimpleNamespace(prompt_tokens=5, total_tokens=5),
    )
    connection = connect(server.base_url)
    connection._OpenAIEmbeddingModelConnection__client = stand_in  # pyright: ignore[reportAttributeAccessIssue]
    setup = bound(OpenAIEmbeddingModelSetup, connection, model=MODEL, dimensions=3)
    result = setup.embed_with_usage("hello")
    assert result.embeddings == [0.1, 0.2, 0.3]
    assert result.token_usage == EmbeddingTokenUsage(prompt_tokens=5, total_tokens=5)
    stand_in.embeddings.create.assert_called_once_with(
        model=MODEL, input="hello", encoding_format="float", dimensions=3, extra_body=None
    )
    assert server.requests == []
    stand_in.embeddings.create.side_effect = openai.APIConnectionError(
        request=httpx.Request("POST", "http://x")
    )
    with pytest.raises(EmbeddingModelError) as failed:
        setup.embed("hello")
    assert failed.value.retryable and failed.value.kind == "connection"


async def test_an_answer_saying_a_limit_is_used_up_pauses_the_connection(
    server: FakeProviderServer,
) -> None:
    used_up = {
        "x-ratelimit-limit-requests": "10",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "20s",
    }
    server.enqueue(ScriptedResponse(body=answer([0.5, 1.0]), headers=used_up))
    connection = connect(server.base_url)
    clock = FakeClock(start=0.0)
    limiter = RequestLimiter(limits_of(connection), clock=clock, sleep=clock.sleep)
    use_limiter(connection, limiter)
    setup = bound(OpenAIEmbeddingModelSetup, connection, model=MODEL)
    assert (await embed_once(setup, ["hi"])).embeddings == [[0.5, 1.0]]
    assert limiter.used_up == 1 and limiter.paused_until == 2.0  # one of 10 back in 20 s
