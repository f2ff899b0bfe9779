"""`Mem0VectorStore` over mem0's own Chroma backend (embedded, on disk): every document
method of the API, through the backend hooks it implements."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the mem0 extra is not installed")
pytest.importorskip("chromadb", reason="the chroma extra is not installed")

from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.integrations.vector_stores.mem0.mem0_vector_store import Mem0VectorStore

COLLECTION = "mem0_docs"


def _store(tmp_path: Path) -> Mem0VectorStore:
    store = Mem0VectorStore(provider="chroma", provider_config={"path": str(tmp_path)})
    store.create_collection_if_not_exists(COLLECTION)
    store.add(
        [
            Document(id="a", content="refund", embedding=[1.0, 0.0], metadata={"topic": "bill"}),
            Document(id="b", content="shipping", embedding=[0.0, 1.0]),
        ],
        collection_name=COLLECTION,
    )
    return store


def _contents(documents: list[Document]) -> list[str]:
    return sorted(doc.content for doc in documents)


def test_get_by_id_by_filter_and_all(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert _contents(store.get(ids="b", collection_name=COLLECTION)) == ["shipping"]
    [found] = store.get(filters={"topic": "bill"}, collection_name=COLLECTION)
    assert (found.id, found.content, found.metadata) == ("a", "refund", {"topic": "bill"})
    assert _contents(store.get(collection_name=COLLECTION)) == ["refund", "shipping"]


def test_several_vectors_are_searched_each_in_order(tmp_path: Path) -> None:
    store = _store(tmp_path)
    found = store._query_embeddings([[0.0, 1.0], [1.0, 0.0]], limit=1, collection_name=COLLECTION)
    assert [[doc.id for doc in docs] for docs in found] == [["b"], ["a"]]


def test_update_then_delete_by_id_and_all(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.update(Document(id="b", content="delay", embedding=[0.0, 1.0]), COLLECTION)
    assert _contents(store.get(ids=["b"], collection_name=COLLECTION)) == ["delay"]
    store.delete(ids="b", collection_name=COLLECTION)
    assert _contents(store.get(collection_name=COLLECTION)) == ["refund"]
    store.delete(collection_name=COLLECTION)
    assert store.get(collection_name=COLLECTION) == []


def test_a_collection_never_made_is_refused(tmp_path: Path) -> None:
    store = Mem0VectorStore(provider="chroma", provider_config={"path": str(tmp_path)})
    with pytest.raises(ValueError, match="does not exist"):
        store.get(collection_name="missing_one")
