"""`Event`: what actions consume and send, with its lineage and JSON form.

An event is a ``type`` string plus ``attributes``. Typed subclasses (`InputEvent`,
`ChatRequestEvent`...) give constructors and properties over the attributes and
declare the attributes' types, so ``Event.from_json(event.to_json())`` returns an
instance of the same subclass with equal attributes.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import PydanticSerializationError, from_json, to_json

from flink_agents.api._trusted import fill_trusted
from flink_agents.api._values import AnyValue

__all__ = ["Event", "InputEvent", "OutputEvent", "event_class_for"]

_REGISTRY: dict[str, type[Event]] = {}
_REGISTRY_LOCK = threading.Lock()
_ANY_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyValue)


_LINEAGE_FIELDS = frozenset({"id", "upstream_event_id", "upstream_action_name"})


_ID_PREFIX = os.urandom(8).hex()
_ID_COUNTER = itertools.count()


def _new_id() -> str:
    # Unique without a system call per event (the runner replaces most of these ids with
    # deterministic ones when the event is sent): a random per-process prefix and a counter.
    return f"{_ID_PREFIX}{next(_ID_COUNTER):016x}"


class Event(BaseModel):
    """Something that happened in an agent run; actions are triggered by its ``type``.

    ``id`` is unique; the runner sets it (deterministically from the run's position)
    when the event is sent, along with ``upstream_event_id`` (the event that
    triggered the sending action) and ``upstream_action_name``.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    EVENT_TYPE: ClassVar[str] = ""
    """The ``type`` of this class's events (subclasses without one get their import path)."""
    ATTRIBUTE_TYPES: ClassVar[Mapping[str, Any]] = {}
    """Types of the declared attributes, used to restore them from JSON."""

    type: str = ""
    """What kind of event this is; actions subscribe to it (a subclass's `EVENT_TYPE`
    when not given)."""
    attributes: dict[str, Any] = Field(default_factory=dict)
    """The payload."""
    id: str = Field(default_factory=_new_id)
    """Unique id of this event."""
    upstream_event_id: str | None = None
    """Id of the event whose action sent this one (None for an input)."""
    upstream_action_name: str | None = None
    """Name of the action that sent this event."""

    def __init__(
        self, type: str | None = None, attributes: Mapping[str, Any] | None = None, **data: Any
    ) -> None:
        event_type = type or self.EVENT_TYPE
        if not event_type:
            raise ValueError("an Event needs a type")
        if data.keys() <= _LINEAGE_FIELDS and isinstance(event_type, str):
            # Fast path (events are made on every step): nothing here needs validation
            # beyond what the checks below do.
            for name, value in data.items():
                if value is not None and not isinstance(value, str):
                    raise TypeError(f"Event.{name} must be a string, got {value!r}")
            fill_trusted(
                self,
                {
                    "type": event_type,
                    "attributes": dict(attributes) if attributes else {},
                    "id": data.get("id") or _new_id(),
                    "upstream_event_id": data.get("upstream_event_id"),
                    "upstream_action_name": data.get("upstream_action_name"),
                },
                {"type", "attributes", *data},
            )
            return
        super().__init__(type=event_type, attributes=dict(attributes or {}), **data)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if not cls.__dict__.get("EVENT_TYPE"):
            cls.EVENT_TYPE = f"{cls.__module__}.{cls.__qualname__}"
        cls._adapters = {}
        with _REGISTRY_LOCK:
            _REGISTRY[cls.EVENT_TYPE] = cls

    _adapters: ClassVar[dict[str, TypeAdapter[Any]]] = {}

    @classmethod
    def _adapter(cls, name: str) -> TypeAdapter[Any]:
        adapter = cls._adapters.get(name)
        if adapter is None:
            declared = cls.ATTRIBUTE_TYPES.get(name)
            adapter = _ANY_ADAPTER if declared is None else TypeAdapter(declared)
            cls._adapters[name] = adapter
        return adapter

    def get_attr(self, name: str, default: Any = None) -> Any:
        """An attribute, or ``default`` when it is absent."""
        return self.attributes.get(name, default)

    # ------------------------------------------------------------------ JSON form

    def to_dict(self) -> dict[str, Any]:
        """The JSON-compatible form (see `from_dict`)."""
        cls = type(self)
        attributes: dict[str, Any] = {}
        for name, value in self.attributes.items():
            try:
                attributes[name] = cls._adapter(name).dump_python(value, mode="json")
            except PydanticSerializationError as exc:
                raise TypeError(
                    f"attribute {name!r} of a {self.type} event: a value of type "
                    f"{_type_name(value)} cannot be written to agent state as JSON"
                ) from exc
        return {
            "type": self.type,
            "id": self.id,
            "upstream_event_id": self.upstream_event_id,
            "upstream_action_name": self.upstream_action_name,
            "attributes": attributes,
        }

    def to_json(self) -> str:
        """The event as a JSON string."""
        return to_json(self.to_dict()).decode("utf-8")

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Event:
        """The event `to_dict` wrote, as its registered subclass (or `Event`)."""
        event_type = data["type"]
        cls = event_class_for(event_type)
        raw = data.get("attributes") or {}
        attributes = {name: cls._adapter(name).validate_python(v) for name, v in raw.items()}
        return cls.model_construct(
            type=event_type,
            attributes=attributes,
            id=data.get("id") or _new_id(),
            upstream_event_id=data.get("upstream_event_id"),
            upstream_action_name=data.get("upstream_action_name"),
        )

    @staticmethod
    def from_json(text: str | bytes) -> Event:
        """The event `to_json` wrote."""
        return Event.from_dict(from_json(text))


def _type_name(value: Any) -> str:
    return type(value).__name__


def event_class_for(event_type: str) -> type[Event]:
    """The class registered for an event type (`Event` when none is)."""
    return _REGISTRY.get(event_type, Event)


class InputEvent(Event):
    """The start of an agent run: one input record."""

    EVENT_TYPE: ClassVar[str] = "_input_event"
    ATTRIBUTE_TYPES: ClassVar[Mapping[str, Any]] = {"input": AnyValue}

    def __init__(self, input: Any = None, **data: Any) -> None:
        if "attributes" in data:  # model_copy / explicit attributes
            super().__init__(**data)
        else:
            super().__init__(attributes={"input": input}, **data)

    @property
    def input(self) -> Any:
        """The input record."""
        return self.attributes.get("input")


class OutputEvent(Event):
    """A result of the run; its ``output`` goes downstream."""

    EVENT_TYPE: ClassVar[str] = "_output_event"
    ATTRIBUTE_TYPES: ClassVar[Mapping[str, Any]] = {"output": AnyValue}

    def __init__(self, output: Any = None, **data: Any) -> None:
        if "attributes" in data:
            super().__init__(**data)
        else:
            super().__init__(attributes={"output": output}, **data)

    @property
    def output(self) -> Any:
        """The output record."""
        return self.attributes.get("output")
