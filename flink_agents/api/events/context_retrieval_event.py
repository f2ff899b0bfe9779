"""Context retrieval: search a vector store from an agent, by event (upstream's API).

An action sends ``ContextRetrievalRequestEvent(query, vector_store, max_results)``; the
runtime's built-in context retrieval action embeds the query with the store's embedding
model, asks the store for the nearest documents (each a durable call: a restore does not
repeat it) and answers with ``ContextRetrievalResponseEvent(request_id, query, documents)``.
An empty query, or a ``max_results`` below 1, is refused when the request is made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar
from uuid import UUID

from pydantic import TypeAdapter

from flink_agents.api.events.event import Event, EventId, event_id, request_id_of
from flink_agents.api.vector_stores.vector_store import Document

__all__ = ["ContextRetrievalRequestEvent", "ContextRetrievalResponseEvent"]

_DOCUMENTS: TypeAdapter[list[Document]] = TypeAdapter(list[Document])


class ContextRetrievalRequestEvent(Event):
    """Find the documents of a vector store nearest a query text; the built-in context
    retrieval action answers with a `ContextRetrievalResponseEvent`."""

    EVENT_TYPE: ClassVar[str] = "_context_retrieval_request_event"
    ATTRIBUTE_TYPES: ClassVar[Mapping[str, Any]] = {
        "query": str,
        "vector_store": str,
        "max_results": int,
    }

    def __init__(
        self,
        query: str | None = None,
        vector_store: str | None = None,
        max_results: int = 3,
        **data: Any,
    ) -> None:
        if "attributes" in data:
            super().__init__(**data)
            return
        if not isinstance(query, str) or not query.strip():
            raise ValueError("a ContextRetrievalRequestEvent needs a non-empty query text")
        if not isinstance(vector_store, str) or not vector_store:
            raise ValueError(
                "a ContextRetrievalRequestEvent needs the name of a vector store resource"
            )
        if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1:
            raise ValueError(f"max_results must be a positive integer, not {max_results!r}")
        super().__init__(
            attributes={"query": query, "vector_store": vector_store, "max_results": max_results},
            **data,
        )

    @property
    def query(self) -> str:
        """The text to find documents near."""
        return self.attributes["query"]

    @property
    def vector_store(self) -> str:
        """The name of the vector store resource to search."""
        return self.attributes["vector_store"]

    @property
    def max_results(self) -> int:
        """At most this many documents come back."""
        return self.attributes.get("max_results", 3)


class ContextRetrievalResponseEvent(Event):
    """The documents a `ContextRetrievalRequestEvent` found, nearest first."""

    EVENT_TYPE: ClassVar[str] = "_context_retrieval_response_event"
    ATTRIBUTE_TYPES: ClassVar[Mapping[str, Any]] = {
        "request_id": EventId,
        "query": str,
        "documents": list[Document],
    }

    def __init__(
        self,
        request_id: UUID | str | None = None,
        query: str | None = None,
        documents: Sequence[Document | Mapping[str, Any]] = (),
        **data: Any,
    ) -> None:
        if "attributes" in data:
            super().__init__(**data)
            return
        if not request_id:
            raise ValueError("a ContextRetrievalResponseEvent needs the id of its request")
        super().__init__(
            attributes={
                "request_id": event_id(request_id),
                "query": query,
                "documents": _DOCUMENTS.validate_python(list(documents)),
            },
            **data,
        )

    @property
    def request_id(self) -> UUID:
        """Id of the `ContextRetrievalRequestEvent` this answers."""
        return request_id_of(self)

    @property
    def query(self) -> str:
        """The request's query text."""
        return self.attributes["query"]

    @property
    def documents(self) -> list[Document]:
        """The documents found, nearest first."""
        return self.attributes["documents"]
