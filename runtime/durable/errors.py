"""Errors raised by durable execution."""

from __future__ import annotations

__all__ = [
    "DurableCallFailedError",
    "DurableError",
    "DurableReplayError",
    "DurableStoreError",
]


class DurableError(Exception):
    """Base class of every error raised by the durable-call record itself."""


class DurableStoreError(DurableError):
    """The action-state store could not be read or written.

    Raised instead of running a call whose begin could not be recorded, and after a call whose
    outcome could not be recorded. The job is expected to fail and restart; a call is never run
    a second time silently. The message names the store and the operation, never a password.
    """


class DurableReplayError(DurableError):
    """A recorded outcome cannot be turned back into a value with the code now running.

    For example the pydantic class a result was recorded with no longer exists or no longer
    accepts the recorded JSON. The call is not run again: fix the code or drop the record.
    """


class DurableCallFailedError(DurableError):
    """Replays a recorded exception whose type cannot be rebuilt from its message.

    ``error_type`` is the recorded ``module:qualname`` of the original exception class and
    ``error_message`` its ``str()``.
    """

    def __init__(self, error_type: str, error_message: str) -> None:
        self.error_type = error_type
        self.error_message = error_message
        super().__init__(f"{error_type}: {error_message}")

    def __reduce__(self) -> tuple[type[DurableCallFailedError], tuple[str, str]]:
        return (type(self), (self.error_type, self.error_message))
