"""The local embedding model (WordLlama): loads from its package with no network, embeds
deterministically, similar texts closer than unrelated ones, and its options."""

from __future__ import annotations

import math
import pickle
import socket
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.errors import EmbeddingInputError
from flink_agents.api.resource import ResourceDescriptor, ResourceName
from flink_agents.integrations.embedding_models.local import wordllama_embedding_model as local
from flink_agents.integrations.embedding_models.local.wordllama_embedding_model import (
    WordLlamaEmbeddingModelConnection,
    WordLlamaEmbeddingModelSetup,
)


def setup(**options: Any) -> WordLlamaEmbeddingModelSetup:
    connection = WordLlamaEmbeddingModelConnection()
    return WordLlamaEmbeddingModelSetup(
        connection="local", get_resource=lambda name, kind: connection, **options
    )


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_it_loads_from_its_package_with_no_network(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the local model opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(local, "_models", {})  # a fresh load in this process
    vector = setup().embed("my order never came")
    assert len(vector) == 256
    assert list(tmp_path.iterdir()) == []  # nothing cached or downloaded under ~


def test_similar_texts_are_closer_and_vectors_are_deterministic() -> None:
    model = setup()
    order, parcel, pizza = model.embed(
        ["my order never came", "the package did not arrive", "I like pizza with olives"]
    )
    assert cosine(order, parcel) > cosine(order, pizza) + 0.2
    assert model.embed("my order never came") == order
    assert math.isclose(math.sqrt(sum(x * x for x in order)), 1.0, rel_tol=1e-5)


def test_dimensions_and_normalize() -> None:
    full = setup(normalize=False).embed("late delivery")
    short = setup(dimensions=64, normalize=False).embed("late delivery")
    assert len(short) == 64
    assert short == pytest.approx(full[:64], rel=1e-5)
    assert setup(dimensions=128).expected_dimensions == 128
    with pytest.raises(ValueError, match="64, 128 or 256"):
        setup(dimensions=100)  # pyright: ignore[reportArgumentType]


def test_only_the_carried_model_and_no_empty_text() -> None:
    with pytest.raises(ValueError, match="has only the model 'l2_supercat'"):
        setup(model="l3_supercat")
    with pytest.raises(ValueError, match="no parameter"):
        WordLlamaEmbeddingModelConnection().embed("x", temperature=1)
    with pytest.raises(EmbeddingInputError, match="empty text"):
        setup().embed(["fine", ""])


def test_the_connection_travels_without_its_model() -> None:
    local._model(64)  # loaded in this process
    connection = pickle.loads(pickle.dumps(WordLlamaEmbeddingModelConnection()))
    assert len(pickle.dumps(connection)) < 2_000  # the model stays in the process cache
    assert len(connection.embed("x", dimensions=64)) == 64  # pyright: ignore[reportArgumentType]


def test_the_resource_names_resolve() -> None:
    connection = ResourceDescriptor(clazz=ResourceName.EmbeddingModel.WORDLLAMA_CONNECTION)
    assert connection.clazz is WordLlamaEmbeddingModelConnection
    model = ResourceDescriptor(clazz=ResourceName.EmbeddingModel.WORDLLAMA_SETUP, connection="c")
    assert model.clazz is WordLlamaEmbeddingModelSetup
