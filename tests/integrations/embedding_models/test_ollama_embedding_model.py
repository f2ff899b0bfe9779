"""`OllamaEmbeddingModelConnection` through the real ``ollama`` SDK against a local fake
server: the exact JSON of ``/api/embed``, the answer read back, batches, failures."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.api.embedding_models.embedding_model import EmbeddingTokenUsage
from flink_agents.api.errors import EmbeddingModelError
from flink_agents.api.resource import ResourceDescriptor, ResourceName
from flink_agents.integrations.embedding_models.local.ollama_embedding_model import (
    OllamaEmbeddingModelConnection,
    OllamaEmbeddingModelSetup,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.chat_models.provider_helpers import refused_url
from tests.integrations.embedding_models.embedding_helpers import bound, embed_once

MODEL = "nomic-embed-text"


def answer(*vectors: list[float], tokens: int = 5) -> dict[str, Any]:
    return {"model": MODEL, "embeddings": list(vectors), "prompt_eval_count": tokens}


def model(base_url: str, **options: Any) -> Any:
    connection = OllamaEmbeddingModelConnection(base_url=base_url, request_timeout=5)
    return bound(OllamaEmbeddingModelSetup, connection, model=MODEL, **options)


async def test_exact_body_and_result(server: FakeProviderServer) -> None:
    server.enqueue(answer([0.5, 1.5], [2.0, -1.0]))
    setup = model(server.base_url, additional_kwargs={"num_ctx": 512, "dimensions": 2})
    result = await embed_once(setup, ["one", "two"])
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/api/embed")
    assert request.body == {
        "model": MODEL,
        "input": ["one", "two"],
        "truncate": True,
        "keep_alive": "5m",
        "dimensions": 2,
        "options": {"num_ctx": 512},
    }
    assert result.embeddings == [[0.5, 1.5], [2.0, -1.0]]
    assert result.token_usage == EmbeddingTokenUsage(prompt_tokens=5, total_tokens=5)


async def test_one_text_and_batches(server: FakeProviderServer) -> None:
    server.enqueue(answer([1.0, 2.0], tokens=2))
    assert (await embed_once(model(server.base_url), "hi")).embeddings == [1.0, 2.0]
    assert server.bodies[0]["input"] == "hi"
    server.requests.clear()
    server.enqueue(answer([1.0], [2.0]), answer([3.0]))
    result = await embed_once(model(server.base_url, batch_size=2), ["a", "b", "c"])
    assert [body["input"] for body in server.bodies] == [["a", "b"], ["c"]]
    assert result.embeddings == [[1.0], [2.0], [3.0]]


async def test_a_missing_model_and_a_server_that_is_down_fail_naming_the_model(
    server: FakeProviderServer,
) -> None:
    server.enqueue(ScriptedResponse(status=404, body={"error": f"model '{MODEL}' not found"}))
    with pytest.raises(EmbeddingModelError) as missing:
        await embed_once(model(server.base_url), "hi")
    assert (missing.value.status_code, missing.value.kind, missing.value.retryable) == (
        404,
        "bad_request",
        False,
    )
    assert f"connection 'conn', model '{MODEL}'" in str(missing.value)
    with pytest.raises(EmbeddingModelError) as down:
        await embed_once(model(refused_url()), "hi")
    assert (down.value.kind, down.value.retryable) == ("connection", True)


def test_upstreams_names_resolve() -> None:
    assert (
        ResourceDescriptor(clazz=ResourceName.EmbeddingModel.OLLAMA_CONNECTION).clazz
        is OllamaEmbeddingModelConnection
    )
    assert (
        ResourceDescriptor(clazz=ResourceName.EmbeddingModel.OLLAMA_SETUP).clazz
        is OllamaEmbeddingModelSetup
    )
    assert OllamaEmbeddingModelConnection(request_timeout=12).request_timeout == 12
