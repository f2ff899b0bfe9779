"""Agent keys as text that keeps their type.

The key of an input (what the key selector returns) names the run's keyed state, its
durable-call records and its outputs. Wherever a key must be text (a Flink `STRING` key, a
store column), it is its canonical JSON, so keys of different types never meet: `1` is `1`,
`"1"` is `"1"`, `True` is `true`, `1.5` is `1.5`. A list or tuple key is a JSON array (a
tuple and a list with the same items are the same key). `None` and other values have no
key text: `encode_key` raises `TypeError` naming why. Key texts are valid UTF-8 (what Flink's
`STRING` serializer and the stores need): a string with a lone surrogate (`"k\\udfff"`) has
no key text, nor an integer past Python's 4,300-digit limit or a tuple nested past the
recursion limit.

On Flink the key selector runs before the input reaches Java, so it cannot raise for a key
without text (the job would stop): it returns a *refused key text* instead
(`refused_key_text`), which starts with a character no key text starts with and carries the
refusal to the agent operator, which applies `input-failure.policy` as the local runner does.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = [
    "REFUSED_KEY_PREFIX",
    "RefusedKey",
    "agent_key",
    "decode_key",
    "encode_key",
    "refused_key",
    "refused_key_text",
]

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
    (upstream's key type in its examples) as its text, also as an item of a list or tuple
    key (one level: no walk of a nested key, which the door checks)."""
    if isinstance(key, uuid.UUID):
        return str(key)
    if type(key) in (list, tuple) and any(isinstance(i, uuid.UUID) for i in key):
        return type(key)(str(i) if isinstance(i, uuid.UUID) else i for i in key)
    return key


def encode_key(key: Any) -> str:
    """`key` as canonical JSON text (valid UTF-8); `TypeError` for a key that has none."""
    if type(key) is str and key.isascii():  # the common case, without the checks
        return _encode_str(key)
    try:
        _check(key, True)
        text = json.dumps(key, ensure_ascii=False, separators=(",", ":"))
        text.encode("utf-8")  # a lone surrogate: no UTF-8, so no Flink STRING
    except TypeError:
        raise
    except UnicodeEncodeError as exc:
        raise TypeError(
            f"an agent key cannot hold a lone surrogate ({exc.object[exc.start : exc.end]!r}): "
            "keys are UTF-8 text"
        ) from None
    except RecursionError:
        raise TypeError("an agent key cannot be nested this deep") from None
    except Exception as exc:  # an int past the digit limit (ValueError), ...
        raise TypeError(f"an agent key has no text: {type(exc).__name__}: {exc}") from None
    return text


REFUSED_KEY_PREFIX = "\x00refused-key "
"""How a refused key text starts (no key text starts with a control character)."""


class RefusedKey(NamedTuple):
    """What a refused key text carries."""

    key_text: str | None
    """The key's text, when it has one (then the value was refused)."""
    name: str
    """How errors and records name the key (`input_failure.key_name`)."""
    cause_type: str
    cause_message: str

    @property
    def key(self) -> Any:
        """The key a failure record names: the key itself when it has text, else `name`."""
        return self.name if self.key_text is None else decode_key(self.key_text)


def refused_key_text(key_text: str | None, name: str, cause_type: str, cause_message: str) -> str:
    """The key text the Flink key selector gives an input refused before Java (a key
    without text, a selector that raised, a value that cannot be pickled): a `RefusedKey`
    as ASCII JSON behind `REFUSED_KEY_PREFIX`."""
    payload = [key_text, name, cause_type, cause_message]
    return REFUSED_KEY_PREFIX + json.dumps(payload, ensure_ascii=True)


def refused_key(text: str) -> RefusedKey | None:
    """The `RefusedKey` a `refused_key_text` holds; None for a key text."""
    if not text.startswith(REFUSED_KEY_PREFIX):
        return None
    key_text, name, cause_type, cause_message = json.loads(text[len(REFUSED_KEY_PREFIX) :])
    return RefusedKey(key_text, str(name), str(cause_type), str(cause_message))


def decode_key(text: str) -> Any:
    """The key `encode_key` wrote (a JSON array comes back as a tuple)."""
    value = json.loads(text)
    if isinstance(value, list):
        return _to_tuple(value)
    return value


def _to_tuple(items: list[Any]) -> tuple[Any, ...]:
    return tuple(_to_tuple(i) if isinstance(i, list) else i for i in items)
