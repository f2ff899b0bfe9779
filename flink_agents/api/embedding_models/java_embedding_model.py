"""Upstream's Java embedding model wrappers: refused here (no Java runtime,
`JavaResourceWrapper`); use the Python connection and setup of the same provider."""

from __future__ import annotations

from flink_agents.api._java_wrappers import JavaResourceWrapper
from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
)

__all__ = ["JavaEmbeddingModelConnection", "JavaEmbeddingModelSetup"]


class JavaEmbeddingModelConnection(JavaResourceWrapper, BaseEmbeddingModelConnection):  # pyright: ignore[reportUnsafeMultipleInheritance]
    """Upstream's connection to a Java embedding model: refused here."""


class JavaEmbeddingModelSetup(JavaResourceWrapper, BaseEmbeddingModelSetup):  # pyright: ignore[reportUnsafeMultipleInheritance]
    """Upstream's setup of a Java embedding model: refused here."""
