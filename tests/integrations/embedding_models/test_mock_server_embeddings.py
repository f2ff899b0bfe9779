"""The example mock model server's ``/v1/embeddings``, through the OpenAI embedding
connection: deterministic unit vectors, ``dimensions``, base64, and OpenAI's 400 for
empty input."""

from __future__ import annotations

import math

import pytest

from examples.mock_model_server import EMBEDDING_DIMENSIONS, MockModelServer, embedding_of
from flink_agents.api.errors import ChatModelError
from flink_agents.integrations.embedding_models.openai_embedding_model import (
    OpenAIEmbeddingModelConnection,
    OpenAIEmbeddingModelSetup,
)


def test_the_mock_server_embeds_deterministically() -> None:
    with MockModelServer() as server:
        connection = OpenAIEmbeddingModelConnection(api_key="sk-mock", base_url=server.base_url)
        setup = OpenAIEmbeddingModelSetup(
            connection="mock", model="mock-embed", get_resource=lambda name, kind: connection
        )
        late, later, pizza = setup.embed(
            ["my parcel is late", "the parcel is very late", "pizza with olives"]
        )
        short = OpenAIEmbeddingModelSetup(
            connection="mock",
            model="mock-embed",
            dimensions=8,
            encoding_format="base64",
            get_resource=lambda name, kind: connection,
        ).embed("my parcel is late")
        with pytest.raises(ChatModelError) as refused:
            connection.embed("", model="mock-embed")  # past the setup's check: the server's
        [request] = [r for r in server.recorded() if r.body.get("dimensions") == 8]
    assert len(late) == EMBEDDING_DIMENSIONS
    assert late == pytest.approx(embedding_of("my parcel is late"), rel=1e-6)
    assert math.isclose(sum(v * v for v in late), 1.0, rel_tol=1e-6)

    def dot(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert dot(late, later) > dot(late, pizza)
    assert short == pytest.approx(embedding_of("my parcel is late", 8), rel=1e-6)
    assert request.body["encoding_format"] == "base64"
    assert (refused.value.status_code, refused.value.kind) == (400, "bad_request")
