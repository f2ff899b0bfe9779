"""Turn a call's result or exception into a recorded outcome, and a recorded outcome back.

A result is recorded as the text of its tagged JSON (`flink_agents.api._values`, with every
class importable by its name), so replay gives back what the call returned: JSON values
themselves, tuples, enum members and pydantic models (and model classes) as the same types.
Anything else raises :class:`TypeError` before the call is recorded as done.

Exceptions are recorded as their class (``module:qualname``) and ``str()``; replay raises
``Class(message)`` when the class is found (in a module already imported, or one
``stored-classes.allowed-modules`` allows: a record never makes this process import another)
and accepts the message alone, otherwise a
:class:`~flink_agents.runtime.errors.DurableCallFailedError` with both.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from flink_agents.api._class_path import class_path, find_stored_class
from flink_agents.api._values import (
    UndecodableValueError,
    UnencodableValueError,
    decode_value,
    encode_value,
)
from flink_agents.api.errors import StoredClassRefusedError
from flink_agents.runtime.durable.records import CallOutcome
from flink_agents.runtime.errors import DurableCallFailedError, DurableReplayError

__all__ = [
    "error_outcome",
    "rebuild_exception",
    "replay_outcome",
    "value_outcome",
]


def value_outcome(value: Any, *, function: str = "the function") -> CallOutcome:
    """The outcome of a call that returned ``value``; :class:`TypeError` when it cannot be
    recorded."""
    try:
        tagged = encode_value(value, by_name=True)
    except UnencodableValueError as exc:
        raise TypeError(
            f"durable call to {function} returned a result that cannot be recorded: "
            f"{exc.reason}. Return JSON values, tuples, enums or pydantic models."
        ) from None
    return CallOutcome(status="value", value_json=json.dumps(tagged, separators=(",", ":")))


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
    """``error_type(message)`` when possible, else a :class:`DurableCallFailedError`.

    The class is looked for in the modules already imported, or allowed by
    ``stored-classes.allowed-modules`` (`find_stored_class`); a record naming any other
    module imports nothing and replays as a :class:`DurableCallFailedError`."""
    try:
        cls = find_stored_class(error_type)
    except StoredClassRefusedError:
        cls = None
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
    try:
        tagged = json.loads(outcome.value_json)
    except ValueError:
        raise DurableReplayError("recorded result is not valid JSON") from None
    try:
        return decode_value(tagged, by_name=True)
    except UndecodableValueError as exc:
        raise DurableReplayError(f"recorded result cannot be replayed: {exc}") from None
