"""`ChromaVectorStore`: documents in Chroma (https://docs.trychroma.com/).

Where the data lives, by the first option given: ``api_key`` (Chroma Cloud), ``host``
(a Chroma server), ``persist_directory`` (embedded, on disk: no server, the default to use
on one machine), else embedded in memory (gone with the process). An embedded store
belongs to its process: on a cluster each subtask would have its own, so use a server or
`PgVectorStore` there. Chroma's anonymous telemetry is off unless ``client_settings`` say
otherwise.

A collection is made on first use (``auto_create_collection``); ``score`` of a query result
is Chroma's distance (smaller is nearer). A vector of another dimension than the
collection's raises `VectorDimensionError`; a collection that does not exist (and is not
made) raises chromadb's ``NotFoundError``, as upstream's does.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

import chromadb
from chromadb.api import ClientAPI
from chromadb.config import Settings
from chromadb.errors import ChromaError, NotFoundError
from pydantic import Field, PrivateAttr

from flink_agents.api.errors import VectorDimensionError
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.integrations.vector_stores._backend_store import BackendVectorStore, Selection

__all__ = ["DEFAULT_COLLECTION", "ChromaVectorStore"]

DEFAULT_COLLECTION = "flink_agents_chroma_collection"
"""The collection a store uses when none is named."""

_MAX_BATCH = 41665
"""Chroma takes at most this many records per ``add``."""

_CLIENT_LOCK = threading.Lock()
"""Chroma's embedded clients share one process-wide system whose start is not thread-safe."""


class ChromaVectorStore(BackendVectorStore):
    """Documents in Chroma: embedded (``persist_directory``, or in memory), a server
    (``host``/``port``) or Chroma Cloud (``api_key``)."""

    persist_directory: str | None = Field(default=None)
    """Directory of an embedded store on disk (None, with no host or key: in memory)."""
    host: str | None = Field(default=None)
    """Host of a Chroma server."""
    port: int | None = Field(default=8000)
    """Port of the Chroma server."""
    api_key: str | None = Field(default=None, repr=False)
    """Chroma Cloud API key."""
    client_settings: Settings | None = Field(default=None)
    """Chroma client settings (default: anonymous telemetry off)."""
    tenant: str = Field(default="default_tenant")
    """Chroma tenant."""
    database: str = Field(default="default_database")
    """Chroma database."""
    collection: str = Field(default=DEFAULT_COLLECTION)  # pyright: ignore[reportIncompatibleVariableOverride]
    """The collection used when a call names none."""
    collection_metadata: dict[str, Any] = Field(default_factory=dict)
    """Metadata given to a collection this store creates."""
    auto_create_collection: bool = Field(default=True)
    """Whether add and query create a missing collection."""

    default_collection: ClassVar[str] = DEFAULT_COLLECTION

    _client: ClientAPI | None = PrivateAttr(default=None)
    _query_collections: dict[tuple[str, bool, str], Any] = PrivateAttr(default_factory=dict)
    """Collections that queries found, by name, ``auto_create_collection`` and metadata
    (looking one up costs more than half a query; a stale one is looked up again)."""

    @property
    def client(self) -> ClientAPI:
        """The Chroma client, made on first use."""
        client = self._client
        if client is not None:
            return client
        with _CLIENT_LOCK:
            if self._client is None:
                self._client = self._new_client()
            return self._client

    def _new_client(self) -> ClientAPI:
        settings = self.client_settings or Settings(anonymized_telemetry=False)
        tenant, database = self.tenant, self.database
        if self.api_key is not None:
            return chromadb.CloudClient(api_key=self.api_key, tenant=tenant, database=database)
        if self.host is not None:
            return chromadb.HttpClient(
                host=self.host,
                port=self.port or 8000,
                settings=settings,
                tenant=tenant,
                database=database,
            )
        if self.persist_directory is not None:
            path = self.persist_directory

            def local(settings: Settings) -> ClientAPI:
                return chromadb.PersistentClient(
                    path=path, settings=settings, tenant=tenant, database=database
                )
        else:

            def local(settings: Settings) -> ClientAPI:
                return chromadb.EphemeralClient(settings=settings, tenant=tenant, database=database)

        try:
            return local(settings)
        except ValueError as exc:
            # Chroma runs one instance per directory in a process, and refuses a second
            # client with other settings. With no settings of its own, the store joins the
            # one already running there with Chroma's defaults (a client the user made as
            # `chromadb.PersistentClient(path)`, as upstream's RAG example fills its
            # knowledge base): telemetry is then that client's choice, not the store's.
            if self.client_settings is not None or "different settings" not in str(exc):
                raise
            return local(Settings())

    @property
    def store_kwargs(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "collection_metadata": self.collection_metadata,
            "auto_create_collection": self.auto_create_collection,
        }

    def close(self) -> None:
        self._client = None
        self._query_collections.clear()

    # ------------------------------------------------------------------ collections

    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        """Chroma takes ``metadata`` (a dict) for the new collection."""
        self.client.get_or_create_collection(name=name, metadata=kwargs.get("metadata"))

    def delete_collection(self, name: str) -> None:
        self._query_collections.clear()
        self.client.delete_collection(name=name)

    # ------------------------------------------------------------------ documents

    def _fetch(self, selection: Selection, limit: int | None) -> list[Document]:
        options = selection.options
        found = self._existing(selection.collection).get(
            ids=selection.ids,
            where=_where(selection.filters, options),
            limit=limit,
            offset=options.get("offset"),
            where_document=options.get("where_document"),
        )
        metadatas = found.get("metadatas") or [None] * len(found["ids"])
        contents = found.get("documents") or [""] * len(found["ids"])
        return [
            Document(id=doc_id, content=content or "", metadata=dict(metadata or {}))
            for doc_id, content, metadata in zip(found["ids"], contents, metadatas, strict=False)
        ]

    def _remove(self, selection: Selection) -> None:
        collection = self._existing(selection.collection)
        where = _where(selection.filters, selection.options)
        where_document = selection.options.get("where_document")
        ids = selection.ids
        if ids is None and where is None and where_document is None:
            ids = collection.get(include=[])["ids"]  # Chroma wants a selector: all of them
            if not ids:
                return
        collection.delete(ids=ids, where=where, where_document=where_document)

    def _insert(self, name: str, documents: list[Document], options: dict[str, Any]) -> list[str]:
        collection = self._for_writing(name, options)
        added: list[str] = []
        for batch in _batches(documents, _MAX_BATCH):
            ids = [doc.id or str(uuid.uuid4()) for doc in batch]
            with _dimension_errors(collection.name):
                collection.add(
                    ids=ids,
                    documents=[doc.content for doc in batch],
                    embeddings=[doc.embedding for doc in batch],  # type: ignore[arg-type]
                    metadatas=[doc.metadata or None for doc in batch],  # type: ignore[arg-type]
                )
            added.extend(ids)
        return added

    def _replace(self, name: str, documents: list[Document], options: dict[str, Any]) -> None:
        collection = self._existing(name)
        with _dimension_errors(collection.name):
            collection.update(
                ids=[doc.id for doc in documents],  # type: ignore[misc]
                documents=[doc.content for doc in documents],
                embeddings=[doc.embedding for doc in documents],  # type: ignore[arg-type]
                metadatas=[doc.metadata or None for doc in documents],  # type: ignore[arg-type]
            )

    def _search(
        self, selection: Selection, embeddings: list[Any], limit: int
    ) -> list[list[Document]]:
        """One Chroma query for all the vectors (it answers a list per vector)."""
        options = selection.options
        key = (
            selection.collection,
            bool(options.get("auto_create_collection", self.auto_create_collection)),
            repr(options.get("collection_metadata", self.collection_metadata)),
        )
        for attempt in (1, 2):
            collection = self._query_collections.get(key)
            if collection is None:
                collection = self._for_writing(selection.collection, options)
            try:
                with _dimension_errors(collection.name):
                    found = collection.query(
                        query_embeddings=embeddings,
                        n_results=limit,
                        where=_where(selection.filters, options),
                        include=["documents", "metadatas", "distances"],  # type: ignore[list-item]
                    )
            except NotFoundError:
                if self._query_collections.pop(key, None) is None or attempt == 2:
                    raise  # not a stale collection of ours: it is gone
                continue  # deleted (and maybe made again) since: look it up again
            self._query_collections[key] = collection
            return [_query_documents(found, i) for i in range(len(embeddings))]
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ helpers

    def _existing(self, name: str) -> Any:
        """The collection; chromadb's `NotFoundError` when it does not exist (as upstream:
        the context retrieval action reports it as a `VectorStoreError`)."""
        return self.client.get_collection(name=name)

    def _for_writing(self, name: str, options: dict[str, Any]) -> Any:
        """The collection of an add or a query: made when missing, if allowed."""
        if not options.get("auto_create_collection", self.auto_create_collection):
            return self._existing(name)
        metadata = options.get("collection_metadata", self.collection_metadata) or None
        return self.client.get_or_create_collection(name=name, metadata=metadata)


@contextlib.contextmanager
def _dimension_errors(collection: str) -> Iterator[None]:
    """Turns Chroma's wrong-dimension error into `VectorDimensionError`."""
    try:
        yield
    except ChromaError as exc:
        if "dimension" in str(exc):
            raise VectorDimensionError(f"Chroma collection {collection!r}: {exc}") from exc
        raise


def _batches(docs: list[Document], size: int) -> Iterator[list[Document]]:
    for start in range(0, len(docs), size):
        yield docs[start : start + size]


def _query_documents(found: Any, index: int) -> list[Document]:
    """The documents Chroma found for the ``index``-th query vector (it answers one list
    per vector)."""
    contents = _nth(found.get("documents"), index)
    if not contents:
        return []
    count = len(contents)
    ids = _nth(found.get("ids"), index) or [None] * count
    metadatas = _nth(found.get("metadatas"), index) or [None] * count
    distances = _nth(found.get("distances"), index) or [None] * count
    return [
        Document(id=doc_id, content=content, metadata=dict(metadata or {}), score=distance)
        for doc_id, content, metadata, distance in zip(
            ids, contents, metadatas, distances, strict=False
        )
    ]


def _nth(lists: Any, index: int) -> Any:
    """``lists[index]``, or None when Chroma left the field out."""
    return lists[index] if lists and len(lists) > index else None


def _where(filters: dict[str, Any] | None, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """Chroma's ``where``: the unified ``filters`` translated, else the caller's own
    ``where=``."""
    if filters is None:
        return kwargs.get("where")
    return _translate_filters_to_chroma_where(filters)


def _translate_filters_to_chroma_where(
    filters: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """The unified filters (equalities) as Chroma's ``where``: one equality as it is,
    several under ``$and``; an operator form raises `NotImplementedError`."""
    if not filters:
        return None
    for key, value in filters.items():
        if key.startswith("$") or isinstance(value, dict):
            raise NotImplementedError(
                "filters= takes the equality shorthand only ({'field': value}); for "
                "Chroma's own operators ($and, $or, $gt, $in...) pass where= instead"
            )
    if len(filters) == 1:
        return dict(filters)
    return {"$and": [{key: value} for key, value in filters.items()]}
