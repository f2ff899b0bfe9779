"""A stable digest of a durable call: the function's identity and its arguments.

The digest must come out the same in another process, after a restart, and after the run's
events went through JSON in a checkpoint. So arguments are reduced to canonical JSON: tuples
are arrays like lists, enum members are their values, ``str``/``int``/``float`` subclasses are
the plain values, pydantic models are their ``model_dump(mode="json")``; objects are serialized
with sorted keys. Anything else (bytes, sets, datetimes outside a model, dicts with non-string
keys, NaN and infinities, arbitrary objects) raises :class:`TypeError` naming the argument's
position and the offending type, never the value.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any

from pydantic import BaseModel

__all__ = [
    "DIGEST_SCHEME",
    "call_digest",
    "canonical_call_json",
    "canonical_value",
    "function_identity",
]

DIGEST_SCHEME = "flink-agents/durable-call/v1"
"""Part of every digest, so a future change of the scheme reads as a changed call."""

JsonValue = Any
"""A value made of None, bool, int, float, str, list and str-keyed dict only."""


class _NotCanonical(Exception):
    def __init__(self, type_name: str, reason: str) -> None:
        super().__init__(type_name, reason)
        self.type_name = type_name
        self.reason = reason


def function_identity(fn: Callable[..., Any]) -> str:
    """``module:qualname`` of the function a call goes to.

    Bound methods name their function (``module:Class.method``), ``functools.partial`` names
    the wrapped function, callable objects name their class's ``__call__``.
    """
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.ismethod(fn):
        fn = fn.__func__
    qualname = getattr(fn, "__qualname__", None)
    if isinstance(qualname, str):
        module = getattr(fn, "__module__", None)
        if not isinstance(module, str):
            owner = getattr(fn, "__self__", None)
            module = type(owner).__module__ if owner is not None else "builtins"
        return f"{module}:{qualname}"
    cls = type(fn)
    return f"{cls.__module__}:{cls.__qualname__}.__call__"


def _canonical(value: Any, depth: int = 0) -> JsonValue:
    if depth > 200:
        raise _NotCanonical(type(value).__qualname__, "nested more than 200 levels (a cycle?)")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Enum):
        return _canonical(value.value, depth + 1)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotCanonical("float", "NaN and infinities have no JSON form")
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, BaseModel):
        try:
            return value.model_dump(mode="json")
        except Exception as exc:  # pydantic's serialization errors carry values: drop them
            raise _NotCanonical(
                type(value).__qualname__, f"model_dump(mode='json') failed ({type(exc).__name__})"
            ) from None
    if isinstance(value, (list, tuple)):
        return [_canonical(item, depth + 1) for item in value]
    if isinstance(value, Mapping):
        out: dict[str, JsonValue] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _NotCanonical(
                    f"dict key of type {type(key).__qualname__}", "JSON object keys are strings"
                )
            out[str.__str__(key)] = _canonical(item, depth + 1)
        return out
    raise _NotCanonical(type(value).__qualname__, "it has no canonical JSON form")


def _canonical_argument(identity: str, where: str, value: Any) -> JsonValue:
    try:
        return _canonical(value)
    except _NotCanonical as exc:
        raise TypeError(
            f"durable call to {identity}: {where} cannot be digested: found a value of type "
            f"{exc.type_name} ({exc.reason}). Pass JSON values (None, bool, int, finite float, "
            "str, list/tuple, dict with str keys) or pydantic models."
        ) from None


def canonical_value(value: Any) -> JsonValue:
    """``value`` reduced to canonical JSON values (as arguments are for a digest).

    Raises :class:`TypeError` naming the offending type (never the value) when part of it has
    no canonical JSON form.
    """
    try:
        return _canonical(value)
    except _NotCanonical as exc:
        raise TypeError(f"a value of type {exc.type_name}: {exc.reason}") from None


def canonical_call_json(
    fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]
) -> str:
    """The canonical JSON document the digest is computed over."""
    call_args = list(args)
    call_kwargs = dict(kwargs)
    while isinstance(fn, functools.partial):
        call_args = [*fn.args, *call_args]
        call_kwargs = {**fn.keywords, **call_kwargs}
        fn = fn.func
    identity = function_identity(fn)
    document = {
        "scheme": DIGEST_SCHEME,
        "function": identity,
        "args": [
            _canonical_argument(identity, f"argument {index}", value)
            for index, value in enumerate(call_args)
        ],
        "kwargs": {
            name: _canonical_argument(identity, f"keyword argument {name!r}", value)
            for name, value in call_kwargs.items()
        },
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=False)


def call_digest(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """Hex SHA-256 of the call's canonical JSON; equal calls give equal digests anywhere."""
    return hashlib.sha256(canonical_call_json(fn, args, kwargs).encode("ascii")).hexdigest()
