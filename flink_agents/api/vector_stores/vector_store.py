"""Vector stores: documents kept with their embeddings, searched by meaning.

A `BaseVectorStore` is a resource (``@vector_store``) that holds `Document` objects and
finds the ones nearest a text: `query` embeds the query text with the store's embedding
model setup (``embedding_model``, the name of an ``@embedding_model_setup``) and asks the
backend for the nearest vectors. ``add`` and ``update`` embed the documents that carry no
``embedding``. A backend implements the pre-computed-vector hooks (`_add_embedding`,
`_update_embedding`, `_query_embedding`) and ``get`` / ``delete``, and may search several
vectors in one call (`_query_embeddings`, behind `query_embeddings`: the context retrieval
action sends the lookups asked together through it); one that can create and drop
collections is a `CollectionManageableVectorStore`.

Filters (``filters=`` of ``get``, ``delete`` and `VectorStoreQuery`) are upstream's unified
dialect, the part every backend can honour: ``{"field": value, ...}``, each key an equality
on the document's metadata, the keys AND-ed; ``None`` is no filter. A backend's own richer
filter language goes through its keyword arguments (Chroma's ``where=``).

Backends here: ``ResourceName.VectorStore.CHROMA_VECTOR_STORE`` (embedded, no server) and
``ResourceName.VectorStore.PGVECTOR_VECTOR_STORE`` (PostgreSQL with pgvector, shared by every
subtask of a cluster). A `ContextRetrievalRequestEvent` queries one from an agent, through
durable calls (docs/rag.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, TypeVar, cast

from pydantic import BaseModel, Field, PrivateAttr

from flink_agents.api.embedding_models.embedding_model import BaseEmbeddingModelSetup
from flink_agents.api.errors import DocumentTooLargeError
from flink_agents.api.resource import Resource, ResourceType

__all__ = [
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "BaseVectorStore",
    "CollectionManageableVectorStore",
    "Document",
    "VectorStoreQuery",
    "VectorStoreQueryMode",
    "VectorStoreQueryResult",
]

DEFAULT_MAX_DOCUMENT_BYTES = 1_048_576
"""A store's default ``max_document_bytes``: 1 MiB of UTF-8 content per document."""


class VectorStoreQueryMode(str, Enum):
    """How a query searches (upstream has semantic search only)."""

    SEMANTIC = "semantic"
    """By embedding: the documents whose vectors are nearest the query text's."""


class VectorStoreQuery(BaseModel):
    """A search of a vector store by text."""

    mode: VectorStoreQueryMode = Field(default=VectorStoreQueryMode.SEMANTIC)
    """How to search."""
    query_text: str
    """The text to find documents near (embedded by the store's embedding model)."""
    limit: int = Field(default=10)
    """At most this many documents come back, nearest first."""
    collection_name: str | None = Field(default=None)
    """The collection to search (None: the store's own)."""
    filters: dict[str, Any] | None = Field(default=None)
    """Metadata equalities the documents must meet (the unified dialect, module doc)."""
    extra_args: dict[str, Any] = Field(default_factory=dict)
    """Backend-specific arguments (a native filter, a distance...)."""

    def __str__(self) -> str:
        return f"{self.mode.value} query: '{self.query_text}' (limit={self.limit})"


class Document(BaseModel):
    """A piece of text in a vector store, with its metadata."""

    content: str
    """The text."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """What is known about it (source, author, date...); filters match on it."""
    id: str | None = Field(default=None)
    """Its id in the store (made by ``add`` when None)."""
    embedding: list[float] | None = Field(default=None)
    """Its vector (computed by ``add`` / ``update`` when None)."""
    score: float | None = Field(default=None)
    """How near the query it is, on query results only; each backend says what it
    means (Chroma and pgvector: a distance, smaller is nearer)."""

    def __str__(self) -> str:
        text = self.content
        return f"Document: {text[:50] + '...' if len(text) > 50 else text}"


class VectorStoreQueryResult(BaseModel):
    """What a query found."""

    documents: list[Document]
    """The documents, nearest first."""

    def __str__(self) -> str:
        return f"QueryResult: {len(self.documents)} documents"


class BaseVectorStore(Resource, ABC):
    """A vector store: documents with embeddings, searched by meaning (module doc)."""

    name: str | None = Field(default=None)
    """The store's resource name (upstream's keyword; for messages only)."""
    embedding_model: str | BaseEmbeddingModelSetup | None = Field(default=None)
    """The embedding model setup (its resource name) that embeds query texts and the
    documents added without a vector; None when callers always give vectors."""
    collection: str | None = Field(default=None)
    """The collection used when a call names none (None: the backend's own default)."""
    max_document_bytes: int = Field(default=DEFAULT_MAX_DOCUMENT_BYTES, gt=0)
    """Documents whose content is longer than this (in UTF-8 bytes) are refused by
    ``add`` and ``update`` with `DocumentTooLargeError`."""

    @classmethod
    def resource_type(cls) -> ResourceType:
        """A vector store."""
        return ResourceType.VECTOR_STORE

    @property
    @abstractmethod
    def store_kwargs(self) -> dict[str, Any]:
        """The store's settings, passed to every backend call (a call's own keyword
        arguments win)."""

    _embedding_model_name: str | None = PrivateAttr(default=None)

    @property
    def embedding_model_name(self) -> str | None:
        """The resource name ``embedding_model`` was given as (None: none, or an object)."""
        model = self.embedding_model
        return model if isinstance(model, str) else self._embedding_model_name

    def open(self) -> None:
        """Look up the embedding model setup by name."""
        context = self.resource_context
        if isinstance(self.embedding_model, str) and context is not None:
            self._embedding_model_name = self.embedding_model
            self.embedding_model = cast(
                "BaseEmbeddingModelSetup",
                context.get_resource(self.embedding_model, ResourceType.EMBEDDING_MODEL),
            )

    def _get_embedding_model(self) -> BaseEmbeddingModelSetup:
        model = self.embedding_model
        if isinstance(model, BaseEmbeddingModelSetup):
            return model
        if model is None:
            raise TypeError(
                f"No embedding model configured for {type(self).__name__}: give "
                "embedding_model= (the name of an embedding model setup), or documents and "
                "queries with vectors"
            )
        raise TypeError(
            f"{type(self).__name__}'s embedding model {model!r} has not been looked up: use "
            "the store an agent gives you (ctx.get_resource(name, ResourceType.VECTOR_STORE))"
        )

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query text, from the store's embedding model."""
        return _one_vector(self._get_embedding_model().embed(text))

    async def aembed_query(self, text: str) -> list[float]:
        """`embed_query` without blocking: the embedding model's ``aembed``."""
        return _one_vector(await self._get_embedding_model().aembed(text))

    async def aembed_queries(self, texts: list[str]) -> list[list[float]]:
        """The vectors of several query texts, in order, from the embedding model's
        ``aembed`` of the list (one request, or the model's ``batch_size`` at a time)."""
        if len(texts) == 1:
            return [await self.aembed_query(texts[0])]
        vectors = await self._get_embedding_model().aembed(list(texts))
        return [_one_vector(vector) for vector in vectors]

    def add(
        self,
        documents: Document | list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Store ``documents`` (embedding those without a vector); their ids, in order
        (made for those without one)."""
        docs = _as_list(documents)
        self._check_sizes(docs)
        self._ensure_embeddings(docs)
        return self._add_embedding(
            documents=docs, collection_name=collection_name, **{**self.store_kwargs, **kwargs}
        )

    def query(self, query: VectorStoreQuery) -> VectorStoreQueryResult:
        """The documents nearest ``query.query_text``, nearest first."""
        embedding = self.embed_query(query.query_text)
        return VectorStoreQueryResult(documents=self.query_embedding(embedding, query))

    def query_embedding(self, embedding: list[float], query: VectorStoreQuery) -> list[Document]:
        """The documents nearest ``embedding``, searched as ``query`` says (its text is
        not embedded again: the vector is the query)."""
        return self._query_embedding(
            embedding=self._normalize_embeddings(embedding),
            limit=query.limit,
            collection_name=query.collection_name,
            filters=query.filters,
            **{**self.store_kwargs, **query.extra_args},
        )

    def query_embeddings(
        self, embeddings: list[list[float]], queries: list[VectorStoreQuery]
    ) -> list[list[Document]]:
        """`query_embedding` for each vector with its query (the queries may differ in
        their text only: one limit, collection, filters and arguments): the documents
        nearest each, in order. A backend that searches many vectors in one call
        (`_query_embeddings`) does so."""
        if len(embeddings) != len(queries) or not queries:
            raise ValueError("query_embeddings takes one query per vector (at least one)")
        first = queries[0]
        settings = ("limit", "collection_name", "filters", "extra_args")
        for query in queries[1:]:
            if any(getattr(query, name) != getattr(first, name) for name in settings):
                raise ValueError(
                    "query_embeddings searches alike: the queries may differ in their text only"
                )
        return self._query_embeddings(
            embeddings=[self._normalize_embeddings(embedding) for embedding in embeddings],
            limit=first.limit,
            collection_name=first.collection_name,
            filters=first.filters,
            **{**self.store_kwargs, **first.extra_args},
        )

    def update(
        self,
        documents: Document | list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Replace stored documents by id (each must have one) with these contents,
        metadata and vectors (embedding those without a vector)."""
        docs = _as_list(documents)
        if not docs:
            raise ValueError("`documents` must be non-empty.")
        if any(doc.id is None for doc in docs):
            raise ValueError("Every document passed to `update` must have `id` set.")
        self._check_sizes(docs)
        self._ensure_embeddings(docs)
        self._update_embedding(
            documents=docs, collection_name=collection_name, **{**self.store_kwargs, **kwargs}
        )

    def _check_sizes(self, documents: list[Document]) -> None:
        limit = self.max_document_bytes
        for doc in documents:
            size = len(doc.content.encode("utf-8"))
            if size > limit:
                name = f" {doc.id!r}" if doc.id is not None else ""
                raise DocumentTooLargeError(
                    f"document{name} has {size} bytes of content, over the limit of {limit} "
                    f"bytes (max_document_bytes of {type(self).__name__}): split it into "
                    "smaller documents"
                )

    def _ensure_embeddings(self, documents: list[Document]) -> None:
        for doc in documents:
            if doc.embedding is None:
                doc.embedding = _one_vector(self._get_embedding_model().embed(doc.content))

    @abstractmethod
    def get(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = 100,
        **kwargs: Any,
    ) -> list[Document]:
        """The documents with these ids, or (no ids) up to ``limit`` of those matching
        ``filters`` (``limit=None``: all of them)."""

    @abstractmethod
    def delete(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Delete the documents with these ids, or those matching ``filters``; neither
        given: every document of the collection."""

    @staticmethod
    def _normalize_embeddings(embeddings: list[float]) -> Any:
        """A query vector as the backend wants it (as it is, by default)."""
        return embeddings

    @abstractmethod
    def _query_embedding(
        self,
        embedding: list[float],
        limit: int = 10,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The documents nearest a vector, nearest first."""

    def _query_embeddings(
        self,
        embeddings: list[Any],
        limit: int = 10,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[list[Document]]:
        """The documents nearest each vector (`_query_embedding` one after another; a
        backend that takes several vectors in one query overrides it)."""
        return [
            self._query_embedding(
                embedding, limit=limit, collection_name=collection_name, filters=filters, **kwargs
            )
            for embedding in embeddings
        ]

    @abstractmethod
    def _add_embedding(
        self,
        *,
        documents: list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Store documents that all have vectors; their ids."""

    @abstractmethod
    def _update_embedding(
        self,
        *,
        documents: list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Replace documents (by ``Document.id``) that all have vectors."""


class CollectionManageableVectorStore(BaseVectorStore, ABC):
    """A vector store that can create and delete its collections."""

    @abstractmethod
    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        """Create the collection ``name`` unless it exists (``kwargs``: the backend's
        creation options, each backend says which)."""

    @abstractmethod
    def delete_collection(self, name: str) -> None:
        """Delete the collection ``name`` and its documents."""


_T = TypeVar("_T")


def _one_vector(value: Any) -> list[float]:
    """The vector an embedding model gave for one text (a list of floats)."""
    return [float(x) for x in value]


def _as_list(value: _T | list[_T]) -> list[_T]:
    return value if isinstance(value, list) else [value]
