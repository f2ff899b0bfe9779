"""Long-term memory (upstream's module): memory that outlives one run and one conversation.

An action reaches it as ``ctx.long_term_memory``: a `BaseLongTermMemory` that hands out
named `MemorySet`s. A set holds text items (`MemorySetItem`); ``add`` stores text (the
backend may distill it into facts, merge it with what the set holds or drop it),
``search`` finds the items closest in meaning to a query, ``get`` lists or fetches by id,
``delete`` removes items or the whole set.

    >>> prefs = ctx.long_term_memory.get_memory_set("preferences")
    >>> prefs.add("The customer prefers email over phone calls.")
    >>> [item.value for item in prefs.search("how to contact them?", limit=3)]

The runtime scopes every set to the key of the running input: the same set name under two
keys is two sets, so one customer's memory never answers another's. The backend is chosen
by `LongTermMemoryOptions` (upstream's: mem0, on the agent's own chat model, embedding model
and vector store resources).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from flink_agents.api.core_options import LongTermMemoryOptions

__all__ = ["BaseLongTermMemory", "LongTermMemoryOptions", "MemorySet", "MemorySetItem"]


class MemorySetItem(BaseModel):
    """One item of a memory set."""

    memory_set_name: str
    """The set the item belongs to."""
    id: str
    """The item's id (the backend's)."""
    value: str
    """The item's text."""
    created_at: datetime | None = None
    """When the item was stored, when the backend says."""
    updated_at: datetime | None = None
    """When the item last changed, when the backend says."""
    additional_metadata: dict[str, Any] | None = None
    """The metadata stored with the item (``add(..., metadatas=...)``)."""


class MemorySet(BaseModel):
    """A named set of memory items; its operations go to the long-term memory it came from."""

    name: str
    """The set's name (scoped to the running input's key by the runtime)."""
    ltm: BaseLongTermMemory = Field(default=None, exclude=True)  # type: ignore[assignment]
    """The long-term memory that holds the set."""

    def add(
        self,
        items: str | list[str],
        metadatas: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> list[str]:
        """Store ``items`` (one text or several) with optional metadata (one dict for all
        or one per item); returns the ids of the items the backend added or changed."""
        return self.ltm.add(memory_set=self, memory_items=items, metadatas=metadatas)

    def get(
        self,
        ids: str | list[str] | None = None,
        filters: dict[str, Any] | None = None,
        limit: int = 100,
    ) -> list[MemorySetItem]:
        """The items with ``ids``; without ids, up to ``limit`` items whose metadata
        matches ``filters`` (equality on each key)."""
        return self.ltm.get(memory_set=self, ids=ids, filters=filters, limit=limit)

    def search(
        self,
        query: str,
        limit: int,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[MemorySetItem]:
        """Up to ``limit`` items closest in meaning to ``query``, the closest first."""
        return self.ltm.search(memory_set=self, query=query, limit=limit, filters=filters, **kwargs)

    def delete(self, ids: str | list[str] | None = None) -> None:
        """Delete the items with ``ids``, or every item of the set without ids."""
        self.ltm.delete(memory_set=self, ids=ids)


class BaseLongTermMemory(ABC, BaseModel):
    """A long-term memory backend: memory sets and the operations on their items."""

    @abstractmethod
    def get_memory_set(self, name: str) -> MemorySet:
        """The memory set called ``name`` (created when first used)."""

    @abstractmethod
    def delete_memory_set(self, name: str) -> bool:
        """Delete the set called ``name`` and its items; whether it was deleted."""

    @abstractmethod
    def add(
        self,
        memory_set: MemorySet,
        memory_items: str | list[str],
        metadatas: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> list[str]:
        """Store items in ``memory_set`` (the backend may compact the set); their ids."""

    @abstractmethod
    def get(
        self,
        memory_set: MemorySet,
        ids: str | list[str] | None = None,
        filters: dict[str, Any] | None = None,
        limit: int = 100,
    ) -> list[MemorySetItem]:
        """Items by id, or (without ids) up to ``limit`` items matching ``filters``."""

    @abstractmethod
    def delete(self, memory_set: MemorySet, ids: str | list[str] | None = None) -> None:
        """Delete items by id, or every item of the set without ids."""

    @abstractmethod
    def search(
        self,
        memory_set: MemorySet,
        query: str,
        limit: int,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[MemorySetItem]:
        """Up to ``limit`` items of the set closest in meaning to ``query``."""

    @abstractmethod
    def close(self) -> None:
        """Release what the backend holds (the job ends)."""


MemorySet.model_rebuild()
