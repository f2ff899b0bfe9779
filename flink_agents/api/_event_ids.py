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

__all__ = [
    "COUNTER_BITS",
    "derived_bits",
    "derived_event_id",
    "event_id",
    "uuid_of",
    "version_4_bits",
]


_VERSION_4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_VERSION_4_SET = (0x4000 << 64) | (0x8000 << 48)
_SAFE = uuid.SafeUUID.unknown
COUNTER_BITS = 62
"""The low bits of a version-4 UUID that neither its version nor its variant uses: an id
made as ``base ^ n`` for ``n`` below ``2 ** COUNTER_BITS`` keeps both."""


class _EventUUID(uuid.UUID):
    """A `UUID` made without `uuid.UUID.__init__`'s checks (its value is made version 4
    here) that keeps its text once written: event ids are made, and written, on every
    step of every run."""

    __slots__ = ("_text",)

    @property
    def is_safe(self) -> uuid.SafeUUID:  # pyright: ignore[reportGeneralTypeIssues, reportIncompatibleVariableOverride]
        return _SAFE  # not stored: one attribute less to set per id made

    def __reduce__(self) -> tuple[Any, ...]:
        return (uuid_of, (self.int,))

    def __str__(self) -> str:
        text = getattr(self, "_text", None)
        if text is None:
            h = "%032x" % self.int  # noqa: UP031 (as uuid.UUID.__str__, the fastest form)
            text = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
            object.__setattr__(self, "_text", text)
        return text

    def __repr__(self) -> str:
        return f"UUID('{self}')"


def version_4_bits(value: int) -> int:
    """``value`` (128 bits) with the version (4) and variant (RFC 4122) bits of a UUID set."""
    return (value & _VERSION_4_CLEAR) | _VERSION_4_SET


def uuid_of(value: int) -> uuid.UUID:
    """The `UUID` of ``value``, a 128-bit integer (an event id's: `version_4_bits`)."""
    made = _new(_EventUUID)
    _set(made, "int", value)
    return made


_new = object.__new__
_set = object.__setattr__


def derived_event_id(text: str) -> uuid.UUID:
    """The version-4 UUID derived from ``text``: the same for the same text, in every
    process (a runner's ids of a run's events, which a replay makes again)."""
    return uuid_of(derived_bits(text))


def derived_bits(text: str) -> int:
    """The value of `derived_event_id` (``text``'s BLAKE2b digest as a version-4 UUID)."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
    return version_4_bits(int.from_bytes(digest, "big"))


class _TextId(uuid.UUID):
    """An id written by an older version of this package, whose ids were strings that are
    no UUID: the UUID derived from that text (`derived_event_id`), written back as the
    text, so that what was keyed by it (open chat loops, approvals, durable call
    arguments) still matches after a restore."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        super().__init__(int=derived_bits(text))
        object.__setattr__(self, "_text", text)

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._text!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_TextId, (self._text,))


_UUID_TEXT_LENGTH = 36
_HEX_DIGITS = frozenset("0123456789abcdef")


def _uuid_of_text(text: str) -> uuid.UUID | None:
    """The `UUID` whose text (`str`) is ``text`` (36 characters), else None (then
    `uuid.UUID`'s reading of it, which takes other forms too). Ids are read back from
    their text on every step of a chat loop: no parse beyond `int`."""
    if text[8] == text[13] == text[18] == text[23] == "-":
        digits = text[:8] + text[9:13] + text[14:18] + text[19:23] + text[24:]
        if _HEX_DIGITS.issuperset(digits):
            made = uuid_of(int(digits, 16))
            _set(made, "_text", text)
            return made
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def event_id(value: uuid.UUID | str) -> uuid.UUID:
    """An event id as given: a `UUID`, its text, or (from a checkpoint or log of an older
    version) any other non-empty string, kept as its text. `ValueError` otherwise."""
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str) and value:
        if len(value) == _UUID_TEXT_LENGTH:
            parsed = _uuid_of_text(value)
            if parsed is not None:
                return parsed
        return _TextId(value)
    raise ValueError(f"an event id is a UUID or its text, got {value!r}")
