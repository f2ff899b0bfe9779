"""`Event`: what actions consume and send, with its lineage and JSON form.

An event is a ``type`` string plus ``attributes``. Typed subclasses (`InputEvent`,
`ChatRequestEvent`...) give constructors and properties over the attributes and
declare the attributes' types, so ``Event.from_json(event.to_json())`` returns an
instance of the same subclass with equal attributes.

As upstream (Apache Flink Agents), a custom event needs no subclass:
``Event(type="order_checked", order_id=7)`` keeps ``order_id`` in its attributes, and
``event.order_id`` / ``event.get_attr("order_id")`` read it back. ``MyEvent.from_event(event)``
gives the typed view of an event of ``MyEvent``'s type.
"""

from __future__ import annotations

import itertools
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_serializer,
)
from pydantic_core import PydanticSerializationError, from_json, to_json

from flink_agents.api._event_ids import derived_event_id, event_id, uuid_of, version_4_bits
from flink_agents.api._trusted import fill_trusted, trusted_instance
from flink_agents.api._values import AnyValue, check_state_value, is_row

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "Event",
    "EventId",
    "InputEvent",
    "OutputEvent",
    "bind_event_ids",
    "derived_event_id",
    "event_class_for",
    "event_id",
    "event_ids_from",
    "release_event_ids",
    "request_id_of",
]

_REGISTRY: dict[str, type[Event]] = {}
_REGISTRY_LOCK = threading.Lock()
_ANY_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyValue)


_LINEAGE_FIELDS = frozenset({"id", "upstream_event_id", "upstream_action_name"})
_FIELDS = frozenset({"type", "attributes", *_LINEAGE_FIELDS})
_ID_FIELDS = frozenset({"id", "upstream_event_id"})
_LINEAGE_ALIASES = {
    "upstreamEventId": "upstream_event_id",
    "upstreamActionName": "upstream_action_name",
}
"""Upstream's cross-language names of the lineage fields, accepted as keywords and used in
pydantic's dumps of an event (`Event.model_dump_json`)."""
_LINEAGE_NAMES = {field: alias for alias, field in _LINEAGE_ALIASES.items()}


_ID_PREFIX = version_4_bits(int.from_bytes(os.urandom(16), "big"))
_ID_COUNTER = itertools.count()


_ID_SOURCE: ContextVar[Callable[[], uuid.UUID] | None] = ContextVar(
    "flink_agents_event_ids", default=None
)


def _new_id() -> uuid.UUID:
    source = _ID_SOURCE.get()
    if source is not None:  # made inside an action: the runner's deterministic id
        return source()
    # Unique without a system call per event (the runner gives an event made outside an
    # action a deterministic id when it is sent): a random per-process half and a counter.
    return uuid_of(_ID_PREFIX ^ next(_ID_COUNTER))


def _event_id_or_given(value: Any) -> Any:
    return event_id(value) if isinstance(value, str) else value


EventId = Annotated[
    uuid.UUID,
    BeforeValidator(_event_id_or_given),
    PlainSerializer(str, when_used="json"),
]
"""The type of an attribute that holds an event id (a response's ``request_id``): a
`UUID`, read from its text (or an older version's text id, `event_id`) and written as it."""


def request_id_of(event: Event) -> uuid.UUID:
    """The ``request_id`` attribute of a response event, as a `UUID` (`event_id`)."""
    return event_id(event.attributes["request_id"])


@contextmanager
def event_ids_from(source: Callable[[], uuid.UUID]) -> Iterator[None]:
    """While the block runs (in this context and copies of it), events made take their
    ids from ``source``. A runner sets it around each action, so that an event's ``id`` is
    fixed when the action makes it (as upstream, where it is a UUID made then) and is the
    same when the run is replayed."""
    token = bind_event_ids(source)
    try:
        yield
    finally:
        release_event_ids(token)


def bind_event_ids(
    source: Callable[[], uuid.UUID],
) -> Token[Callable[[], uuid.UUID] | None]:
    """`event_ids_from` without a context manager (a runner's per-action path): binds
    ``source`` until `release_event_ids` gets the token back."""
    return _ID_SOURCE.set(source)


def release_event_ids(token: Token[Callable[[], uuid.UUID] | None]) -> None:
    """Ends the binding `bind_event_ids` made (in the same context)."""
    _ID_SOURCE.reset(token)


def _lineage_id(name: str, value: Any) -> uuid.UUID | None:
    """A lineage id field as given (None stays None)."""
    if value is None:
        return None
    try:
        return event_id(value)
    except ValueError:
        raise ValueError(f"Event.{name} must be a UUID or its text, got {value!r}") from None


def _name_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"Event.upstream_action_name must be a string, got {value!r}")


class Event(BaseModel):
    """Something that happened in an agent run; actions are triggered by its ``type``.

    ``id`` is unique and fixed when the event is made: inside an action it comes from the
    run's position (the action's step and the order in which it made its events), so a
    replayed run makes the same ids. An event made elsewhere gets such an id when it is
    sent. The runner sets ``upstream_event_id`` (the event that triggered the sending
    action) and ``upstream_action_name`` when the event is sent. Ids are strings; an id
    given as a `UUID` (upstream's type) is kept as its text.

    Keywords other than the fields are attributes: ``Event(type="t", n=1)`` is
    ``Event(type="t", attributes={"n": 1})``, and ``event.n`` reads (``event.n = 2``
    writes) the attribute when no field or property has that name.
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
    id: uuid.UUID = Field(default_factory=_new_id, frozen=True)
    """Unique id of this event (cannot be assigned: a copy with another id is another
    event)."""
    upstream_event_id: uuid.UUID | None = Field(
        default=None, validation_alias=AliasChoices("upstream_event_id", "upstreamEventId")
    )
    """Id of the event whose action sent this one (None for an input)."""
    upstream_action_name: str | None = Field(
        default=None, validation_alias=AliasChoices("upstream_action_name", "upstreamActionName")
    )
    """Name of the action that sent this event."""

    def __init__(
        self, type: str | None = None, attributes: Mapping[str, Any] | None = None, **data: Any
    ) -> None:
        event_type = type or self.EVENT_TYPE
        if not event_type:  # as pydantic reports a missing required field (a ValueError)
            raise ValidationError.from_exception_data(
                "Event",
                [
                    {
                        "type": "value_error",
                        "loc": ("type",),
                        "input": data,
                        "ctx": {"error": ValueError("an Event needs a type")},
                    }
                ],
            )
        if not data:  # the common case: the runtime sets the lineage when it is sent
            lineage: tuple[uuid.UUID, uuid.UUID | None, str | None] = (_new_id(), None, None)
            fields_set = {"type", "attributes"}
        else:
            if not data.keys() <= _LINEAGE_FIELDS:
                data, attributes = self._split_keywords(data, attributes)
            if not data.keys() <= _LINEAGE_FIELDS:
                if attributes:
                    _check_made(self.__class__, event_type, attributes)
                super().__init__(type=event_type, attributes=dict(attributes or {}), **data)
                return
            lineage = (
                _lineage_id("id", data.get("id")) or _new_id(),
                _lineage_id("upstream_event_id", data.get("upstream_event_id")),
                _name_text(data.get("upstream_action_name")),
            )
            fields_set = {"type", "attributes", *data}
        if attributes:
            _check_made(self.__class__, event_type, attributes)
        if isinstance(event_type, str):
            # Events are made on every step: nothing here needs validation beyond the
            # checks above.
            fill_trusted(
                self,
                {
                    "type": event_type,
                    "attributes": dict(attributes) if attributes else {},
                    "id": lineage[0],
                    "upstream_event_id": lineage[1],
                    "upstream_action_name": lineage[2],
                },
                fields_set,
            )
            return
        super().__init__(type=event_type, attributes=dict(attributes or {}), **data)

    @field_validator("id", mode="before")
    @classmethod
    def _new_id_for_none(cls, value: Any) -> Any:
        # As upstream: an explicit None id is a new one; older versions' text ids are kept.
        if value is None:
            return _new_id()
        return event_id(value) if isinstance(value, str) else value

    @field_validator("upstream_event_id", mode="before")
    @classmethod
    def _upstream_id(cls, value: Any) -> Any:
        return event_id(value) if isinstance(value, str) and value else value

    @model_serializer(mode="wrap")
    def _lineage_by_upstream_names(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        # Pydantic's dumps name the lineage as upstream does (its cross-language JSON),
        # and leave it out when there is none; `to_dict` is the runtime's own form.
        dumped = handler(self)
        if isinstance(dumped, dict):
            for field, alias in _LINEAGE_NAMES.items():
                if field in dumped:
                    value = dumped.pop(field)
                    if value is not None:
                        dumped[alias] = value
        return dumped

    @classmethod
    def _split_keywords(
        cls, data: dict[str, Any], attributes: Mapping[str, Any] | None
    ) -> tuple[dict[str, Any], Mapping[str, Any] | None]:
        """Lineage aliases to their fields; keywords that are no field to attributes."""
        fields: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for name, value in data.items():
            name = _LINEAGE_ALIASES.get(name, name)
            if name in cls.model_fields:
                fields[name] = value
            else:
                extra[name] = value
        if not extra:
            return fields, attributes
        merged = dict(attributes or {})
        for name, value in extra.items():
            if name in merged:
                raise ValueError(f"event attribute {name!r} is given twice")
            merged[name] = value
        return fields, merged

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if not cls.__dict__.get("EVENT_TYPE"):
            cls.EVENT_TYPE = f"{cls.__module__}.{cls.__qualname__}"
        cls._adapters = {}
        cls._typed_names = frozenset(
            name for name, kind in cls.ATTRIBUTE_TYPES.items() if kind is not AnyValue
        )
        with _REGISTRY_LOCK:
            _REGISTRY[cls.EVENT_TYPE] = cls

    _adapters: ClassVar[dict[str, TypeAdapter[Any]]] = {}
    _typed_names: ClassVar[frozenset[str]] = frozenset()
    """The attributes of `ATTRIBUTE_TYPES` of a type other than `AnyValue`: the class's
    constructor checked their values."""

    @classmethod
    def _adapter(cls, name: str) -> TypeAdapter[Any]:
        adapter = cls._adapters.get(name)
        if adapter is None:
            declared = cls.ATTRIBUTE_TYPES.get(name)
            adapter = _ANY_ADAPTER if declared is None else TypeAdapter(declared)
            cls._adapters[name] = adapter
        return adapter

    # ------------------------------------------------------------------ upstream's methods

    def get_type(self) -> str:
        """The event's ``type`` (what actions listen to)."""
        return self.type

    def get_attr(self, name: str, default: Any = None) -> Any:
        """An attribute, or ``default`` when it is absent."""
        return self.attributes.get(name, default)

    def set_attr(self, name: str, value: Any) -> None:
        """Set an attribute: `PydanticSerializationError` (as assigning ``event.name``)
        when agent state cannot keep ``value`` (`check_state_value`)."""
        _check_changed(name, value)
        self.attributes[name] = value

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: fields, properties and methods win.
        if name[:1] != "_":
            attributes = self.__dict__.get("attributes")
            if attributes is not None and name in attributes:
                return attributes[name]
        return super().__getattr__(name)  # type: ignore[misc]

    def __setattr__(self, name: str, value: Any) -> None:
        cls = type(self)
        if name[:1] == "_" or name in _FIELDS or hasattr(cls, name) or name in cls.model_fields:
            if name in _ID_FIELDS and isinstance(value, str):
                value = event_id(value)
            super().__setattr__(name, value)
        else:
            _check_changed(name, value)
            self.attributes[name] = value

    @classmethod
    def from_event(cls, event: Event) -> Self:
        """``event`` as an instance of this class: itself when it is one already, else a
        copy with the same id, lineage and attributes (declared attribute types are
        validated, so message dicts become `ChatMessage`...). `ValueError` when its type
        is not this class's."""
        if isinstance(event, cls):
            return event
        if event.type != cls.EVENT_TYPE:
            raise ValueError(
                f"a {event.type!r} event is not a {cls.__name__} (type {cls.EVENT_TYPE!r})"
            )
        attributes: dict[str, Any] = {}
        for name, value in event.attributes.items():
            declared = cls.ATTRIBUTE_TYPES.get(name)
            if declared is None or declared is AnyValue:
                attributes[name] = value  # a live value: nothing to decode
            else:
                attributes[name] = cls._adapter(name).validate_python(value)
        return trusted_instance(
            cls,
            {
                "type": event.type,
                "attributes": attributes,
                "id": event.id,
                "upstream_event_id": event.upstream_event_id,
                "upstream_action_name": event.upstream_action_name,
            },
            set(event.model_fields_set),
        )

    def reconstruct_from(self, source: Event) -> Self:
        """A copy of this event that is the same occurrence as ``source``: its id and
        lineage (upstream's helper for typed ``from_event`` implementations)."""
        return self.model_copy(
            update={
                "attributes": dict(self.attributes),
                "id": source.id,
                "upstream_event_id": source.upstream_event_id,
                "upstream_action_name": source.upstream_action_name,
            }
        )

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
            "id": str(self.id),
            "upstream_event_id": _id_json(self.upstream_event_id),
            "upstream_action_name": self.upstream_action_name,
            "attributes": attributes,
        }

    def model_dump_json(self, **kwargs: Any) -> str:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Pydantic's JSON of the event, as upstream's: a PyFlink ``Row`` in the attributes
        is written ``{"type": "Row", "values": [...], "fields": [...]}`` unless a
        ``fallback`` is given. (`to_json` is the form the runtime keeps and reads back.)"""
        kwargs.setdefault("fallback", _upstream_json_fallback)
        return super().model_dump_json(**kwargs)

    def to_json(self) -> str:
        """The event as a JSON string."""
        return to_json(self.to_dict()).decode("utf-8")

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Event:
        """The event `to_dict` wrote, as its registered subclass (or `Event`)."""
        event_type = data.get("type")
        if not isinstance(event_type, str) or not event_type:
            raise ValueError(f'an event\'s JSON needs a "type" string, got {event_type!r}')
        cls = event_class_for(event_type)
        raw = data.get("attributes") or {}
        attributes = {name: cls._adapter(name).validate_python(v) for name, v in raw.items()}
        return cls.model_construct(
            type=event_type,
            attributes=attributes,
            id=_lineage_id("id", data.get("id")) or _new_id(),
            upstream_event_id=_lineage_id(
                "upstream_event_id", data.get("upstream_event_id", data.get("upstreamEventId"))
            ),
            upstream_action_name=data.get("upstream_action_name", data.get("upstreamActionName")),
        )

    @staticmethod
    def from_json(text: str | bytes) -> Event:
        """The event `to_json` wrote."""
        return Event.from_dict(from_json(text))


def _upstream_json_fallback(value: Any) -> Any:
    """Upstream's JSON of a value pydantic cannot write: a ``Row`` (else the error)."""
    if is_row(value):
        written: dict[str, Any] = {"type": "Row", "values": list(value._values)}
        fields = getattr(value, "_fields", None)
        if fields:
            written["fields"] = list(fields)
        return written
    raise PydanticSerializationError(f"Unable to serialize unknown type: {type(value)}")


_NATIVE = frozenset({str, int, bool, uuid.UUID, type(uuid_of(0))})


def _check_made(cls: type[Event], event_type: Any, attributes: Mapping[str, Any]) -> None:
    """As upstream, an event is refused when it is made with an attribute its JSON cannot
    hold: pydantic's `ValidationError`. (The runner checks again when it is sent: the
    attributes dict can be changed in place.)"""
    # Events are made on every step: only the values of attributes without a declared
    # type are looked at, and those of JSON-native types or models need no walk.
    typed = cls._typed_names
    for name, value in attributes.items():
        if (
            value is not None
            and type(value) not in _NATIVE
            and name not in typed
            and not isinstance(value, BaseModel)
        ):
            break
    else:
        return
    try:
        check_state_value(attributes, "attribute")
    except TypeError as exc:
        raise ValidationError.from_exception_data(
            "Event",
            [
                {
                    "type": "value_error",
                    "loc": ("attributes",),
                    "input": event_type,
                    "ctx": {"error": ValueError(f"a {event_type} event: {exc}")},
                }
            ],
        ) from None


def _check_changed(name: str, value: Any) -> None:
    """As upstream, assigning an attribute its JSON cannot hold raises pydantic's
    `PydanticSerializationError`."""
    if value is None or type(value) in _NATIVE:
        return
    try:
        check_state_value(value, f"attribute {name!r}")
    except TypeError as exc:
        raise PydanticSerializationError(str(exc)) from None


def _id_json(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)


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
