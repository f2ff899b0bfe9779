"""`Mem0VectorStore`: any vector store mem0 has a backend for, as a collection-managing
flink-agents vector store (upstream's module; the ``mem0`` extra).

mem0's store objects hold one collection each; this store builds one per collection it
is asked for (``provider_config`` plus the collection's name) through mem0's own factory,
after `import_mem0` has switched mem0's telemetry off. A record's text is its payload's
``data`` key, as mem0 keeps it; the rest of the payload is the document's metadata.
Filters go to mem0's store as they are (equality on each key).
"""

from __future__ import annotations

import importlib
import uuid
from typing import Any, ClassVar

from pydantic import Field, PrivateAttr
from typing_extensions import override

from flink_agents.api.memory._mem0 import import_mem0
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.integrations.vector_stores._backend_store import BackendVectorStore, Selection

__all__ = ["Mem0VectorStore"]


def _document(output: Any) -> Document:
    """A mem0 record (``id``, ``score``, ``payload``) as a `Document`."""
    payload = getattr(output, "payload", None)
    payload = dict(payload) if isinstance(payload, dict) else {}
    content = payload.pop("data", "")
    return Document(
        id=getattr(output, "id", None),
        content=content if isinstance(content, str) else str(content),
        metadata=payload,
        score=getattr(output, "score", None),
    )


def _records(listed: Any) -> list[Any]:
    """mem0's ``list()`` answer as one list (some stores nest it in another)."""
    if listed and isinstance(listed, list) and isinstance(listed[0], list):
        return list(listed[0])
    return list(listed or [])


class Mem0VectorStore(BackendVectorStore):
    """A vector store on one of mem0's backends (``provider``: ``chroma``, ``qdrant``,
    ``pgvector``...; ``provider_config``: its settings, as mem0 takes them)."""

    provider: str
    """mem0's name of the backend."""
    provider_config: dict[str, Any] = Field(default_factory=dict)
    """The backend's settings, as mem0's factory takes them (without the collection)."""
    collection: str | None = "flink_agents_mem0_vs"
    """The collection used when a call names none."""

    default_collection: ClassVar[str] = "flink_agents_mem0_vs"

    _stores: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    @override
    def store_kwargs(self) -> dict[str, Any]:
        return {}

    def _store(self, name: str) -> Any:
        """mem0's store of the collection, built on first use."""
        store = self._stores.get(name)
        if store is None:
            import_mem0()
            factory = importlib.import_module("mem0.utils.factory").VectorStoreFactory
            store = factory.create(self.provider, {**self.provider_config, "collection_name": name})
            self._stores[name] = store
        return store

    @override
    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        self._store(self.collection_name(name))

    @override
    def delete_collection(self, name: str) -> None:
        store = self._stores.pop(name, None)
        if store is None:
            raise ValueError(f"Collection {name!r} does not exist")
        store.delete_col()

    def _existing(self, name: str) -> Any:
        store = self._stores.get(name)
        if store is None:
            raise ValueError(f"Collection {name!r} does not exist")
        return store

    @override
    def _insert(self, name: str, documents: list[Document], options: dict[str, Any]) -> list[str]:
        ids = [doc.id or str(uuid.uuid4()) for doc in documents]
        self._store(name).insert(
            vectors=[doc.embedding for doc in documents],
            payloads=[{**doc.metadata, "data": doc.content} for doc in documents],
            ids=ids,
        )
        return ids

    @override
    def _search(
        self, selection: Selection, embeddings: list[Any], limit: int
    ) -> list[list[Document]]:
        """One mem0 search per vector (mem0's stores take one)."""
        store = self._existing(selection.collection)
        return [
            [
                _document(record)
                for record in store.search(
                    query="", vectors=[embedding], limit=limit, filters=selection.filters
                )
            ]
            for embedding in embeddings
        ]

    @override
    def _replace(self, name: str, documents: list[Document], options: dict[str, Any]) -> None:
        store = self._existing(name)
        for doc in documents:
            store.update(
                vector_id=doc.id,
                vector=doc.embedding,
                payload={**doc.metadata, "data": doc.content},
            )

    @override
    def _fetch(self, selection: Selection, limit: int | None) -> list[Document]:
        store = self._existing(selection.collection)
        if selection.ids is not None:
            found = (store.get(vector_id=i) for i in selection.ids)
            return [_document(r) for r in found if r is not None and getattr(r, "id", None)]
        listed = store.list(filters=selection.filters, limit=limit)
        return [_document(r) for r in _records(listed)]

    @override
    def _remove(self, selection: Selection) -> None:
        store = self._existing(selection.collection)
        ids = selection.ids
        if ids is None:  # mem0 has no delete by filter: list, then delete one by one
            filters = selection.filters
            listed = store.list(filters=filters) if filters is not None else store.list()
            ids = [r.id for r in _records(listed) if getattr(r, "id", None)]
        for record_id in ids:
            store.delete(vector_id=record_id)
