"""`PgVectorStore` against a real PostgreSQL with pgvector (FLINK_AGENTS_TEST_POSTGRES_URL,
from tools/postgres/start.sh). Without a server, or without the extension on it, the tests
skip; under CI=true they fail instead."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from flink_agents.api.errors import (
    DocumentTooLargeError,
    VectorDimensionError,
    VectorStoreError,
    VectorStoreUnavailableError,
)
from flink_agents.api.vector_stores.vector_store import Document, VectorStoreQuery
from flink_agents.integrations.vector_stores.pgvector.pgvector_vector_store import (
    PgVectorStore,
)
from tests.integrations.vector_stores.words_embedding import WordsEmbeddingSetup
from tests.runtime.durable.conftest import postgres_url_from

DOCS = [
    Document(id="d1", content="refund refund policy", metadata={"topic": "billing", "v": 1}),
    Document(id="d2", content="shipping delay notice", metadata={"topic": "shipping", "v": 1}),
    Document(id="d3", content="reset your password", metadata={"topic": "account", "v": 2}),
    Document(id="d4", content="invoice and refund", metadata={"topic": "billing", "v": 2}),
]


def _not_in_ci(reason: str) -> None:
    if os.environ.get("CI", "").strip().lower() == "true":
        pytest.fail(f"{reason}, but CI=true: CI must run the pgvector tests", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def pgvector_url() -> str:
    """A server URL whose database has (or can create) the vector extension."""
    url = postgres_url_from(os.environ)
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if row.fetchone() is None:
            _not_in_ci(
                "the PostgreSQL server has no pgvector extension (tools/postgres/start.sh "
                "uses one that has it: Debian's postgresql-<version>-pgvector, or the "
                "pgvector-server extra)"
            )
    return url


def pgvector_store(url: str, **kwargs: object) -> PgVectorStore:
    """A store over tables of its own (dropped by `drop_tables`)."""
    kwargs.setdefault("table", f"vs_test_{uuid.uuid4().hex[:12]}")
    store = PgVectorStore(url=url, collection="docs_test", **kwargs)  # type: ignore[arg-type]
    store.embedding_model = WordsEmbeddingSetup()
    return store


def drop_tables(url: str, table: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for name in (table, f"{table}_collections"):
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture
def store(pgvector_url: str) -> Iterator[PgVectorStore]:
    made = pgvector_store(pgvector_url)
    yield made
    made.close()
    drop_tables(pgvector_url, made.table)


def _fresh(docs: list[Document]) -> list[Document]:
    return [d.model_copy(deep=True) for d in docs]


def test_add_query_get_update_delete(store: PgVectorStore) -> None:
    assert store.add(_fresh(DOCS)) == ["d1", "d2", "d3", "d4"]
    found = store.query(VectorStoreQuery(query_text="refund", limit=2)).documents
    assert {d.id for d in found} == {"d1", "d4"}
    assert found[0].score is not None and found[0].score <= (found[1].score or 0)
    assert {d.id: d.metadata for d in found}["d1"] == {"topic": "billing", "v": 1}

    assert [d.id for d in store.get(filters={"topic": "billing", "v": 2})] == ["d4"]
    assert [d.content for d in store.get(ids="d2")] == ["shipping delay notice"]
    filtered = store.query(
        VectorStoreQuery(query_text="refund", limit=5, filters={"topic": "billing", "v": 1})
    )
    assert [d.id for d in filtered.documents] == ["d1"]
    assert len(store.get(limit=3)) == 3

    store.update(Document(id="d2", content="password help", metadata={"topic": "account"}))
    assert store.get(ids="d2")[0].metadata == {"topic": "account"}

    store.delete(filters={"topic": "account"})
    assert [d.id for d in store.get()] == ["d1", "d4"]
    store.delete(ids=["d1"])
    assert [d.id for d in store.get()] == ["d4"]
    store.delete()
    assert store.get() == []


def test_every_subtask_shares_one_store(store: PgVectorStore, pgvector_url: str) -> None:
    """Two store objects (two subtasks, two processes) over one database see one store."""
    other = pgvector_store(pgvector_url, table=store.table)
    try:
        store.add(_fresh(DOCS[:2]))
        other.add(_fresh(DOCS[2:]))
        assert [d.id for d in store.get()] == ["d1", "d2", "d3", "d4"]
        assert {
            d.id for d in other.query(VectorStoreQuery(query_text="refund", limit=2)).documents
        } == {"d1", "d4"}
    finally:
        other.close()


def test_collections_are_separate_and_manageable(store: PgVectorStore) -> None:
    store.create_collection_if_not_exists("other_docs", dimension=6)
    store.add(_fresh(DOCS[:1]), collection_name="other_docs")
    store.add(_fresh(DOCS[1:2]))
    assert [d.id for d in store.get(collection_name="other_docs")] == ["d1"]
    assert [d.id for d in store.get()] == ["d2"]
    store.delete_collection("other_docs")
    assert store.get(collection_name="other_docs") == []


def test_a_vector_of_another_dimension_is_a_typed_error(store: PgVectorStore) -> None:
    store.add(_fresh(DOCS))
    store.embedding_model = WordsEmbeddingSetup(dimension=3)
    with pytest.raises(VectorDimensionError, match="dimension 6"):
        store.query(VectorStoreQuery(query_text="refund"))
    with pytest.raises(VectorDimensionError, match="dimension 6"):
        store.add(Document(content="refund"))
    assert len(store.get()) == 4


def test_a_declared_dimension_is_held_from_the_first_document(store: PgVectorStore) -> None:
    store.create_collection_if_not_exists("sized", dimension=4)
    with pytest.raises(VectorDimensionError, match="dimension 4"):
        store.add(Document(content="refund"), collection_name="sized")


def test_a_document_over_the_size_limit_is_refused_naming_the_limit(pgvector_url: str) -> None:
    store = pgvector_store(pgvector_url, max_document_bytes=16)
    try:
        with pytest.raises(DocumentTooLargeError, match="limit of 16 bytes"):
            store.add(Document(content="x" * 17))
    finally:
        store.close()
        drop_tables(pgvector_url, store.table)


def test_a_duplicate_id_is_an_error_and_adds_nothing(store: PgVectorStore) -> None:
    store.add(_fresh(DOCS[:1]))
    with pytest.raises(VectorStoreError, match="duplicate key"):
        store.add(_fresh(DOCS[:2]))
    assert [d.id for d in store.get()] == ["d1"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_that_cannot_be_reached_is_a_typed_error_without_the_url() -> None:
    secret = "s3cr3t-pw"
    store = PgVectorStore(url=f"postgresql://u:{secret}@127.0.0.1:{_closed_port()}/db")
    store.embedding_model = WordsEmbeddingSetup()
    with pytest.raises(VectorStoreUnavailableError) as raised:
        store.query(VectorStoreQuery(query_text="refund"))
    assert isinstance(raised.value, VectorStoreError)
    assert secret not in str(raised.value) and secret not in repr(store)


def test_several_vectors_are_searched_in_one_transaction_each_answered_apart(
    store: PgVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add(_fresh(DOCS))
    refund = store.embed_query("refund refund policy")
    password = store.embed_query("reset your password")
    transactions: list[int] = []
    transaction = store._transaction

    def counted(work: Any) -> Any:
        transactions.append(1)
        return transaction(work)

    monkeypatch.setattr(store, "_transaction", counted)
    queries = [VectorStoreQuery(query_text=text, limit=1) for text in ("refund", "password")]
    found = store.query_embeddings([refund, password], queries)
    assert [[d.id for d in docs] for docs in found] == [["d1"], ["d3"]]
    assert len(transactions) == 1
    with pytest.raises(VectorDimensionError):
        store.query_embeddings([refund, [1.0, 2.0]], queries)
