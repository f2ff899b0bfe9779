"""`TongyiEmbeddingModelConnection` through the real ``dashscope`` SDK's
``TextEmbedding.call`` (native protocol) against a local fake server: the exact JSON sent,
the answer read back, DashScope's batch limit, failures; upstream's key check and the call
made off the event loop."""

from __future__ import annotations

import threading
from http import HTTPStatus
from types import SimpleNamespace
from typing import Any

import pytest
import requests

from flink_agents.api.embedding_models.embedding_model import EmbeddingTokenUsage
from flink_agents.api.errors import EmbeddingModelError
from flink_agents.api.resource import ResourceDescriptor, ResourceName
from flink_agents.integrations.embedding_models.tongyi_embedding_model import (
    TongyiEmbeddingModelConnection,
    TongyiEmbeddingModelSetup,
    dashscope,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.embedding_models.embedding_helpers import bound, embed_once

API_KEY = "sk-dashscope-embed-0123456789"
PATH = "/api/v1/services/embeddings/text-embedding/text-embedding"


def answer(*vectors: list[float], order: list[int] | None = None) -> dict[str, Any]:
    indexes = order or list(range(len(vectors)))
    return {
        "request_id": "req-1",
        "output": {"embeddings": [{"text_index": i, "embedding": vectors[i]} for i in indexes]},
        "usage": {"total_tokens": 6},
    }


def model(base_url: str, **options: Any) -> Any:
    connection = TongyiEmbeddingModelConnection(
        api_key=API_KEY, base_url=f"{base_url}/api/v1", request_timeout=5
    )
    return bound(TongyiEmbeddingModelSetup, connection, **options)


async def test_exact_body_and_result(server: FakeProviderServer) -> None:
    server.enqueue(answer([0.5, 1.0], [2.0, 3.0], order=[1, 0]))
    setup = model(server.base_url, text_type="document", dimension=2)
    result = await embed_once(setup, ["one", "two"])
    [request] = server.requests
    assert (request.method, request.path) == ("POST", PATH)
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == {
        "model": "text-embedding-v4",
        "input": {"texts": ["one", "two"]},
        "parameters": {"text_type": "document", "dimension": 2},
    }
    assert result.embeddings == [[0.5, 1.0], [2.0, 3.0]]
    assert result.token_usage == EmbeddingTokenUsage(prompt_tokens=6, total_tokens=6)


async def test_one_text_and_dashscopes_batch_limit(server: FakeProviderServer) -> None:
    server.enqueue(answer([1.0, 2.0]))
    assert (await embed_once(model(server.base_url), "hi")).embeddings == [1.0, 2.0]
    assert server.bodies[0]["input"] == {"texts": ["hi"]}
    server.requests.clear()
    server.enqueue(answer(*[[float(i)] for i in range(10)]), answer([10.0], [11.0]))
    texts = [f"t{i}" for i in range(12)]
    result = await embed_once(model(server.base_url), texts)
    assert [len(body["input"]["texts"]) for body in server.bodies] == [10, 2]
    assert result.embeddings == [[float(i)] for i in range(12)]
    assert result.token_usage == EmbeddingTokenUsage(prompt_tokens=12, total_tokens=12)


async def test_a_refused_key_fails_naming_the_model_with_the_key_masked(
    server: FakeProviderServer,
) -> None:
    server.enqueue(
        ScriptedResponse(
            status=401,
            body={"code": "InvalidApiKey", "message": f"Invalid API-key {API_KEY}"},
        )
    )
    with pytest.raises(EmbeddingModelError) as caught:
        await embed_once(model(server.base_url), "hi")
    error = caught.value
    assert (error.status_code, error.kind, error.retryable) == (401, "authentication", False)
    assert "connection 'conn', model 'text-embedding-v4'" in str(error)
    assert API_KEY not in str(error)


def test_upstreams_names_resolve() -> None:
    assert (
        ResourceDescriptor(clazz=ResourceName.EmbeddingModel.TONGYI_CONNECTION).clazz
        is TongyiEmbeddingModelConnection
    )
    setup_class = ResourceDescriptor(clazz=ResourceName.EmbeddingModel.TONGYI_SETUP).clazz
    assert setup_class is TongyiEmbeddingModelSetup
    assert TongyiEmbeddingModelSetup(connection="c").model == "text-embedding-v4"


def test_a_connection_without_a_key_is_refused_when_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="DashScope API key is not provided"):
        TongyiEmbeddingModelConnection()
    monkeypatch.setenv("DASHSCOPE_API_KEY", API_KEY)
    connection = TongyiEmbeddingModelConnection()  # the environment's key will do
    assert connection.api_key is None  # read by the SDK when it calls, not held


def test_no_http_client_the_call_sends_with_requests() -> None:
    with pytest.raises(ValueError, match="takes no http_client"):
        TongyiEmbeddingModelConnection(api_key=API_KEY, http_client=lambda: None)


def _answer_on(calls: list[tuple[str, dict[str, Any]]], response: Any) -> Any:
    def call(**kwargs: Any) -> Any:
        calls.append((threading.current_thread().name, kwargs))
        return response

    return call


async def test_the_sdks_text_embedding_call_runs_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    response = SimpleNamespace(
        status_code=HTTPStatus.OK,
        output={"embeddings": [{"text_index": 0, "embedding": [0.5, 0.25]}]},
        usage={"total_tokens": 3},
    )
    monkeypatch.setattr(dashscope.TextEmbedding, "call", _answer_on(calls, response))
    setup = bound(
        TongyiEmbeddingModelSetup,
        TongyiEmbeddingModelConnection(api_key=API_KEY, request_timeout=7),
        text_type="query",
    )
    result = await embed_once(setup, "hi")
    assert result.embeddings == [0.5, 0.25]
    assert result.token_usage == EmbeddingTokenUsage(prompt_tokens=3, total_tokens=3)
    [(thread, kwargs)] = calls
    assert thread != threading.current_thread().name
    assert kwargs["input"] == "hi" and kwargs["text_type"] == "query"
    assert (kwargs["api_key"], kwargs["request_timeout"]) == (API_KEY, 7)


async def test_a_failed_answer_is_a_runtime_error_with_upstreams_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    refused = SimpleNamespace(
        status_code=HTTPStatus.TOO_MANY_REQUESTS,
        code="Throttling",
        message=f"slow down {API_KEY}",
        headers={"retry-after": "2"},
    )
    monkeypatch.setattr(dashscope.TextEmbedding, "call", _answer_on(calls, refused))
    connection = TongyiEmbeddingModelConnection(api_key=API_KEY)
    with pytest.raises(EmbeddingModelError) as caught:
        await connection.aembed_with_usage("hi")
    error = caught.value
    assert isinstance(error, RuntimeError)
    assert str(error).startswith("DashScope TextEmbedding call failed: ")
    assert (error.status_code, error.kind, error.retryable, error.retry_after) == (
        429,
        "rate_limit",
        True,
        2.0,
    )
    assert API_KEY not in str(error)
    with pytest.raises(EmbeddingModelError) as through_setup:
        await embed_once(bound(TongyiEmbeddingModelSetup, connection), "hi")
    assert "connection 'conn', model 'text-embedding-v4'" in str(through_setup.value)


async def test_an_unreachable_server_is_a_retryable_connection_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreachable(**kwargs: Any) -> Any:
        raise requests.ConnectionError("connection refused")

    monkeypatch.setattr(dashscope.TextEmbedding, "call", unreachable)
    with pytest.raises(EmbeddingModelError) as caught:
        await embed_once(
            bound(TongyiEmbeddingModelSetup, TongyiEmbeddingModelConnection(api_key=API_KEY)),
            "hi",
        )
    assert (caught.value.kind, caught.value.retryable) == ("connection", True)
