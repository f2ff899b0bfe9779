"""Inputs whose run failed: the failure record, and how it travels with a run's outputs.

Under `input-failure.policy: skip` a run that fails (after `input-failure.retries` more tries)
is abandoned; its only "output" is a `FailedInput` holding the failure record. The runners
treat it like any output (so it is exactly once across restores, like outputs) and send its
record to the error stream instead of the output stream.

A failure record is a plain JSON-able dict:

| field | what |
|---|---|
| `key` | the input's key (`key_name` for a key with no text: its `repr`, or a stand-in) |
| `input` | the input as received (`repr` or a stand-in if no JSON), secrets and payloads redacted |
| `action` | the action that raised (None: the input was refused before any action ran) |
| `event_type` | the type of the event that action was processing |
| `error_type` | the original exception's class name |
| `message` | the original exception's message (secrets redacted) |
| `attempts` | how often the run was tried |
| `failed_at` | when it was given up, ISO 8601 UTC |

A record is itself always keepable: every text in it is valid UTF-8 and bounded, whatever the
input held. A value with no printable form is named by a stable stand-in,
`<unprintable input of type T, sha256 0123456789abcdef>` (the digest of its pickle, when it
has one), so the same bad input gets the same record on every runner and every attempt.

The door (`accept_key` here, `scheduler.admit` for values) turns every way a key or a value
can fail to be kept into one `InputRefusedError`: skipped with a failure record under `skip`,
raised under `fail`.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
from datetime import datetime, timezone
from typing import Any

from pydantic_core import from_json, to_json

from flink_agents.api._values import encode_value
from flink_agents.api.redaction import redact, redact_value
from flink_agents.runtime.errors import InputRefusedError
from flink_agents.runtime.keys import encode_key

__all__ = [
    "FailedInput",
    "accept_key",
    "failure_record",
    "key_name",
    "log_failure",
    "message_of",
    "original_error",
    "printable",
    "refusal",
]

_LOG = logging.getLogger("flink_agents.input_failure")


class FailedInput:
    """A failure record in a run's outputs (see the module doc)."""

    __slots__ = ("record",)

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FailedInput) and other.record == self.record

    def __hash__(self) -> int:  # pragma: no cover - records are dicts; identity is enough
        return id(self)

    def __repr__(self) -> str:
        return f"FailedInput({self.record!r})"


def original_error(error: BaseException) -> BaseException:
    """The user's exception behind the runtime's wrappers (`ActionExecutionError`)."""
    action = getattr(error, "action", None)
    if action is not None and error.__cause__ is not None:
        return error.__cause__
    return error


_MAX_REPR = 1000
"""Characters of a `repr` a failure record keeps."""


def _utf8(text: str) -> str:
    """`text` with what UTF-8 cannot hold (lone surrogates) written as escapes."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def printable(value: Any, what: str) -> str:
    """`value`'s `repr` (UTF-8 safe, at most `_MAX_REPR` characters), or a stable stand-in
    when it has none (its `repr` raises, or is the default one with an address in it)."""
    if type(value).__repr__ is not object.__repr__:
        try:
            text = repr(value)
        except Exception:
            pass
        else:
            if isinstance(text, str):
                text = _utf8(text)
                return text if len(text) <= _MAX_REPR else text[:_MAX_REPR] + "..."
    try:
        digest = ", sha256 " + hashlib.sha256(pickle.dumps(value, protocol=5)).hexdigest()[:16]
    except Exception:
        digest = ""
    return f"<unprintable {what} of type {type(value).__name__}{digest}>"


def key_name(key: Any) -> str:
    """How errors and failure records name `key`: its key text, or (a key without one)
    `printable(key, "key")`."""
    try:
        return encode_key(key)
    except Exception:
        return printable(key, "key")


def message_of(error: BaseException) -> str:
    """`str(error)`, redacted and UTF-8 safe (a stand-in when `__str__` raises)."""
    try:
        text = str(error)
    except Exception:
        text = f"<unprintable {type(error).__name__} message>"
    return redact(_utf8(text))


def refusal(key: str, error: BaseException) -> InputRefusedError:
    """`error` (why an input of the key named `key` cannot be kept) as the door's error."""
    if isinstance(error, InputRefusedError):
        return error
    return InputRefusedError(key, type(error).__name__, message_of(error))


def accept_key(key: Any) -> str:
    """`key`'s text (`encode_key`); `InputRefusedError` for a key that has none."""
    try:
        return encode_key(key)
    except Exception as exc:
        raise refusal(key_name(key), exc) from None


def _json_able(value: Any, what: str) -> Any:
    """`value`'s JSON form when it has one that JSON text can hold, else `printable`."""
    try:
        encoded = encode_value(value)
        from_json(to_json(encoded))  # UTF-8 text and numbers JSON can read back
    except Exception:
        return printable(value, what)
    return encoded


def _key_field(key: Any) -> Any:
    """A failure record's `key`: the key's JSON form, or its `key_name` if it has no text
    (the same on both runners: Flink's key selector sends only the name)."""
    try:
        encode_key(key)
    except Exception:
        return key_name(key)
    return _json_able(key, "key")


def failure_record(key: Any, value: Any, error: BaseException, attempts: int) -> dict[str, Any]:
    """The failure record of `value` (an input of `key`) whose run raised `error`."""
    cause = original_error(error)
    if isinstance(cause, InputRefusedError):
        error_type, message = cause.cause_type, cause.cause_message
    else:
        error_type, message = type(cause).__name__, message_of(cause)
    return {
        "key": _key_field(key),
        "input": redact_value(_json_able(value, "input")),  # no secret, payload or media URL
        "action": getattr(error, "action", None),
        "event_type": getattr(error, "event_type", None),
        "error_type": error_type,
        "message": message,
        "attempts": attempts,
        "failed_at": datetime.now(timezone.utc).isoformat(),
    }


def log_failure(record: dict[str, Any]) -> None:
    """Log a failure record at WARNING with its fields."""
    _LOG.warning(
        "input skipped after %d attempt(s): key %r, action %r, event type %r: %s: %s",
        record["attempts"],
        record["key"],
        record["action"],
        record["event_type"],
        record["error_type"],
        record["message"],
    )
