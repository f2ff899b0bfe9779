"""Memory observation events: what one action did to memory, as upstream names them.

When an action finishes, the runtime folds the memory writes (and, when asked for, reads)
of that action into at most one event per memory and operation kind, and sends them with
the action's own events (see docs/agent-api.md, "Memory events"). Each carries the key's
text as ``key`` and a flat map from dotted memory path to the JSON form of the value as
``value`` (the last write or read of a path wins; ``new_object`` shows as ``None``).

The long-term events fold what an action did to ``ctx.long_term_memory`` (see
docs/memory.md): `LongTermUpdateEvent` maps each set to its changed items (id -> text,
``None`` for a deleted one) and lists the sets cleared, `LongTermGetEvent` each set to the
items read, `LongTermSearchEvent` each set to each query's hits.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from flink_agents.api._values import canonical_value
from flink_agents.api.events.event import Event

__all__ = [
    "KeyValueAttributes",
    "LongTermGetEvent",
    "LongTermSearchEvent",
    "LongTermUpdateEvent",
    "MemoryEvent",
    "SensoryReadEvent",
    "SensoryWriteEvent",
    "ShortTermReadEvent",
    "ShortTermWriteEvent",
    "observation_attributes",
]


def observation_attributes(key: Any, value: Any) -> dict[str, Any]:
    """The ``key`` and ``value`` attributes of a memory or run-begin event, checked: the
    key a string, the value a dict whose values are turned into their JSON form (pydantic
    models become their ``model_dump(mode="json")``, tuples lists)."""
    _check_key_and_value(key, value)
    try:
        normalized = canonical_value(_bytes_as_base64(dict(value)))
    except TypeError as exc:
        raise ValueError(f"a memory event's value must be JSON serializable: {exc}") from None
    return {"key": key, "value": normalized}


def _check_key_and_value(key: Any, value: Any) -> None:
    if not isinstance(key, str):
        raise TypeError(f"a memory event's key must be a string, got {type(key).__name__}")
    if not isinstance(value, Mapping):
        raise TypeError(f"a memory event's value must be a dict, got {type(value).__name__}")


def _bytes_as_base64(value: Any) -> Any:
    """``value`` with its bytes as base64 text (upstream's JSON form of bytes)."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {k: _bytes_as_base64(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_bytes_as_base64(v) for v in value]
    return value


class KeyValueAttributes:
    """``key`` and ``value`` of an event whose attributes are `observation_attributes`
    (a mixin, listed before `Event`)."""

    if TYPE_CHECKING:
        attributes: dict[str, Any]

    @property
    def key(self) -> str:
        """The text of the key the event is about."""
        return self.attributes["key"]

    @property
    def value(self) -> dict[str, Any]:
        """Dotted path -> JSON value (treat as read-only): what the event's class says."""
        return self.attributes["value"]


class MemoryEvent(KeyValueAttributes, Event):
    """What one action did to one memory, of one kind (a concrete subclass per kind).

    ``MemoryEvent.from_event(event)`` gives the subclass of the event's type.
    """

    EVENT_TYPE: ClassVar[str] = "_memory_event"
    """Not an event type of its own: each subclass sets one."""

    def __init__(
        self, *, key: str | None = None, value: Mapping[str, Any] | None = None, **data: Any
    ) -> None:
        if "attributes" in data:
            attributes = data["attributes"]
            if isinstance(attributes, Mapping):  # an event rebuilt: its attributes checked
                observation_attributes(attributes.get("key"), attributes.get("value"))
            super().__init__(**data)
            return
        if type(self) is MemoryEvent:
            raise TypeError("MemoryEvent is abstract: make one of its subclasses")
        super().__init__(attributes=observation_attributes(key, value), **data)

    @classmethod
    def is_memory_type(cls, type: str | None) -> bool:
        """Whether ``type`` is one of the seven memory event types."""
        return type in _BY_TYPE

    @classmethod
    def from_event(cls, event: Event) -> Any:
        """The memory event subclass view of ``event`` (`ValueError` for another type)."""
        if cls is MemoryEvent:
            subclass = _BY_TYPE.get(event.type)
            if subclass is None:
                raise ValueError(f"Not a memory event type: {event.type!r}")  # upstream's words
            return subclass.from_event(event)
        attributes = event.attributes
        _check_key_and_value(attributes.get("key"), attributes.get("value"))
        if cls is LongTermUpdateEvent:
            _check_cleared_sets(attributes.get("cleared_sets"))
        return super().from_event(event)


class ShortTermWriteEvent(MemoryEvent):
    """Writes of one action to short-term memory."""

    EVENT_TYPE: ClassVar[str] = "_short_term_write_event"

    # Each subclass declares its constructor: type checkers would otherwise give it
    # pydantic's field constructor.
    def __init__(
        self, *, key: str | None = None, value: Mapping[str, Any] | None = None, **data: Any
    ) -> None:
        super().__init__(key=key, value=value, **data)


class ShortTermReadEvent(MemoryEvent):
    """Reads of one action from short-term memory (off unless enabled)."""

    EVENT_TYPE: ClassVar[str] = "_short_term_read_event"

    def __init__(
        self, *, key: str | None = None, value: Mapping[str, Any] | None = None, **data: Any
    ) -> None:
        super().__init__(key=key, value=value, **data)


class SensoryWriteEvent(MemoryEvent):
    """Writes of one action to sensory memory."""

    EVENT_TYPE: ClassVar[str] = "_sensory_write_event"

    def __init__(
        self, *, key: str | None = None, value: Mapping[str, Any] | None = None, **data: Any
    ) -> None:
        super().__init__(key=key, value=value, **data)


class SensoryReadEvent(MemoryEvent):
    """Reads of one action from sensory memory (off unless enabled)."""

    EVENT_TYPE: ClassVar[str] = "_sensory_read_event"

    def __init__(
        self, *, key: str | None = None, value: Mapping[str, Any] | None = None, **data: Any
    ) -> None:
        super().__init__(key=key, value=value, **data)


def _check_cleared_sets(cleared_sets: Any) -> None:
    if cleared_sets is None:
        return
    if not isinstance(cleared_sets, list):
        raise TypeError(f"cleared_sets must be a list, got {type(cleared_sets).__name__}")
    if not all(isinstance(name, str) for name in cleared_sets):
        raise TypeError("cleared_sets must be a list of strings (only strings: memory set names)")


class LongTermUpdateEvent(MemoryEvent):
    """Items an action added, changed or deleted in long-term memory, and the sets it cleared."""

    EVENT_TYPE: ClassVar[str] = "_long_term_update_event"

    def __init__(
        self,
        *,
        key: str | None = None,
        value: Mapping[str, Any] | None = None,
        cleared_sets: list[str] | None = None,
        **data: Any,
    ) -> None:
        if "attributes" in data:
            attributes = data["attributes"]
            if isinstance(attributes, Mapping):
                _check_cleared_sets(attributes.get("cleared_sets"))
            super().__init__(**data)
            return
        _check_cleared_sets(cleared_sets)
        super().__init__(key=key, value=value, **data)
        self.attributes["cleared_sets"] = list(cleared_sets or [])

    @property
    def cleared_sets(self) -> list[str]:
        """Memory sets cleared by the action."""
        return self.attributes.get("cleared_sets") or []


class LongTermGetEvent(MemoryEvent):
    """Items an action read from long-term memory with ``get``."""

    EVENT_TYPE: ClassVar[str] = "_long_term_get_event"

    def __init__(
        self, *, key: str | None = None, value: Mapping[str, Any] | None = None, **data: Any
    ) -> None:
        super().__init__(key=key, value=value, **data)


class LongTermSearchEvent(MemoryEvent):
    """An action's long-term memory searches: per set and query, the hits."""

    EVENT_TYPE: ClassVar[str] = "_long_term_search_event"

    def __init__(
        self, *, key: str | None = None, value: Mapping[str, Any] | None = None, **data: Any
    ) -> None:
        super().__init__(key=key, value=value, **data)

    @property
    def results(self) -> dict[str, Any]:
        """Memory set -> query -> hits (the ``value``)."""
        return self.attributes["value"]


_BY_TYPE: dict[str, type[MemoryEvent]] = {
    cls.EVENT_TYPE: cls
    for cls in (
        ShortTermWriteEvent,
        ShortTermReadEvent,
        SensoryWriteEvent,
        SensoryReadEvent,
        LongTermUpdateEvent,
        LongTermGetEvent,
        LongTermSearchEvent,
    )
}
