"""Turn a call's result or exception into a recorded outcome, and a recorded outcome back.

Results are recorded as tagged JSON so replay gives back what the call returned:

- ``None``, ``bool``, ``int``, finite ``float``, ``str``, ``list`` and ``dict`` with ``str``
  keys are themselves (``str``/``int``/``float`` subclasses become the plain values);
- a tuple is ``{"$tuple": [...]}``; an enum member is ``{"$enum": "module:Class", "$value": v}``;
- a pydantic model is ``{"$model": "module:Class", "$data": model.model_dump(mode="json")}``
  and is rebuilt with ``Class.model_validate``;
- dict keys starting with ``$`` are stored with one more ``$``, so they never read as tags.

A class must be importable by its name (not defined inside a function) to be recorded.
Anything else raises :class:`TypeError` before the call is recorded as done.

Exceptions are recorded as their class (``module:qualname``) and ``str()``; replay raises
``Class(message)`` when the class is importable and accepts the message alone, otherwise a
:class:`~flink_agents.runtime.durable.errors.DurableCallFailedError` with both.
"""

from __future__ import annotations

import json
import math
from enum import Enum
from typing import Any, NoReturn

from pydantic import BaseModel

from flink_agents.runtime.durable._class_path import class_path, resolve_class_path
from flink_agents.runtime.durable.errors import DurableCallFailedError, DurableReplayError
from flink_agents.runtime.durable.records import CallOutcome

__all__ = [
    "decode_value",
    "encode_value",
    "error_outcome",
    "rebuild_exception",
    "replay_outcome",
    "value_outcome",
]

_MODEL = "$model"
_DATA = "$data"
_TUPLE = "$tuple"
_ENUM = "$enum"
_ENUM_VALUE = "$value"


class _NotRecordable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _importable_class_path(cls: type) -> str:
    path = class_path(cls)
    if resolve_class_path(path) is not cls:
        raise _NotRecordable(
            f"its class {cls.__qualname__} cannot be imported by name as {path} "
            "(define it at module level)"
        )
    return path


def _tag(value: Any, depth: int = 0) -> Any:
    if depth > 200:
        raise _NotRecordable("it is nested more than 200 levels deep (a cycle?)")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Enum):
        return {_ENUM: _importable_class_path(type(value)), _ENUM_VALUE: _tag(value.value)}
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotRecordable("it contains NaN or an infinity, which JSON cannot hold")
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, BaseModel):
        path = _importable_class_path(type(value))
        try:
            data = value.model_dump(mode="json")
        except Exception as exc:  # serialization errors may quote values: drop them
            raise _NotRecordable(
                f"model_dump(mode='json') of {type(value).__qualname__} failed "
                f"({type(exc).__name__})"
            ) from None
        return {_MODEL: path, _DATA: data}
    if isinstance(value, tuple):
        return {_TUPLE: [_tag(item, depth + 1) for item in value]}
    if isinstance(value, list):
        return [_tag(item, depth + 1) for item in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _NotRecordable(
                    f"it has a dict key of type {type(key).__qualname__} (JSON keys are strings)"
                )
            key = str.__str__(key)
            out["$" + key if key.startswith("$") else key] = _tag(item, depth + 1)
        return out
    raise _NotRecordable(f"it contains a value of type {type(value).__qualname__}")


def encode_value(value: Any, *, function: str = "the function") -> str:
    """Tagged JSON text of a call's result; :class:`TypeError` when it cannot be recorded."""
    try:
        tagged = _tag(value)
    except _NotRecordable as exc:
        raise TypeError(
            f"durable call to {function} returned a result that cannot be recorded: "
            f"{exc.reason}. Return JSON values, tuples, enums or pydantic models."
        ) from None
    return json.dumps(tagged, separators=(",", ":"), allow_nan=False)


def _untag(node: Any) -> Any:
    if isinstance(node, list):
        return [_untag(item) for item in node]
    if not isinstance(node, dict):
        return node
    if _MODEL in node:
        path = node[_MODEL]
        cls = resolve_class_path(path)
        if cls is None or not issubclass(cls, BaseModel):
            raise DurableReplayError(
                f"recorded result is a {path} model, but that class cannot be imported now"
            )
        try:
            return cls.model_validate(node[_DATA])
        except Exception as exc:
            raise DurableReplayError(
                f"recorded {path} no longer validates against the class ({type(exc).__name__})"
            ) from None
    if _TUPLE in node:
        return tuple(_untag(item) for item in node[_TUPLE])
    if _ENUM in node:
        path = node[_ENUM]
        cls = resolve_class_path(path)
        if cls is None or not issubclass(cls, Enum):
            raise DurableReplayError(
                f"recorded result is a {path} member, but that enum cannot be imported now"
            )
        try:
            return cls(_untag(node[_ENUM_VALUE]))
        except ValueError:
            raise DurableReplayError(
                f"recorded member of {path} is no longer one of its values"
            ) from None
    return {(key[1:] if key.startswith("$") else key): _untag(item) for key, item in node.items()}


def decode_value(text: str) -> Any:
    """The value :func:`encode_value` encoded; :class:`DurableReplayError` when impossible."""
    try:
        tagged = json.loads(text)
    except ValueError:
        raise DurableReplayError("recorded result is not valid JSON") from None
    return _untag(tagged)


def value_outcome(value: Any, *, function: str = "the function") -> CallOutcome:
    """The outcome of a call that returned ``value``."""
    return CallOutcome(status="value", value_json=encode_value(value, function=function))


def _exception_message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return f"<{type(exc).__qualname__} with an unprintable message>"


def error_outcome(exc: Exception) -> CallOutcome:
    """The outcome of a call that raised ``exc``."""
    return CallOutcome(
        status="error", error_type=class_path(type(exc)), error_message=_exception_message(exc)
    )


def rebuild_exception(error_type: str, message: str) -> Exception:
    """``error_type(message)`` when possible, else a :class:`DurableCallFailedError`."""
    cls = resolve_class_path(error_type)
    if cls is not None and issubclass(cls, Exception):
        try:
            return cls(message)
        except Exception:
            pass
    return DurableCallFailedError(error_type, message)


def _raise_recorded(outcome: CallOutcome) -> NoReturn:
    raise rebuild_exception(outcome.error_type or "builtins:Exception", outcome.error_message or "")


def replay_outcome(outcome: CallOutcome) -> Any:
    """Return the recorded value, or raise the recorded exception."""
    if outcome.status == "error":
        _raise_recorded(outcome)
    if outcome.value_json is None:
        raise DurableReplayError("recorded value outcome has no value")
    return decode_value(outcome.value_json)
