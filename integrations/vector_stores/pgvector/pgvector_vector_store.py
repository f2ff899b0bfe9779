"""`PgVectorStore`: documents in PostgreSQL with the pgvector extension.

One database serves every subtask of a job (and every job pointed at it), which an embedded
store cannot. The store keeps two tables in ``schema`` (made on first use, with
``CREATE EXTENSION IF NOT EXISTS vector``; the extension must be installed on the server):

- ``<table>``: ``collection``, ``id``, ``content``, ``metadata`` (jsonb), ``embedding``
  (vector), keyed by (collection, id);
- ``<table>_collections``: each collection's name, its vectors' dimension (fixed by its
  first document, or by ``create_collection_if_not_exists(name, dimension=...)``) and its
  metadata.

A query is an exact nearest-neighbour search by ``distance`` (``cosine``, ``l2`` or
``inner_product``: pgvector's ``<=>``, ``<->``, ``<#>``); ``score`` is that distance
(smaller is nearer). Filters are equalities on ``metadata`` (``metadata @> {...}``).
A vector of another dimension than its collection's raises `VectorDimensionError`; a
server that cannot be reached raises `VectorStoreUnavailableError` (its message never
holds the URL), and a database without the extension `VectorStoreError`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from typing import Any, ClassVar, Literal

import psycopg
from psycopg import sql
from pydantic import Field, PrivateAttr

from flink_agents.api.errors import (
    VectorDimensionError,
    VectorStoreError,
    VectorStoreUnavailableError,
)
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.integrations.vector_stores._backend_store import BackendVectorStore, Selection

__all__ = ["DEFAULT_COLLECTION", "PgVectorStore"]

DEFAULT_COLLECTION = "flink_agents_collection"
"""The collection a store uses when none is named."""

_OPERATORS = {"cosine": "<=>", "l2": "<->", "inner_product": "<#>"}


class PgVectorStore(BackendVectorStore):
    """Documents in PostgreSQL with pgvector, shared by every subtask (module doc)."""

    url: str = Field(repr=False)
    """The database's connection URL or conninfo (``postgresql://user:pw@host:port/db``);
    never logged nor put in an error."""
    schema_name: str = Field(default="public")
    """The schema of the store's tables."""
    table: str = Field(default="flink_agents_documents")
    """The documents' table (the collections' is ``<table>_collections``)."""
    collection: str = Field(default=DEFAULT_COLLECTION)  # pyright: ignore[reportIncompatibleVariableOverride]
    """The collection used when a call names none."""
    distance: Literal["cosine", "l2", "inner_product"] = Field(default="cosine")
    """How nearness is measured."""
    connect_timeout_s: int = Field(default=10, gt=0)
    """Seconds to wait for a connection."""

    default_collection: ClassVar[str] = DEFAULT_COLLECTION

    _conn: psycopg.Connection[Any] | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _ready: bool = PrivateAttr(default=False)

    @property
    def store_kwargs(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    # ------------------------------------------------------------------ collections

    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        """Takes ``dimension`` (int: the collection's vectors') and ``metadata`` (dict)."""
        dimension = kwargs.get("dimension")
        self._run(
            "INSERT INTO {collections} (name, dimension, metadata) VALUES (%s, %s, %s) "
            "ON CONFLICT (name) DO NOTHING",
            (name, dimension, json.dumps(kwargs.get("metadata") or {})),
        )

    def delete_collection(self, name: str) -> None:
        self._run("DELETE FROM {table} WHERE collection = %s", (name,))
        self._run("DELETE FROM {collections} WHERE name = %s", (name,))

    # ------------------------------------------------------------------ documents

    def _fetch(self, selection: Selection, limit: int | None) -> list[Document]:
        where, params = _where(selection)
        query = f"SELECT id, content, metadata FROM {{table}} WHERE {where} ORDER BY id"
        if selection.ids is None and limit is not None:
            query += " LIMIT %s"
            params.append(limit)
        if selection.options.get("offset"):
            query += " OFFSET %s"
            params.append(int(selection.options["offset"]))
        rows = self._run(query, params, fetch=True)
        return [Document(id=row[0], content=row[1], metadata=row[2] or {}) for row in rows]

    def _remove(self, selection: Selection) -> None:
        where, params = _where(selection)
        self._run(f"DELETE FROM {{table}} WHERE {where}", params)

    def _insert(self, name: str, documents: list[Document], options: dict[str, Any]) -> list[str]:
        rows = [(doc.id or str(uuid.uuid4()), doc) for doc in documents]
        self._write(name, rows, insert=True)
        return [doc_id for doc_id, _ in rows]

    def _replace(self, name: str, documents: list[Document], options: dict[str, Any]) -> None:
        self._write(name, [(doc.id or "", doc) for doc in documents], insert=False)

    def _search(
        self, selection: Selection, embeddings: list[Any], limit: int
    ) -> list[list[Document]]:
        """Every vector's search in one transaction, after one check of the dimension."""
        name = selection.collection
        where, params = _where(selection)
        operator = _OPERATORS[selection.options.get("distance", self.distance)]
        dimension_query = self._sql("SELECT dimension FROM {collections} WHERE name = %s")
        query = self._sql(
            f"SELECT id, content, metadata, embedding {operator} %s::vector AS score "
            f"FROM {{table}} WHERE {where} ORDER BY score LIMIT %s"
        )

        def search(cur: psycopg.Cursor[Any]) -> list[list[Document]]:
            cur.execute(dimension_query, (name,))
            row = cur.fetchone()
            expected = row[0] if row else None
            for embedding in embeddings:
                if expected is not None and expected != len(embedding):
                    raise VectorDimensionError(
                        f"pgvector collection {name!r} holds vectors of dimension {expected}; "
                        f"the query's has {len(embedding)}"
                    )
            found: list[list[Document]] = []
            for embedding in embeddings:
                cur.execute(query, [_vector_text(embedding), *params, limit])
                found.append(
                    [
                        Document(id=r[0], content=r[1], metadata=r[2] or {}, score=float(r[3]))
                        for r in cur.fetchall()
                    ]
                )
            return found

        return self._transaction(search)

    # ------------------------------------------------------------------ helpers

    def _write(self, name: str, rows: list[tuple[str, Document]], *, insert: bool) -> None:
        if not rows:
            return
        dimensions = {len(doc.embedding or ()) for _, doc in rows}
        if len(dimensions) != 1:
            raise VectorDimensionError(
                f"pgvector collection {name!r}: the documents' vectors have different "
                f"dimensions {sorted(dimensions)}"
            )
        [dimension] = dimensions

        def write(cur: psycopg.Cursor[Any]) -> None:
            cur.execute(
                self._sql(
                    "INSERT INTO {collections} (name, dimension, metadata) "
                    "VALUES (%s, %s, '{{}}') ON CONFLICT (name) DO UPDATE SET dimension = "
                    "COALESCE({collections}.dimension, EXCLUDED.dimension) RETURNING dimension"
                ),
                (name, dimension),
            )
            held = cur.fetchone()
            if held is not None and held[0] != dimension:
                raise VectorDimensionError(
                    f"pgvector collection {name!r} holds vectors of dimension {held[0]}; "
                    f"these have {dimension}"
                )
            values = [
                (name, doc_id, doc.content, json.dumps(doc.metadata), _vector_text(doc.embedding))
                for doc_id, doc in rows
            ]
            if insert:
                statement = (
                    "INSERT INTO {table} (collection, id, content, metadata, embedding) "
                    "VALUES (%s, %s, %s, %s::jsonb, %s::vector)"
                )
            else:
                statement = (
                    "UPDATE {table} SET content = %s, metadata = %s::jsonb, "
                    "embedding = %s::vector WHERE collection = %s AND id = %s"
                )
                values = [(c, m, e, n, i) for n, i, c, m, e in values]
            cur.executemany(self._sql(statement), values)

        self._transaction(write)

    def _sql(self, text: str) -> sql.Composed:
        # The statements are this module's literals; only identifiers are filled in.
        return sql.SQL(text).format(  # pyright: ignore[reportArgumentType]
            table=sql.Identifier(self.schema_name, self.table),
            collections=sql.Identifier(self.schema_name, f"{self.table}_collections"),
        )

    def _run(self, text: str, params: Any, fetch: bool = False) -> list[tuple[Any, ...]]:
        def run(cur: psycopg.Cursor[Any]) -> list[tuple[Any, ...]]:
            cur.execute(self._sql(text), params)
            return cur.fetchall() if fetch else []

        return self._transaction(run)

    def _transaction(self, work: Any) -> Any:
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction(), conn.cursor() as cur:
                    return work(cur)
            except psycopg.OperationalError as exc:
                self._drop_connection()
                raise VectorStoreUnavailableError(
                    f"PostgreSQL (pgvector store) cannot be reached: {_first_line(exc)}"
                ) from None
            except psycopg.errors.DataException as exc:
                if "dimension" in str(exc):
                    raise VectorDimensionError(f"pgvector: {_first_line(exc)}") from exc
                raise VectorStoreError(f"pgvector: {_first_line(exc)}") from exc
            except psycopg.Error as exc:  # a duplicate id, a refused statement...
                raise VectorStoreError(f"pgvector: {_first_line(exc)}") from exc

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to give back
                conn.close()

    def _connection(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is not None and not conn.closed:
            return conn
        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=self.connect_timeout_s)
        self._conn = conn
        if not self._ready:
            self._create_tables(conn)
            self._ready = True
        return conn

    def _create_tables(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction(), conn.cursor() as cur:
            # Subtasks starting together: one creates, the others wait for it.
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"pgvector:{self.table}",))
            cur.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            if cur.fetchone() is None:
                raise VectorStoreError(
                    "the pgvector extension is not installed on this PostgreSQL server "
                    "(Debian: apt-get install postgresql-<version>-pgvector; see docs/rag.md)"
                )
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
            cur.execute(
                self._sql(
                    "CREATE TABLE IF NOT EXISTS {collections} (name text PRIMARY KEY, "
                    "dimension integer, metadata jsonb NOT NULL DEFAULT '{{}}')"
                )
            )
            cur.execute(
                self._sql(
                    "CREATE TABLE IF NOT EXISTS {table} (collection text NOT NULL, "
                    "id text NOT NULL, content text NOT NULL, metadata jsonb NOT NULL, "
                    "embedding vector NOT NULL, PRIMARY KEY (collection, id))"
                )
            )


def _where(selection: Selection) -> tuple[str, list[Any]]:
    where = ["collection = %s"]
    params: list[Any] = [selection.collection]
    if selection.ids is not None:
        where.append("id = ANY(%s)")
        params.append(selection.ids)
    filters = selection.filters
    if filters:
        for key, value in filters.items():
            if key.startswith("$") or isinstance(value, dict):
                raise NotImplementedError(
                    "filters= takes the equality shorthand only ({'field': value})"
                )
        where.append("metadata @> %s::jsonb")
        params.append(json.dumps(filters))
    return " AND ".join(where), params


def _vector_text(embedding: Any) -> str:
    return "[" + ",".join(repr(float(x)) for x in embedding) + "]"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
