"""`ChromaVectorStore` through the real chromadb client, embedded (in memory and on disk)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("chromadb", reason="the chroma extra is not installed")

from chromadb.errors import NotFoundError

from flink_agents.api.errors import (
    DocumentTooLargeError,
    VectorDimensionError,
)
from flink_agents.api.vector_stores.vector_store import (
    Document,
    VectorStoreQuery,
)
from flink_agents.integrations.vector_stores.chroma.chroma_vector_store import (
    ChromaVectorStore,
)
from tests.integrations.vector_stores.words_embedding import WordsEmbeddingSetup

DOCS = [
    Document(id="d1", content="refund refund policy", metadata={"topic": "billing", "v": 1}),
    Document(id="d2", content="shipping delay notice", metadata={"topic": "shipping", "v": 1}),
    Document(id="d3", content="reset your password", metadata={"topic": "account", "v": 2}),
    Document(id="d4", content="invoice and refund", metadata={"topic": "billing", "v": 2}),
]


def _store(tmp_path: Path, **kwargs: object) -> ChromaVectorStore:
    store = ChromaVectorStore(
        persist_directory=str(tmp_path / "chroma"), collection="docs_test", **kwargs
    )
    store.embedding_model = WordsEmbeddingSetup()
    return store


def _fresh(docs: list[Document]) -> list[Document]:
    return [d.model_copy(deep=True) for d in docs]


def test_add_query_get_update_delete(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.add(_fresh(DOCS)) == ["d1", "d2", "d3", "d4"]
    found = store.query(VectorStoreQuery(query_text="refund", limit=2)).documents
    assert {d.id for d in found} == {"d1", "d4"}
    assert found[0].score is not None and found[0].score <= (found[1].score or 0)
    assert {d.id: d.metadata for d in found}["d1"] == {"topic": "billing", "v": 1}

    by_filter = store.get(filters={"topic": "billing", "v": 2})
    assert [d.id for d in by_filter] == ["d4"]
    assert [d.content for d in store.get(ids=["d2"])] == ["shipping delay notice"]
    filtered = store.query(
        VectorStoreQuery(query_text="refund", limit=5, filters={"topic": "billing", "v": 1})
    )
    assert [d.id for d in filtered.documents] == ["d1"]

    store.update(Document(id="d2", content="password help", metadata={"topic": "account"}))
    assert store.get(ids="d2")[0].metadata["topic"] == "account"  # Chroma merges metadata
    top = store.query(VectorStoreQuery(query_text="password", limit=1)).documents
    assert top[0].id in {"d2", "d3"}

    store.delete(filters={"topic": "account"})
    assert sorted(d.id or "" for d in store.get()) == ["d1", "d4"]
    store.delete(ids=["d1"])
    assert [d.id for d in store.get()] == ["d4"]
    store.delete()  # everything
    assert store.get() == []


def test_ids_are_made_for_documents_without_one(tmp_path: Path) -> None:
    store = _store(tmp_path)
    [made] = store.add(Document(content="refund"))
    assert made and store.get(ids=made)[0].content == "refund"


def test_collections_are_separate_and_manageable(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.create_collection_if_not_exists("other_docs", metadata={"owner": "ops"})
    store.add(_fresh(DOCS[:1]), collection_name="other_docs")
    store.add(_fresh(DOCS[1:2]))
    assert [d.id for d in store.get(collection_name="other_docs")] == ["d1"]
    assert [d.id for d in store.get()] == ["d2"]
    store.delete_collection("other_docs")
    with pytest.raises(NotFoundError, match="other_docs"):
        store.get(collection_name="other_docs")


def test_a_persistent_store_outlives_its_client(tmp_path: Path) -> None:
    _store(tmp_path).add(_fresh(DOCS))
    again = _store(tmp_path)  # a new client on the same directory
    assert len(again.get()) == 4
    assert again.client.get_settings().anonymized_telemetry is False


def test_the_store_joins_a_chroma_client_the_user_made_on_its_directory(
    tmp_path: Path,
) -> None:
    # Upstream's RAG example fills the knowledge base with its own
    # chromadb.PersistentClient(path) (Chroma's default settings) in the process that
    # then runs the agent: the store opens the same directory there.
    import chromadb

    users = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    users.get_or_create_collection("docs_test").upsert(
        ids=["u1"], documents=["refund refund policy"], embeddings=[[1.0, 0.0, 0.0, 0.0]]
    )
    store = _store(tmp_path)
    assert [d.content for d in store.get(ids=["u1"])] == ["refund refund policy"]
    # Settings of its own that differ are still refused, as Chroma refuses them.
    from chromadb.config import Settings

    other = _store(tmp_path, client_settings=Settings(anonymized_telemetry=False))
    with pytest.raises(ValueError, match="different settings"):
        other.get(ids=["u1"])


def test_without_auto_create_a_missing_collection_is_an_error(tmp_path: Path) -> None:
    store = _store(tmp_path, auto_create_collection=False)
    with pytest.raises(NotFoundError, match="docs_test"):
        store.query(VectorStoreQuery(query_text="refund"))


def test_a_vector_of_another_dimension_is_a_typed_error(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.add(_fresh(DOCS))
    store.embedding_model = WordsEmbeddingSetup(dimension=3)
    with pytest.raises(VectorDimensionError, match="dimension"):
        store.query(VectorStoreQuery(query_text="refund"))
    with pytest.raises(VectorDimensionError):
        store.add(Document(content="refund"))


def test_a_document_over_the_size_limit_is_refused_naming_the_limit(tmp_path: Path) -> None:
    store = _store(tmp_path, max_document_bytes=16)
    store.add(Document(id="first", content="refund"))
    with pytest.raises(DocumentTooLargeError, match="limit of 16 bytes"):
        store.add([Document(id="ok", content="short"), Document(id="big", content="x" * 17)])
    assert [d.id for d in store.get()] == ["first"]  # nothing of the batch was added
    with pytest.raises(DocumentTooLargeError, match="max_document_bytes"):
        store.update(Document(id="first", content="y" * 17))


def test_operator_filters_are_refused_and_native_where_passes(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.add(_fresh(DOCS))
    with pytest.raises(NotImplementedError, match="where="):
        store.get(filters={"v": {"$gt": 1}})
    assert sorted(d.id or "" for d in store.get(where={"v": {"$gt": 1}})) == ["d3", "d4"]


def test_several_vectors_are_searched_in_one_query_each_answered_apart(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.add(_fresh(DOCS))
    refund = store.embed_query("refund refund policy")
    password = store.embed_query("reset your password")
    queries = [VectorStoreQuery(query_text=text, limit=1) for text in ("refund", "password")]
    found = store.query_embeddings([refund, password], queries)
    assert [[d.id for d in docs] for docs in found] == [["d1"], ["d3"]]


def test_queries_look_the_collection_up_once_and_again_when_it_was_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    store.add(_fresh(DOCS))
    lookups: list[str] = []
    client = store.client
    get_or_create = client.get_or_create_collection

    def counted(name: str, **kwargs: object) -> object:
        lookups.append(name)
        return get_or_create(name=name, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(client, "get_or_create_collection", counted)
    query = VectorStoreQuery(query_text="refund refund policy", limit=1)
    for _ in range(3):
        assert [d.id for d in store.query(query).documents] == ["d1"]
    assert lookups == ["docs_test"]
    # Another client drops the collection and fills a new one of the same name: the held
    # collection is stale, so the next query looks it up again and finds the new documents.
    other = _store(tmp_path)
    other.delete_collection("docs_test")
    vector = store.embed_query("refund refund policy")
    other.add([Document(id="new", content="refund desk", embedding=vector)])
    assert [d.id for d in store.query(query).documents] == ["new"]
    assert lookups == ["docs_test", "docs_test"]


def test_a_store_without_an_embedding_model_says_so_in_upstreams_words(tmp_path: Path) -> None:
    store = ChromaVectorStore(persist_directory=str(tmp_path / "chroma"), collection="none")
    with pytest.raises(TypeError, match=r"^No embedding model configured for ChromaVectorStore"):
        store.add(documents=[Document(id="x", content="no vector")])
