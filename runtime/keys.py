"""Agent keys as text that keeps their type.

The key of an input (what the key selector returns) names the run's keyed state, its
durable-call records and its outputs. Wherever a key must be text (a Flink `STRING` key, a
store column), it is its canonical JSON, so keys of different types never meet: `1` is `1`,
`"1"` is `"1"`, `True` is `true`, `1.5` is `1.5`. A list or tuple key is a JSON array (a
tuple and a list with the same items are the same key). `None` and other values have no
key text: `encode_key` raises `TypeError` naming the type.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["agent_key", "decode_key", "encode_key"]

_SCALARS = (str, bool, int, float)


def _check(key: Any, top: bool) -> None:
    if isinstance(key, _SCALARS):
        if isinstance(key, float) and not math.isfinite(key):
            raise TypeError(f"an agent key cannot be {key!r} (not a finite number)")
        return
    if isinstance(key, (list, tuple)) and key:
        for item in key:
            _check(item, False)
        return
    what = "None" if key is None else f"a value of type {type(key).__name__}"
    where = "an agent key" if top else "an item of an agent key"
    raise TypeError(
        f"{where} cannot be {what}: keys are strings, numbers, booleans or non-empty tuples of them"
    )


_encode_str: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]
"""A string as JSON text, not ASCII-escaped (as ``json.dumps(text, ensure_ascii=False)``)."""


def agent_key(key: Any) -> Any:
    """The key a run gets for what a key selector returned: itself, with a `UUID`
    (upstream's key type in its examples) as its text, also inside a tuple."""
    if isinstance(key, uuid.UUID):
        return str(key)
    if isinstance(key, (list, tuple)) and any(isinstance(i, (uuid.UUID, list, tuple)) for i in key):
        return tuple(agent_key(i) for i in key)
    return key


def encode_key(key: Any) -> str:
    """`key` as canonical JSON text; `TypeError` for a key that has none."""
    if type(key) is str:  # the common case, without the checks (what json.dumps does)
        return _encode_str(key)
    _check(key, True)
    return json.dumps(key, ensure_ascii=False, separators=(",", ":"))


def decode_key(text: str) -> Any:
    """The key `encode_key` wrote (a JSON array comes back as a tuple)."""
    value = json.loads(text)
    if isinstance(value, list):
        return _to_tuple(value)
    return value


def _to_tuple(items: list[Any]) -> tuple[Any, ...]:
    return tuple(_to_tuple(i) if isinstance(i, list) else i for i in items)
