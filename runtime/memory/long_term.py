"""Long-term memory as actions see it: `ActionLongTermMemory`, its backend and its events.

`open_backend` builds the backend the options name (`LongTermMemoryOptions`); the engine
keeps one for all runs. Each action gets an `ActionLongTermMemory`: the backend scoped to
the key of the running input (so one key never sees another's items), each operation a
durable call of the action (``ctx.durable_execute``: with a durable call log, a restored
run gets the recorded result and mem0's model, embedding and store calls are not made
again; a recorded result never answers another operation, the call's digest covers the
key, the set and the arguments). What the action did becomes its `LongTermUpdateEvent`,
`LongTermGetEvent` and `LongTermSearchEvent` when it finishes (`long_term_memory_events`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ConfigDict, Field, PrivateAttr
from typing_extensions import override

from flink_agents.api.configuration import ReadableConfiguration
from flink_agents.api.core_options import LongTermMemoryOptions
from flink_agents.api.events.event import Event
from flink_agents.api.events.memory_event import (
    LongTermGetEvent,
    LongTermSearchEvent,
    LongTermUpdateEvent,
)
from flink_agents.api.memory.long_term_memory import (
    BaseLongTermMemory,
    MemorySet,
    MemorySetItem,
)
from flink_agents.runtime.errors import LongTermMemoryError
from flink_agents.runtime.memory.internal_base_long_term_memory import (
    InternalBaseLongTermMemory,
    LongTermOp,
)

__all__ = ["ActionLongTermMemory", "long_term_memory_events", "open_backend"]

_MEM0_OPTIONS = (
    LongTermMemoryOptions.Mem0.CHAT_MODEL_SETUP,
    LongTermMemoryOptions.Mem0.EMBEDDING_MODEL_SETUP,
    LongTermMemoryOptions.Mem0.VECTOR_STORE,
)


def open_backend(
    config: ReadableConfiguration, resources: Any, job_id: str
) -> InternalBaseLongTermMemory:
    """The backend the options name (``resources`` resolves resources by name and type;
    ``job_id`` scopes the job's items). `LongTermMemoryError` names what is missing."""
    names = [config.get(option) for option in _MEM0_OPTIONS]
    if not all(names):
        pairs = zip(_MEM0_OPTIONS, names, strict=True)
        missing = [option.key for option, name in pairs if not name]
        raise LongTermMemoryError(
            "ctx.long_term_memory: no long-term memory is set up; set "
            + ", ".join(missing)
            + " (the names of the agent's chat model setup, embedding model setup and "
            "vector store), see docs/memory.md"
        )
    from flink_agents.runtime.memory.mem0.mem0_long_term_memory import Mem0LongTermMemory

    chat, embedding, store = names
    return Mem0LongTermMemory(
        ctx=resources,
        job_id=job_id,
        chat_model_name=str(chat),
        embedding_model_name=str(embedding),
        vector_store_name=str(store),
    )


def _as_list(value: Any) -> list[Any]:
    return [value] if isinstance(value, str) else list(value)


def _item(memory_set: str, entry: dict[str, Any]) -> MemorySetItem:
    from flink_agents.runtime.memory.mem0.mem0_long_term_memory import item_from_entry

    return item_from_entry(memory_set, entry)


class ActionLongTermMemory(BaseLongTermMemory):
    """One action's long-term memory: the engine's backend scoped to the running input's
    key, each operation made through ``execute`` (the action's ``durable_execute``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    backend: InternalBaseLongTermMemory = Field(exclude=True)
    """The engine's backend."""
    key: str
    """The scope: the running input's key as typed text (`encode_key`)."""
    execute: Callable[..., Any] = Field(exclude=True)
    """Makes one call durably: ``execute(function, *args)``."""

    _records: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    def _call(self, op: LongTermOp, memory_set: str, params: dict[str, Any]) -> Any:
        return self.execute(self.backend.scoped_call, self.key, op, memory_set, params)

    @property
    def records(self) -> list[dict[str, Any]]:
        """What the action did, in order (``op``, ``set``, ``id``, ``query``, ``value``)."""
        return self._records

    def _record(
        self,
        op: str,
        memory_set: str,
        id: str | None = None,
        query: str | None = None,
        value: Any = None,
    ) -> None:
        self._records.append(
            {"op": op, "set": memory_set, "id": id, "query": query, "value": value}
        )

    @override
    def get_memory_set(self, name: str) -> MemorySet:
        return MemorySet(name=name, ltm=self)

    @override
    def delete_memory_set(self, name: str) -> bool:
        self._call("delete_set", name, {})
        self._record("DELETE_SET", name)
        return True

    @override
    def add(
        self,
        memory_set: MemorySet,
        memory_items: str | list[str],
        metadatas: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> list[str]:
        entries = self._call(
            "add", memory_set.name, {"items": _as_list(memory_items), "metadatas": metadatas}
        )
        from flink_agents.runtime.memory.mem0.mem0_long_term_memory import add_changes

        for op, memory_id, value in add_changes(entries):
            self._record(op, memory_set.name, memory_id, value=value)
        return [entry["id"] for entry in entries]

    @override
    def get(
        self,
        memory_set: MemorySet,
        ids: str | list[str] | None = None,
        filters: dict[str, Any] | None = None,
        limit: int = 100,
    ) -> list[MemorySetItem]:
        params = {"ids": None if ids is None else _as_list(ids), "filters": filters, "limit": limit}
        items = [_item(memory_set.name, e) for e in self._call("get", memory_set.name, params)]
        for item in items:
            self._record("GET", memory_set.name, item.id, value=item.value)
        return items

    @override
    def delete(self, memory_set: MemorySet, ids: str | list[str] | None = None) -> None:
        if ids is None:
            self.delete_memory_set(memory_set.name)
            return
        ids = _as_list(ids)
        self._call("delete", memory_set.name, {"ids": ids})
        for memory_id in ids:
            self._record("DELETE", memory_set.name, memory_id)

    @override
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
        entries = self._call(
            "search",
            memory_set.name,
            {"query": query, "limit": limit, "filters": filters, "kwargs": kwargs},
        )
        hits = [{"id": e["id"], "value": e["memory"], "score": e["score"]} for e in entries]
        self._record("SEARCH", memory_set.name, query=query, value=hits)
        return [_item(memory_set.name, entry) for entry in entries]

    @override
    def close(self) -> None:
        """Nothing: the engine closes the backend when the job ends."""


def long_term_memory_events(
    key_text: str, records: list[dict[str, Any]], event_types: frozenset[str]
) -> list[Event]:
    """One action's long-term memory events (of the types in ``event_types``), folded as
    upstream folds them: per set, the last value of each changed item (None: deleted) and
    the sets cleared; per set, the items read; per set and query, the hits."""
    updates: dict[str, dict[str, Any]] = {}
    gets: dict[str, dict[str, Any]] = {}
    searches: dict[str, dict[str, Any]] = {}
    cleared: list[str] = []
    for record in records:
        op, memory_set = record["op"], record["set"]
        if op == "DELETE_SET":
            updates.pop(memory_set, None)
            if memory_set not in cleared:
                cleared.append(memory_set)
        elif op in ("ADD", "UPDATE", "DELETE"):
            updates.setdefault(memory_set, {})[record["id"]] = record["value"]
        elif op == "GET":
            gets.setdefault(memory_set, {})[record["id"]] = record["value"]
        elif op == "SEARCH":
            searches.setdefault(memory_set, {})[record["query"]] = record["value"]
    events: list[Event] = []
    if LongTermUpdateEvent.EVENT_TYPE in event_types and (updates or cleared):
        events.append(LongTermUpdateEvent(key=key_text, value=updates, cleared_sets=cleared))
    if LongTermGetEvent.EVENT_TYPE in event_types and gets:
        events.append(LongTermGetEvent(key=key_text, value=gets))
    if LongTermSearchEvent.EVENT_TYPE in event_types and searches:
        events.append(LongTermSearchEvent(key=key_text, value=searches))
    return events
