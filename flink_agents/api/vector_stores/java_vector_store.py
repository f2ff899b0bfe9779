"""Upstream's Java vector store wrappers: refused here (no Java runtime,
`JavaResourceWrapper`); use the Chroma or pgvector store."""

from __future__ import annotations

from flink_agents.api._java_wrappers import JavaResourceWrapper
from flink_agents.api.vector_stores.vector_store import (
    BaseVectorStore,
    CollectionManageableVectorStore,
)

__all__ = ["JavaCollectionManageableVectorStore", "JavaVectorStore"]


class JavaVectorStore(JavaResourceWrapper, BaseVectorStore):  # pyright: ignore[reportUnsafeMultipleInheritance]
    """Upstream's wrapper of a Java vector store: refused here."""


class JavaCollectionManageableVectorStore(  # pyright: ignore[reportUnsafeMultipleInheritance]
    JavaVectorStore, CollectionManageableVectorStore
):
    """Upstream's wrapper of a Java vector store that manages collections: refused here."""
