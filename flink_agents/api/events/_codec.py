"""JSON encoding of event attributes and run state values.

Values are plain JSON where they can be. A pydantic model is written as
``{"__pydantic__": "module:QualName", "data": {...}}`` so it comes back as the same
class when that class can be imported (or was seen in this process). A class
reference (an output schema) is written as its ``"module:QualName"`` path.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, PlainSerializer, PlainValidator
from pydantic_core import to_jsonable_python

__all__ = [
    "AnyValue",
    "ModelClassRef",
    "check_state_value",
    "decode_value",
    "encode_value",
    "resolve_type_path",
    "type_path",
]

_MODEL_TAG = "__pydantic__"
_SEEN: dict[str, type] = {}
_SEEN_LOCK = threading.Lock()


def type_path(cls: type) -> str:
    """``module:QualName`` of a class; remembered so this process can resolve it back."""
    path = f"{cls.__module__}:{cls.__qualname__}"
    if _SEEN.get(path) is not cls:
        with _SEEN_LOCK:
            _SEEN[path] = cls
    return path


def resolve_type_path(path: str) -> type:
    """The class a `type_path` names: one seen in this process, else imported."""
    seen = _SEEN.get(path)
    if seen is not None:
        return seen
    module_name, _, qualname = path.partition(":")
    if not module_name or not qualname or "<locals>" in qualname:
        raise ValueError(f"class {path!r} cannot be imported (define it at module level)")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise TypeError(f"{path!r} is not a class")
    return obj


_PLAIN = (str, int, bool)


def check_state_value(value: Any, path: str = "value") -> None:
    """Raise `TypeError` naming where (`path`) and what, unless `value` can be kept in agent
    state and come back as the same value: None, strings, booleans, integers, finite floats,
    pydantic models, dicts with string keys and lists or tuples of such values.

    Bytes, sets, datetimes and other objects outside a pydantic model are refused: JSON would
    turn them into something else (put them in a model field, or encode them yourself)."""
    if value is None or isinstance(value, _PLAIN):
        return
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise TypeError(f"{path} is {value!r}, which agent state cannot keep")
        return
    if isinstance(value, BaseModel) or (isinstance(value, type) and issubclass(value, BaseModel)):
        return  # a model, or a model class (an output schema: kept as its import path)
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(
                    f"{path} has a key of type {type(k).__name__} ({k!r}): agent state keeps "
                    "dicts with string keys only"
                )
            check_state_value(v, f"{path}[{k!r}]")
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_state_value(v, f"{path}[{i}]")
        return
    raise TypeError(
        f"{path} is a value of type {type(value).__name__}, which agent state cannot keep as "
        "JSON (use str, numbers, bools, lists, dicts with string keys or pydantic models)"
    )


def encode_value(value: Any) -> Any:
    """A JSON-compatible form of ``value`` (see the module doc)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, BaseModel):
        return {_MODEL_TAG: type_path(type(value)), "data": value.model_dump(mode="json")}
    if isinstance(value, Mapping):
        return {str(k): encode_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    try:
        return to_jsonable_python(value)
    except Exception as exc:  # pydantic raises PydanticSerializationError
        raise TypeError(
            f"a value of type {type(value).__name__} cannot be written to agent state as JSON"
        ) from exc


def decode_value(value: Any) -> Any:
    """The inverse of `encode_value`; a model whose class is gone stays a dict."""
    if isinstance(value, dict):
        if len(value) == 2 and _MODEL_TAG in value and "data" in value:
            try:
                cls = resolve_type_path(value[_MODEL_TAG])
            except (ImportError, AttributeError, ValueError, TypeError):
                return decode_value(value["data"])
            if isinstance(cls, type) and issubclass(cls, BaseModel):
                return cls.model_validate(value["data"])
            return decode_value(value["data"])
        return {k: decode_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return value


def _encode_class(cls: type | None) -> str | None:
    return None if cls is None else type_path(cls)


def _decode_class(value: Any) -> type[BaseModel] | None:
    if value is None:
        return None
    cls = resolve_type_path(value) if isinstance(value, str) else value
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        raise TypeError(f"{value!r} is not a pydantic model class")
    return cls


def _decode_any(value: Any) -> Any:
    # Live values (not from JSON) pass through untouched.
    if isinstance(value, (dict, list)):
        return decode_value(value)
    return value


AnyValue = Annotated[
    Any,
    PlainValidator(_decode_any),
    PlainSerializer(encode_value, when_used="json"),
]
"""Any JSON-able value; pydantic models keep their class across a JSON round trip."""

ModelClassRef = Annotated[
    type[BaseModel] | None,
    PlainValidator(_decode_class),
    PlainSerializer(_encode_class, when_used="json"),
]
"""A pydantic model class, written as its import path."""
