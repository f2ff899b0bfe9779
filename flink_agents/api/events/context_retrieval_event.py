"""Context retrieval events (upstream's retrieval from a vector store): not available here.

Vector stores are not implemented in this project (docs/status.md), so nothing could
answer a `ContextRetrievalRequestEvent`. The classes and their `EventType` constants
exist so upstream code imports; making one raises `NotImplementedError`, and an action
that listens to their types is refused when it is declared. Retrieve context in an
action of your own (or a tool) and put it in the prompt instead.
"""

from __future__ import annotations

from typing import Any, ClassVar

from flink_agents.api.events.event import Event

__all__ = [
    "CONTEXT_RETRIEVAL_UNAVAILABLE",
    "ContextRetrievalRequestEvent",
    "ContextRetrievalResponseEvent",
]

CONTEXT_RETRIEVAL_UNAVAILABLE = (
    "context retrieval needs a vector store, and vector stores are not available in this "
    "project (see docs/status.md): retrieve the context in an action of your own or a tool"
)


class ContextRetrievalRequestEvent(Event):
    """Upstream's request to search a vector store (not available here)."""

    EVENT_TYPE: ClassVar[str] = "_context_retrieval_request_event"

    def __init__(self, *args: Any, **data: Any) -> None:
        raise NotImplementedError(CONTEXT_RETRIEVAL_UNAVAILABLE)


class ContextRetrievalResponseEvent(Event):
    """Upstream's documents found in a vector store (not available here)."""

    EVENT_TYPE: ClassVar[str] = "_context_retrieval_response_event"

    def __init__(self, *args: Any, **data: Any) -> None:
        raise NotImplementedError(CONTEXT_RETRIEVAL_UNAVAILABLE)
