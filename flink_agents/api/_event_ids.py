"""Event ids: `UUID`s (as upstream), and the text ids of older versions of this package.

An event's id is a version-4 `UUID`. A runner derives the ids of a run's events from their
place in the run (`derived_event_id`), so a replayed run makes the same ones. Checkpoints
and logs written by older versions hold ids that are strings but no UUID text: `event_id`
reads those as `UUID`s that are written back as the same text, so that what was keyed by
them (open chat loops, approvals, durable call arguments) still matches after a restore.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

__all__ = ["derived_event_id", "event_id"]


def derived_event_id(text: str) -> uuid.UUID:
    """The version-4 UUID derived from ``text``: the same for the same text, in every
    process (a runner's ids of a run's events, which a replay makes again)."""
    return uuid.UUID(
        bytes=hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest(), version=4
    )


class _TextId(uuid.UUID):
    """An id written by an older version of this package, whose ids were strings that are
    no UUID: the UUID derived from that text (`derived_event_id`), written back as the
    text, so that what was keyed by it (open chat loops, approvals, durable call
    arguments) still matches after a restore."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
        super().__init__(bytes=digest, version=4)
        object.__setattr__(self, "_text", text)

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._text!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_TextId, (self._text,))


_UUID_TEXT_LENGTH = 36


def event_id(value: uuid.UUID | str) -> uuid.UUID:
    """An event id as given: a `UUID`, its text, or (from a checkpoint or log of an older
    version) any other non-empty string, kept as its text. `ValueError` otherwise."""
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str) and value:
        if len(value) == _UUID_TEXT_LENGTH:
            try:
                return uuid.UUID(value)
            except ValueError:
                pass
        return _TextId(value)
    raise ValueError(f"an event id is a UUID or its text, got {value!r}")
