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
)
from flink_agents.runtime.errors import LongTermMemoryError
from flink_agents.runtime.memory.internal_base_long_term_memory import (
    InternalBaseLongTermMemory,
    LongTermOp,
)
from flink_agents.runtime.memory.scoped_operations import (
    ObservationRecord,
    Observe,
    ObservedKind,
    ScopedOperations,
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


class ActionLongTermMemory(ScopedOperations, BaseLongTermMemory):
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

    @override
    def _scoped(self, op: LongTermOp, memory_set: str, params: dict[str, Any]) -> Any:
        return self.execute(self.backend.scoped_call, self.key, op, memory_set, params)

    @override
    def _observer(self, kind: ObservedKind) -> Observe:
        return self._note

    def _note(self, record: ObservationRecord) -> None:
        self._records.append(record.to_wire())

    @property
    def records(self) -> list[dict[str, Any]]:
        """What the action did, in order (``op``, ``set``, ``id``, ``query``, ``value``)."""
        return self._records

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
