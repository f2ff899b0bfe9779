"""Agent values as JSON and back: one codec for event attributes, agent state (inputs,
memory, outputs), the durable call log and durable call digests.

The tagged form (`encode_value`, `decode_value`) gives back the value it was made from:

- ``None``, ``bool``, ``int``, finite ``float``, ``str``, lists and mappings with ``str``
  keys are themselves (subclasses of ``str``, ``int``, ``float``, ``list`` and mappings come
  back as the plain type);
- a tuple is ``{"$tuple": [...]}``;
- a PyFlink ``Row`` is ``{"$row": [...], "$names": [...]}`` (names when it has them; read
  back as a ``Row``, which needs PyFlink, else as a dict or a list);
- an enum member is ``{"$enum": "module:Class", "$value": value}``;
- a `UUID` (an event id) is ``{"$uuid": "its text"}``;
- a pydantic model is ``{"$model": "module:Class", "$data": model.model_dump(mode="json")}``,
  rebuilt with ``Class.model_validate``; a pydantic model class (an output schema) is
  ``{"$class": "module:Class"}``;
- a dict key starting with ``$`` is written with one more ``$``, so it never reads as a tag.

Anything else (bytes, sets, datetimes outside a model, dicts with non-string keys, NaN and
infinities, other objects, nesting deeper than 200) raises `UnencodableValueError`, which
names types, never values.

Classes are named by their ``module:qualname`` (`class_path`). By default a value may name
any class this process has written, even one that cannot be imported by name (defined in a
function, or in a script shipped by cloudpickle), and a class that cannot be found comes
back as its plain data. With ``by_name=True`` (records another process replays) every class
must be importable by its name when written, and reading a class that cannot be found, or
data that no longer fits its class, raises `UndecodableValueError`.

Reading never imports a module of its own accord: a class is looked for in the modules
this process has imported, or in one that ``stored-classes.allowed-modules`` allows
(`flink_agents.api._class_path.find_stored_class`); a path naming a class of any other
module raises `StoredClassRefusedError`, in both modes, and imports nothing.

A Flink job's script is ``__main__`` where the job was built but not in the workers, which
get its classes by value (cloudpickle). `register_script_classes` (called in each worker
before it reads state) makes them known by their ``__main__:Name`` paths, in both modes:
a restored job reads its state, and replays its records, with the classes of its script.
The last registration of a path wins (one TaskManager interpreter, thread mode, running
two jobs whose scripts define different classes of the same name: see docs/deployment.md).

The canonical form (`canonical_value`, `canonical_json`) is what durable call digests are
computed over: the same walk without tags (tuples are arrays, UUIDs their text, enum members
their values, models their ``model_dump(mode="json")``, model classes their path), written
with sorted keys and compact separators. So it is the same in every process, and values that
are equal after a JSON round trip (a tuple and its list, a model and its dict) have the same
form.

The crossing form (`crossing_value`) is what a value becomes where upstream (Apache Flink
Agents 0.3 and later) passes it between operators as event JSON: the canonical form, except
that a PyFlink ``Row`` stays a ``Row`` (of crossing values; upstream writes rows in its event
JSON with a tag of their own and reads them back). On Flink, `to_datastream()` hands
downstream the agent's outputs in this form.

`check_state_value` is the door: it refuses, naming where, what agent state cannot keep and
give back as the same value (inputs are checked when they arrive, events when they are sent).
"""

from __future__ import annotations

import json
import math
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Annotated, Any, TypeGuard

from pydantic import BaseModel, PlainSerializer, PlainValidator

from flink_agents.api._class_path import class_path, find_class, find_stored_class
from flink_agents.api._event_ids import event_id

__all__ = [
    "AnyValue",
    "ModelClassRef",
    "UndecodableValueError",
    "UnencodableValueError",
    "canonical_json",
    "canonical_value",
    "check_state_value",
    "crossing_value",
    "decode_value",
    "encode_value",
    "is_row",
    "register_script_classes",
]

_MODEL = "$model"
_DATA = "$data"
_CLASS = "$class"
_TUPLE = "$tuple"
_ENUM = "$enum"
_ENUM_VALUE = "$value"
_ROW = "$row"
_ROW_NAMES = "$names"
_UUID = "$uuid"
_MAX_DEPTH = 200


class UnencodableValueError(TypeError):
    """A value (or a part of it) has no JSON form here; ``reason`` says which part, by type."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"value cannot be written as JSON: {reason}")
        self.reason = reason
        """What was found, as ``it contains a value of type set``; never the value itself."""


class UndecodableValueError(ValueError):
    """A tagged value names a class that cannot be found, or its data no longer fits."""


# ------------------------------------------------------------------ classes by name

_SEEN: dict[str, type] = {}
_SEEN_LOCK = threading.Lock()
_SCRIPT: dict[str, type] = {}


def register_script_classes(classes: Iterable[type]) -> None:
    """Name ``classes`` (a job script's, which a worker got by value) by their paths here,
    also for ``by_name`` records: see the module doc."""
    with _SEEN_LOCK:
        for cls in classes:
            path = class_path(cls)
            _SCRIPT[path] = _SEEN[path] = cls


def _class_name(cls: type, by_name: bool) -> str:
    """The path a value's class is written as; remembered so this process can read it back
    (with ``by_name``: refused unless the path imports to this very class, or names it as
    a registered script class)."""
    path = class_path(cls)
    if by_name:
        if _SCRIPT.get(path) is not cls and find_class(path) is not cls:
            raise UnencodableValueError(
                f"its class {cls.__qualname__} cannot be imported by name as {path} "
                "(define it at module level)"
            )
    elif _SEEN.get(path) is not cls:
        with _SEEN_LOCK:
            _SEEN[path] = cls
    return path


def _named_class(path: Any, by_name: bool) -> type | None:
    """The class a written path names: one this process wrote (unless ``by_name``), else
    one of an imported or allowed module (`find_stored_class`: `StoredClassRefusedError`
    for any other); None when there is none."""
    if not isinstance(path, str):
        return None
    found = _SCRIPT.get(path) if by_name else _SEEN.get(path)
    return found if found is not None else find_stored_class(path)


def is_row(value: Any) -> bool:
    """A PyFlink ``Row`` (an output a ``RowTypeInfo`` schema asks for), known without
    importing PyFlink."""
    cls = type(value)
    return cls.__name__ == "Row" and cls.__module__ == "pyflink.common.types"


def _row_names(row: Any) -> list[str] | None:
    names = getattr(row, "_fields", None)  # a Row without names has no such attribute
    return list(names) if names is not None else None


def _make_row(values: list[Any], names: Any) -> Any:
    try:
        from pyflink.common import Row  # pyright: ignore[reportMissingImports]
    except ImportError:  # no PyFlink where it is read: its plain data
        return dict(zip(names, values, strict=True)) if isinstance(names, list) else values
    row = Row(*values)
    if isinstance(names, list):
        row.set_field_names(names)
    return row


def _is_model_class(value: Any) -> TypeGuard[type[BaseModel]]:
    return isinstance(value, type) and issubclass(value, BaseModel)


# ------------------------------------------------------------------ the door

_PLAIN = (str, int, bool)


def check_state_value(value: Any, path: str = "value") -> None:
    """Raise `TypeError` naming where (`path`) and what, unless `value` can be kept in agent
    state and come back as the same value: None, strings, booleans, integers, finite floats,
    UUIDs, pydantic models, dicts with string keys and lists or tuples of such values.

    Bytes, sets, datetimes and other objects outside a pydantic model are refused: JSON would
    turn them into something else (put them in a model field, or encode them yourself)."""
    refusal = _refusal(value)
    if refusal is not None:
        where, why = refusal
        raise TypeError(f"{path}{where} {why}")


def _refusal(value: Any) -> tuple[str, str] | None:
    """Why `value` cannot be kept (where inside it, and what), or None. Runs on every sent
    event: the path is only built on the way out of a refusal."""
    if value is None or isinstance(value, _PLAIN):
        return None
    kind = type(value)
    if kind is dict:  # the common containers first, without the ABC checks below
        return _item_refusal(value)
    if kind is list:
        return _element_refusal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return "", f"is {value!r}, which agent state cannot keep"
        return None
    if isinstance(value, (BaseModel, uuid.UUID)) or _is_model_class(value):
        return None  # a model, a model class (an output schema), an event id
    if is_row(value) or isinstance(value, (list, tuple)):
        return _element_refusal(value)
    if isinstance(value, Mapping):
        return _item_refusal(value)
    return "", (
        f"is a value of type {type(value).__name__}, which agent state cannot keep as "
        "JSON (use str, numbers, bools, lists, dicts with string keys or pydantic models)"
    )


def _item_refusal(value: Mapping[Any, Any]) -> tuple[str, str] | None:
    for k, v in value.items():
        if not isinstance(k, str):
            return "", (
                f"has a key of type {type(k).__name__} ({k!r}): agent state keeps "
                "dicts with string keys only"
            )
        refusal = _refusal(v)
        if refusal is not None:
            return f"[{k!r}]{refusal[0]}", refusal[1]
    return None


def _element_refusal(value: Any) -> tuple[str, str] | None:
    for i, v in enumerate(value):
        refusal = _refusal(v)
        if refusal is not None:
            return f"[{i}]{refusal[0]}", refusal[1]
    return None


# ------------------------------------------------------------------ writing


class _Writer:
    """One walk for both forms: tagged (`encode_value`) or canonical (`canonical_value`)."""

    __slots__ = ("by_name", "rows", "tagged", "unknown")

    def __init__(
        self,
        *,
        tagged: bool,
        by_name: bool = False,
        unknown: Callable[[Any], Any] | None = None,
        rows: bool = False,
    ) -> None:
        self.tagged = tagged
        self.by_name = by_name
        self.unknown = unknown
        self.rows = rows
        """Untagged: PyFlink Rows stay Rows (`crossing_value`)."""

    def refuse(self, value: Any, reason: str) -> Any:
        if self.unknown is not None:
            return self.unknown(value)
        raise UnencodableValueError(reason)

    def write(self, value: Any, depth: int = 0) -> Any:
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None:
            return value
        if depth > _MAX_DEPTH:
            return self.refuse(value, f"it is nested more than {_MAX_DEPTH} levels deep (a cycle?)")
        if kind is list:
            return [self.write(item, depth + 1) for item in value]
        if kind is dict:
            return self.write_mapping(value, depth)
        if isinstance(value, Enum):
            if not self.tagged:
                return self.write(value.value, depth + 1)
            path = _class_name(kind, self.by_name)
            return {_ENUM: path, _ENUM_VALUE: self.write(value.value, depth + 1)}
        if isinstance(value, float):
            if not math.isfinite(value):
                return self.refuse(
                    value, "it contains a float that is NaN or an infinity (JSON has neither)"
                )
            return float(value)
        if isinstance(value, int):
            return int(value)
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, BaseModel):
            return self.write_model(value)
        if _is_model_class(value):
            if not self.tagged:
                return class_path(value)
            return {_CLASS: _class_name(value, self.by_name)}
        if is_row(value):
            items = [self.write(item, depth + 1) for item in value]
            names = _row_names(value)
            if self.rows:
                return _make_row(items, names)
            if not self.tagged:
                return dict(zip(names, items, strict=True)) if names is not None else items
            return {_ROW: items, _ROW_NAMES: names}
        if isinstance(value, tuple):
            items = [self.write(item, depth + 1) for item in value]
            return {_TUPLE: items} if self.tagged else items
        if isinstance(value, uuid.UUID):
            return {_UUID: str(value)} if self.tagged else str(value)
        if isinstance(value, list):
            return [self.write(item, depth + 1) for item in value]
        if isinstance(value, Mapping):
            return self.write_mapping(value, depth)
        return self.refuse(value, f"it contains a value of type {kind.__qualname__}")

    def write_mapping(self, value: Mapping[Any, Any], depth: int) -> Any:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    return self.refuse(
                        value,
                        f"it has a dict key of type {type(key).__qualname__} "
                        "(JSON keys are strings)",
                    )
                key = str.__str__(key)
            if self.tagged and key[:1] == "$":
                key = "$" + key
            out[key] = self.write(item, depth + 1)
        return out

    def write_model(self, value: BaseModel) -> Any:
        try:
            data = value.model_dump(mode="json")
        except Exception as exc:  # serialization errors may quote values: drop them
            return self.refuse(
                value,
                f"model_dump(mode='json') of {type(value).__qualname__} failed "
                f"({type(exc).__name__})",
            )
        if not self.tagged:
            return data
        return {_MODEL: _class_name(type(value), self.by_name), _DATA: data}


def encode_value(value: Any, *, by_name: bool = False) -> Any:
    """The tagged JSON form of ``value`` (plain dicts, lists, strings, numbers, booleans and
    None; see the module doc). `UnencodableValueError` when it has none; with ``by_name``,
    also when a class in it cannot be imported by its name."""
    return _Writer(tagged=True, by_name=by_name).write(value)


def canonical_value(value: Any, *, unknown: Callable[[Any], Any] | None = None) -> Any:
    """The canonical JSON form of ``value`` (see the module doc).

    A part with no JSON form raises `UnencodableValueError`, or, given ``unknown``, is
    replaced by what ``unknown`` returns for it.
    """
    return _Writer(tagged=False, unknown=unknown).write(value)


def canonical_json(value: Any, *, unknown: Callable[[Any], Any] | None = None) -> str:
    """`canonical_value` as text: sorted keys, compact separators, ASCII only."""
    return json.dumps(
        canonical_value(value, unknown=unknown),
        sort_keys=True,
        separators=(",", ":"),
        allow_nan=False,
    )


_CROSSING = _Writer(tagged=False, rows=True)


def crossing_value(value: Any) -> Any:
    """``value`` as upstream's event JSON carries it between operators (see the module doc):
    models as their ``model_dump(mode="json")``, tuples as lists, enum members as their
    values, UUIDs as their text, Rows kept. `UnencodableValueError` when it has no JSON form
    (a model whose ``model_dump(mode="json")`` fails, a set, bytes...)."""
    return _CROSSING.write(value)


# ------------------------------------------------------------------ reading


class _Reader:
    __slots__ = ("by_name",)

    def __init__(self, by_name: bool) -> None:
        self.by_name = by_name

    def missing(self, what: str, fallback: Any) -> Any:
        if self.by_name:
            raise UndecodableValueError(f"{what} that cannot be imported now")
        return fallback

    def read(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.read(item) for item in node]
        if not isinstance(node, dict):
            return node
        if _MODEL in node:
            return self.read_model(node[_MODEL], node.get(_DATA))
        if _ROW in node:
            return _make_row([self.read(item) for item in node[_ROW]], node.get(_ROW_NAMES))
        if _TUPLE in node:
            return tuple(self.read(item) for item in node[_TUPLE])
        if _UUID in node:
            return event_id(node[_UUID])
        if _ENUM in node:
            return self.read_enum(node[_ENUM], self.read(node.get(_ENUM_VALUE)))
        if _CLASS in node:
            path = node[_CLASS]
            cls = _named_class(path, self.by_name)
            if not _is_model_class(cls):
                return self.missing(f"{path} is a model class", path)
            return cls
        return {(key[1:] if key[:1] == "$" else key): self.read(item) for key, item in node.items()}

    def read_model(self, path: Any, data: Any) -> Any:
        cls = _named_class(path, self.by_name)
        if cls is None or not issubclass(cls, BaseModel):
            return self.missing(f"{path} is a model class", data)
        try:
            return cls.model_validate(data)
        except Exception as exc:
            if not self.by_name:
                raise
            raise UndecodableValueError(
                f"{path} no longer validates against the class ({type(exc).__name__})"
            ) from None

    def read_enum(self, path: Any, value: Any) -> Any:
        cls = _named_class(path, self.by_name)
        if cls is None or not issubclass(cls, Enum):
            return self.missing(f"{path} is an enum", value)
        try:
            return cls(value)
        except ValueError:
            if not self.by_name:
                raise
            raise UndecodableValueError(f"{path} no longer has the member's value") from None


def decode_value(data: Any, *, by_name: bool = False) -> Any:
    """The value `encode_value` wrote as ``data`` (see the module doc for a class that
    cannot be found)."""
    return _Reader(by_name).read(data)


# ------------------------------------------------------------------ pydantic fields


def _read_any(value: Any) -> Any:
    # Live values (not from JSON) pass through untouched.
    if isinstance(value, (dict, list)):
        return decode_value(value)
    return value


def _write_any(value: Any) -> Any:
    return encode_value(value)


def _write_class(cls: type | None) -> str | None:
    return None if cls is None else _class_name(cls, by_name=False)


def _read_class(value: Any) -> type[BaseModel] | None:
    if value is None:
        return None
    cls = _named_class(value, by_name=False) if isinstance(value, str) else value
    if not _is_model_class(cls):
        raise TypeError(f"{value!r} is not a pydantic model class that can be found here")
    return cls


AnyValue = Annotated[
    Any,
    PlainValidator(_read_any),
    PlainSerializer(_write_any, when_used="json"),
]
"""Any value `encode_value` takes; written in its tagged form, so pydantic models, tuples
and enum members keep their type across a JSON round trip."""

ModelClassRef = Annotated[
    type[BaseModel] | None,
    PlainValidator(_read_class),
    PlainSerializer(_write_class, when_used="json"),
]
"""A pydantic model class, written as its ``module:qualname``."""
