"""Inputs whose run failed: the failure record, and how it travels with a run's outputs.

Under `input-failure.policy: skip` a run that fails (after `input-failure.retries` more tries)
is abandoned; its only "output" is a `FailedInput` holding the failure record. The runners
treat it like any output (so it is exactly once across restores, like outputs) and send its
record to the error stream instead of the output stream.

A failure record is a plain JSON-able dict:

| field | what |
|---|---|
| `key` | the input's key |
| `input` | the input as received (`repr` if it has no JSON form), secrets and payloads redacted |
| `action` | the action that raised (None: the input was refused before any action ran) |
| `event_type` | the type of the event that action was processing |
| `error_type` | the original exception's class name |
| `message` | the original exception's message (secrets redacted) |
| `attempts` | how often the run was tried |
| `failed_at` | when it was given up, ISO 8601 UTC |
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any

from flink_agents.api._values import encode_value
from flink_agents.api.redaction import redact, redact_value

__all__ = ["FailedInput", "failure_record", "log_failure", "original_error"]

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


def _json_able(value: Any) -> Any:
    try:
        return encode_value(value)
    except TypeError:
        return repr(value)


def failure_record(key: Any, value: Any, error: BaseException, attempts: int) -> dict[str, Any]:
    """The failure record of `value` (an input of `key`) whose run raised `error`."""
    cause = original_error(error)
    return {
        "key": _json_able(key),
        "input": redact_value(_json_able(value)),  # no secret, base64 payload or media URL
        "action": getattr(error, "action", None),
        "event_type": getattr(error, "event_type", None),
        "error_type": type(cause).__name__,
        "message": redact(str(cause)),
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
