"""`ScopedOperations`: the operations on memory sets, written once for the runtime's two
long-term memories (the action's view, `ActionLongTermMemory`, and upstream's runner API,
`Mem0LongTermMemory`).

Each operation is one `scoped_call`-shaped call (``add``, ``get``, ``search``, ``delete``,
``delete_set``) and one note per item it concerned, for the memory events. A memory says how
it makes the call (`_scoped`) and where a note goes (`_observer`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, cast

from flink_agents.api.memory.long_term_memory import MemorySet, MemorySetItem
from flink_agents.runtime.memory.internal_base_long_term_memory import LongTermOp

if TYPE_CHECKING:
    from flink_agents.api.memory.long_term_memory import BaseLongTermMemory

__all__ = [
    "ObservationRecord",
    "Observe",
    "ObservedKind",
    "ScopedOperations",
    "add_changes",
    "as_list",
    "item_from_entry",
]

ObservedKind = Literal["update", "get", "search"]
"""Which observation an operation belongs to (what it is recorded under)."""

_ADD_EVENTS = ("ADD", "UPDATE", "DELETE")
"""mem0's ``event`` of an ``add`` result that changed the set (``NONE``: nothing changed)."""


@dataclass(frozen=True)
class ObservationRecord:
    """One item an operation concerned, as the memory events are built from it."""

    op: str
    """``ADD``, ``UPDATE``, ``DELETE``, ``DELETE_SET``, ``GET`` or ``SEARCH``."""
    set: str
    id: str | None = None
    query: str | None = None
    value: Any = None
    version: int = 1

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


Observe = Callable[[ObservationRecord], None]
"""Takes the records of one operation."""


def as_list(value: Any) -> list[Any]:
    """One text (or dict) as a list of one; a list as it is."""
    return [value] if isinstance(value, (str, dict)) else list(value)


def add_changes(entries: list[dict[str, Any]]) -> Iterator[tuple[str, str, Any]]:
    """``(op, id, memory)`` for each entry of an ``add`` result that changed the memory
    set: ``ADD`` and ``UPDATE`` with the memory, ``DELETE`` without (mem0's ``NONE``:
    nothing changed, left out)."""
    for entry in entries:
        op = str(entry.get("event", "")).upper()
        if op in _ADD_EVENTS:
            yield op, entry["id"], None if op == "DELETE" else entry.get("memory")


def item_from_entry(memory_set_name: str, entry: dict[str, Any]) -> MemorySetItem:
    """A `MemorySetItem` from a mem0 result entry."""
    times: dict[str, datetime | None] = {"created_at": None, "updated_at": None}
    for name in times:
        with contextlib.suppress(ValueError, TypeError):  # absent or not ISO: unknown
            times[name] = datetime.fromisoformat(entry.get(name))  # type: ignore[arg-type]
    return MemorySetItem(
        memory_set_name=memory_set_name,
        id=entry.get("id") or "",
        value=entry.get("memory") or "",
        created_at=times["created_at"],
        updated_at=times["updated_at"],
        additional_metadata=entry.get("metadata") or None,
    )


class ScopedOperations:
    """`BaseLongTermMemory`'s operations over `_scoped` calls (a mixin, listed before the
    memory's base class)."""

    def _scoped(self, op: LongTermOp, memory_set: str, params: dict[str, Any]) -> Any:
        """Make one call on the set ``memory_set`` of the memory's key."""
        raise NotImplementedError

    def _observer(self, kind: ObservedKind) -> Observe:
        """Where the notes of one operation of ``kind`` go (asked before its call)."""
        raise NotImplementedError

    def get_memory_set(self, name: str) -> MemorySet:
        return MemorySet(name=name, ltm=cast("BaseLongTermMemory", self))

    def delete_memory_set(self, name: str) -> bool:
        observe = self._observer("update")
        self._scoped("delete_set", name, {})
        observe(ObservationRecord("DELETE_SET", name))
        return True

    def add(
        self,
        memory_set: MemorySet,
        memory_items: str | list[str],
        metadatas: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> list[str]:
        observe = self._observer("update")
        params = {"items": as_list(memory_items), "metadatas": metadatas}
        entries = self._scoped("add", memory_set.name, params)
        for op, memory_id, value in add_changes(entries):
            observe(ObservationRecord(op, memory_set.name, memory_id, value=value))
        return [entry["id"] for entry in entries]

    def get(
        self,
        memory_set: MemorySet,
        ids: str | list[str] | None = None,
        filters: dict[str, Any] | None = None,
        limit: int = 100,
    ) -> list[MemorySetItem]:
        observe = self._observer("get")
        params = {"ids": None if ids is None else as_list(ids), "filters": filters, "limit": limit}
        entries = self._scoped("get", memory_set.name, params)
        items = [item_from_entry(memory_set.name, entry) for entry in entries]
        for item in items:
            observe(ObservationRecord("GET", memory_set.name, item.id, value=item.value))
        return items

    def delete(self, memory_set: MemorySet, ids: str | list[str] | None = None) -> None:
        if ids is None:
            self.delete_memory_set(memory_set.name)
            return
        observe = self._observer("update")
        ids = as_list(ids)
        self._scoped("delete", memory_set.name, {"ids": ids})
        for memory_id in ids:
            observe(ObservationRecord("DELETE", memory_set.name, memory_id))

    def search(
        self,
        memory_set: MemorySet,
        query: str,
        limit: int,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[MemorySetItem]:
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"long-term memory search on set {memory_set.name!r}: empty query")
        observe = self._observer("search")
        params = {"query": query, "limit": limit, "filters": filters, "kwargs": kwargs}
        entries = self._scoped("search", memory_set.name, params)
        hits = [{"id": e["id"], "value": e["memory"], "score": e["score"]} for e in entries]
        observe(ObservationRecord("SEARCH", memory_set.name, query=query, value=hits))
        return [item_from_entry(memory_set.name, entry) for entry in entries]
