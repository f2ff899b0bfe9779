"""Sensory and short-term memory as `MemoryObject`s over agent state.

A memory is a tree of plain dicts: the root is ``RunState.sensory_memory`` or
``KeyState.short_term_memory``; a nested object is a `MemoryNode` (a dict subclass, so a
dict *value* is never taken for an object). `StateMemoryObject` is the view an action
gets: it resolves dotted paths, checks values at the door (`validate_memory_value`),
applies the short-term memory TTL, and records what the action wrote and read for the
memory events.

As JSON (`MEMORY_FIELDS`), values are in the value codec's tagged form and a nested object
is ``{"$object": {...its fields...}}``; the codec writes a user key ``$object`` as
``$$object``, so the two never meet, and a memory without nested objects is written exactly
as before nested objects existed.

TTL (``short-term-memory.state-ttl.ms`` > 0): every short-term path has the time it was
last written (``KeyState.memory_touched_ms``; with update type ``ON_READ_AND_WRITE`` also
when it was last read). Touching a path touches the objects above it, so an object lives
at least as long as anything in it. A path is expired once ``ttl`` ms have passed since;
expired paths are removed when a run of the key starts (`purge_expired`), and with
visibility ``NEVER_RETURN_EXPIRED`` a path that expires during a run reads as absent at
once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator

from flink_agents.api._values import canonical_value, decode_value, encode_value
from flink_agents.api.core_options import (
    AgentConfiguration,
    AgentExecutionOptions,
    MemoryEventOptions,
    ShortTermMemoryTtlUpdate,
    ShortTermMemoryTtlVisibility,
)
from flink_agents.api.events.event import Event
from flink_agents.api.events.memory_event import (
    LongTermGetEvent,
    LongTermSearchEvent,
    LongTermUpdateEvent,
    SensoryReadEvent,
    SensoryWriteEvent,
    ShortTermReadEvent,
    ShortTermWriteEvent,
)
from flink_agents.api.memory_object import (
    NESTED_OBJECT,
    MemoryObject,
    MemoryType,
    validate_memory_value,
)
from flink_agents.api.memory_reference import MemoryRef

__all__ = [
    "MEMORY_FIELDS",
    "MemoryAccess",
    "MemoryNode",
    "MemoryRecorder",
    "MemorySettings",
    "MemoryTtl",
    "StateMemoryObject",
    "flat_values",
    "memory_events",
    "purge_expired",
    "run_begin_snapshot",
]

_OBJECT_TAG = "$object"


class MemoryNode(dict[str, Any]):
    """A nested object in memory: its fields (values, or `MemoryNode`s)."""

    __slots__ = ()


# ------------------------------------------------------------------ JSON form


def _dump_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, MemoryNode):
            out[name] = {_OBJECT_TAG: _dump_fields(value)}
        else:
            out[name] = encode_value(value)
    return out


def _load_fields(data: Any) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise TypeError(f"memory is a dict of fields, got {type(data).__name__}")
    fields: dict[str, Any] = {}
    for name, value in data.items():
        if isinstance(value, MemoryNode):
            fields[name] = value  # a live tree
        elif isinstance(value, dict) and value.keys() == {_OBJECT_TAG}:
            fields[name] = MemoryNode(_load_fields(value[_OBJECT_TAG]))
        elif isinstance(value, (dict, list)):
            fields[name] = decode_value(value)
        else:
            fields[name] = value
    return fields


MEMORY_FIELDS = Annotated[
    dict[str, Any],
    PlainValidator(_load_fields),
    PlainSerializer(_dump_fields, when_used="json"),
]
"""The pydantic type of a memory root in agent state (see the module doc)."""


# ------------------------------------------------------------------ TTL


@dataclass(frozen=True)
class MemoryTtl:
    """The short-term memory TTL options in force."""

    ttl_ms: int
    """How long a path lives after it was last touched."""
    touch_on_read: bool
    """``ON_READ_AND_WRITE``: reads touch too."""
    hide_expired: bool
    """``NEVER_RETURN_EXPIRED``: a path that expires during a run reads as absent at once."""

    @classmethod
    def from_config(cls, config: AgentConfiguration) -> MemoryTtl | None:
        """The TTL the options ask for, or None when it is off (``state-ttl.ms`` <= 0)."""
        ttl_ms = config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_MS)
        if not ttl_ms or ttl_ms <= 0:
            return None
        update = config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE)
        visibility = config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_VISIBILITY)
        return cls(
            ttl_ms=int(ttl_ms),
            touch_on_read=update is ShortTermMemoryTtlUpdate.ON_READ_AND_WRITE,
            hide_expired=visibility is ShortTermMemoryTtlVisibility.NEVER_RETURN_EXPIRED,
        )

    def expired(self, touched: Mapping[str, int], path: str, now_ms: int) -> bool:
        """Whether ``path`` is expired at ``now_ms`` (a path never touched is not)."""
        last = touched.get(path)
        return last is not None and now_ms >= last + self.ttl_ms


def _ancestors_and_self(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _walk(fields: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Every (absolute path, field) of a tree, objects before what they hold."""
    found: list[tuple[str, Any]] = []
    for name, value in fields.items():
        path = f"{prefix}.{name}" if prefix else name
        found.append((path, value))
        if isinstance(value, MemoryNode):
            found.extend(_walk(value, path))
    return found


def purge_expired(
    root: dict[str, Any], touched: dict[str, int], ttl: MemoryTtl | None, now_ms: int
) -> None:
    """At the start of a run: remove the expired paths of ``root`` (and their times); give
    paths with no time (written while TTL was off) the time ``now_ms``. Without a TTL, the
    times are dropped."""
    if ttl is None:
        touched.clear()
        return
    live: dict[str, int] = {}
    expired: list[str] = []
    for path, _ in _walk(root):
        if any(path.startswith(gone + ".") for gone in expired):
            continue
        if ttl.expired(touched, path, now_ms):
            expired.append(path)
        else:
            live[path] = touched.get(path, now_ms)
    for path in expired:
        *parents, name = path.split(".")
        node: dict[str, Any] = root
        for part in parents:
            node = node[part]
        del node[name]
    touched.clear()
    touched.update(live)


# ------------------------------------------------------------------ observation


class MemoryRecorder:
    """What one action wrote and read in one memory: dotted path -> JSON value, the last
    write or read of a path winning (``new_object`` and deletes record None)."""

    __slots__ = ("reads", "writes")

    def __init__(self, *, writes: bool, reads: bool) -> None:
        self.writes: dict[str, Any] | None = {} if writes else None
        self.reads: dict[str, Any] | None = {} if reads else None

    def wrote(self, path: str, value: Any) -> None:
        if self.writes is not None:
            self.writes[path] = _json_or_none(value)

    def read(self, path: str, value: Any) -> None:
        if self.reads is not None:
            self.reads[path] = _json_or_none(value)


def _json_or_none(value: Any) -> Any:
    return None if value is None else canonical_value(value)


def flat_values(fields: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted path -> JSON value of every value in a tree (objects are implied by the
    paths), as upstream's run-begin snapshot."""
    return {
        path: canonical_value(value)
        for path, value in _walk(fields, prefix)
        if not isinstance(value, MemoryNode)
    }


# ------------------------------------------------------------------ the view


@dataclass
class MemoryAccess:
    """What every object of one action's view of one memory shares."""

    root: dict[str, Any]
    memory_type: MemoryType
    recorder: MemoryRecorder | None = None
    ttl: MemoryTtl | None = None
    touched: dict[str, int] | None = None
    clock_ms: Callable[[], int] | None = None


def _split(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise TypeError(f"a memory path is a string, got {type(path).__name__}")
    parts = path.split(".")
    if not all(parts):
        raise ValueError(f"memory path {path!r} has an empty part")
    return parts


_ABSENT: Any = object()


class StateMemoryObject(MemoryObject):
    """A `MemoryObject` over a memory tree in agent state (see the module doc)."""

    __slots__ = ("_access", "_node", "_prefix")

    def __init__(self, access: MemoryAccess, node: dict[str, Any] | None = None, prefix: str = ""):
        self._access = access
        self._node: dict[str, Any] = access.root if node is None else node
        self._prefix = prefix

    @property
    def memory_type(self) -> MemoryType:
        return self._access.memory_type

    @property
    def path(self) -> str:
        return self._prefix

    @property
    def recorder(self) -> MemoryRecorder | None:
        """What this view records for memory events (None: nothing)."""
        return self._access.recorder

    # ------------------------------------------------------------------ paths

    def _absolute(self, parts: list[str]) -> str:
        relative = ".".join(parts)
        return f"{self._prefix}.{relative}" if self._prefix else relative

    def _now(self) -> int:
        clock = self._access.clock_ms
        assert clock is not None
        return clock()

    def _hidden(self, path: str) -> bool:
        """Whether ``path`` is expired and must read as absent."""
        access = self._access
        ttl = access.ttl
        if ttl is None or not ttl.hide_expired or access.touched is None:
            return False
        return ttl.expired(access.touched, path, self._now())

    def _touch(self, path: str, *, read: bool) -> None:
        access = self._access
        ttl, touched = access.ttl, access.touched
        if ttl is None or touched is None or (read and not ttl.touch_on_read):
            return
        now = self._now()
        for each in _ancestors_and_self(path):
            touched[each] = now

    def _forget_times(self, path: str) -> None:
        touched = self._access.touched
        if touched:
            below = path + "."
            for each in [p for p in touched if p == path or p.startswith(below)]:
                del touched[each]

    def _lookup(self, parts: list[str]) -> tuple[Any, str]:
        """The field at ``parts`` (or `_ABSENT`) and its absolute path."""
        node: Any = self._node
        for part in parts:
            if not isinstance(node, MemoryNode) and node is not self._node:
                return _ABSENT, self._absolute(parts)
            node = node.get(part, _ABSENT)
            if node is _ABSENT:
                return _ABSENT, self._absolute(parts)
        path = self._absolute(parts)
        if self._hidden(path):
            return _ABSENT, path
        return node, path

    def _parent_for_write(self, parts: list[str]) -> dict[str, Any]:
        """The object that holds the last part, made on the way where missing."""
        node = self._node
        for i, part in enumerate(parts[:-1]):
            child = node.get(part, _ABSENT)
            path = self._absolute(parts[: i + 1])
            if child is _ABSENT or self._hidden(path):
                child = node[part] = MemoryNode()
                self._forget_times(path)
            elif not isinstance(child, MemoryNode):
                raise ValueError(
                    f"memory path {path!r} holds a value, not an object: it cannot hold "
                    f"{'.'.join(parts[i + 1 :])!r}"
                )
            node = child
        return node

    def _view(self, value: Any, path: str) -> Any:
        if isinstance(value, MemoryNode):
            return StateMemoryObject(self._access, value, path)
        return value

    # ------------------------------------------------------------------ MemoryObject

    def get(self, path_or_ref: str | MemoryRef, default: Any = None) -> Any:  # type: ignore[override]
        if isinstance(path_or_ref, MemoryRef):
            if path_or_ref.memory_type is not self.memory_type:
                raise ValueError(
                    f"{path_or_ref!r} points into {path_or_ref.memory_type.value} memory, "
                    f"not {self.memory_type.value} memory"
                )
            return StateMemoryObject(self._access)._get(path_or_ref.path, default)
        return self._get(path_or_ref, default)

    def __getitem__(self, path: str) -> Any:
        value = self._get(path, _ABSENT)  # one lookup: one read recorded
        if value is _ABSENT:
            raise KeyError(path)
        return value

    def _get(self, path: str, default: Any) -> Any:
        if path == "":
            return self
        value, absolute = self._lookup(_split(path))
        if value is _ABSENT:
            return default
        self._touch(absolute, read=True)
        recorder = self._access.recorder
        if recorder is not None and not isinstance(value, MemoryNode):
            recorder.read(absolute, value)
        return self._view(value, absolute)

    def set(self, path: str, value: Any) -> MemoryRef:
        parts = _split(path)
        absolute = self._absolute(parts)
        validate_memory_value(absolute, value)
        parent = self._parent_for_write(parts)
        if isinstance(parent.get(parts[-1]), MemoryNode) and not self._hidden(absolute):
            raise ValueError(
                f"memory path {absolute!r} is an object: it cannot be overwritten with a "
                "value (delete it first)"
            )
        parent[parts[-1]] = value
        self._forget_times(absolute)
        self._touch(absolute, read=False)
        recorder = self._access.recorder
        if recorder is not None:
            recorder.wrote(absolute, value)
        return MemoryRef(memory_type=self.memory_type, path=absolute)

    def new_object(self, path: str, *, overwrite: bool = False) -> MemoryObject:
        parts = _split(path)
        absolute = self._absolute(parts)
        parent = self._parent_for_write(parts)
        existing = parent.get(parts[-1], _ABSENT)
        if self._hidden(absolute):
            existing = _ABSENT
        if isinstance(existing, MemoryNode):
            node = existing
        elif existing is not _ABSENT and not overwrite:
            raise ValueError(
                f"memory path {absolute!r} holds a value, not an object (pass overwrite=True "
                "to replace it)"
            )
        else:
            node = parent[parts[-1]] = MemoryNode()
            self._forget_times(absolute)
        self._touch(absolute, read=False)
        recorder = self._access.recorder
        if recorder is not None:
            recorder.wrote(absolute, None)
        return StateMemoryObject(self._access, node, absolute)

    def is_exist(self, path: str) -> bool:
        if path == "":
            return True
        value, _ = self._lookup(_split(path))
        return value is not _ABSENT

    def get_field_names(self) -> list[str]:
        names: list[str] = []
        for name in self._node:
            if "." in name:
                continue  # the runtime's own entries: no path reaches them
            if not self._hidden(self._absolute([name])):
                names.append(name)
        return names

    def get_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        recorder = self._access.recorder
        for name in self.get_field_names():
            value = self._node[name]
            absolute = self._absolute([name])
            self._touch(absolute, read=True)
            if isinstance(value, MemoryNode):
                fields[name] = NESTED_OBJECT
            else:
                fields[name] = value
                if recorder is not None:
                    recorder.read(absolute, value)
        return fields

    def __delitem__(self, path: str) -> None:
        parts = _split(path)
        value, absolute = self._lookup(parts)
        if value is _ABSENT:
            raise KeyError(path)
        node: dict[str, Any] = self._node
        for part in parts[:-1]:
            node = node[part]
        del node[parts[-1]]
        self._forget_times(absolute)
        recorder = self._access.recorder
        if recorder is not None:
            recorder.wrote(absolute, None)


# ------------------------------------------------------------------ what an engine applies


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class MemorySettings:
    """How an engine's runs treat memory: the TTL, which memory events are made, whether a
    run begins with an `AgentRunBeginEvent`, and the clock the TTL reads."""

    ttl: MemoryTtl | None = None
    """The short-term memory TTL, or None."""
    event_types: frozenset[str] = frozenset()
    """The memory event types made: enabled by the options, and listened to by an action or
    written to the event log (nothing else would see them)."""
    run_begin: bool = False
    """``agent-run.begin-event`` is on."""
    clock_ms: Callable[[], int] = _wall_clock_ms
    """Milliseconds since the epoch (tests give a fake clock)."""

    @classmethod
    def from_config(
        cls, config: AgentConfiguration, listened: Callable[[str], bool], *, logged: bool = False
    ) -> MemorySettings:
        """The settings ``config`` asks for; ``listened(type)`` says whether an action of the
        agent listens to an event type, ``logged`` whether events go to an event log (then
        every kind the options enable is made, as upstream's event log shows them)."""
        kinds = {
            ShortTermWriteEvent.EVENT_TYPE: MemoryEventOptions.SHORT_TERM_WRITE,
            ShortTermReadEvent.EVENT_TYPE: MemoryEventOptions.SHORT_TERM_READ,
            SensoryWriteEvent.EVENT_TYPE: MemoryEventOptions.SENSORY_WRITE,
            SensoryReadEvent.EVENT_TYPE: MemoryEventOptions.SENSORY_READ,
            LongTermUpdateEvent.EVENT_TYPE: MemoryEventOptions.LONG_TERM_UPDATE,
            LongTermGetEvent.EVENT_TYPE: MemoryEventOptions.LONG_TERM_GET,
            LongTermSearchEvent.EVENT_TYPE: MemoryEventOptions.LONG_TERM_SEARCH,
        }
        return cls(
            ttl=MemoryTtl.from_config(config),
            event_types=frozenset(
                event_type
                for event_type, option in kinds.items()
                if (logged or listened(event_type)) and MemoryEventOptions.enabled(config, option)
            ),
            run_begin=bool(config.get(AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT)),
        )

    def recorder(self, memory_type: MemoryType) -> MemoryRecorder | None:
        """What an action's view of ``memory_type`` records for its memory events (None
        when no event of that memory is made)."""
        if memory_type is MemoryType.SHORT_TERM:
            write, read = ShortTermWriteEvent.EVENT_TYPE, ShortTermReadEvent.EVENT_TYPE
        else:
            write, read = SensoryWriteEvent.EVENT_TYPE, SensoryReadEvent.EVENT_TYPE
        writes, reads = write in self.event_types, read in self.event_types
        if not writes and not reads:
            return None
        return MemoryRecorder(writes=writes, reads=reads)


def memory_events(
    key_text: str, short_term: MemoryRecorder | None, sensory: MemoryRecorder | None
) -> list[Event]:
    """The memory events of one action: one per memory and kind that recorded something."""
    events: list[Event] = []
    for recorder, write_cls, read_cls in (
        (short_term, ShortTermWriteEvent, ShortTermReadEvent),
        (sensory, SensoryWriteEvent, SensoryReadEvent),
    ):
        if recorder is None:
            continue
        if recorder.writes:
            events.append(write_cls(key=key_text, value=recorder.writes))
        if recorder.reads:
            events.append(read_cls(key=key_text, value=recorder.reads))
    return events


def run_begin_snapshot(
    root: Mapping[str, Any], touched: dict[str, int], ttl: MemoryTtl | None, now_ms: int
) -> dict[str, Any]:
    """The key's short-term memory values for an `AgentRunBeginEvent`; with update type
    ``ON_READ_AND_WRITE`` this reads (so touches) every path, as upstream warns."""
    if ttl is not None and ttl.touch_on_read:
        for path, _ in _walk(root):
            touched[path] = now_ms
    return flat_values(root)
