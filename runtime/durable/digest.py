"""A stable digest of a durable call: the function's identity and its arguments.

The digest must come out the same in another process, after a restart, and after the run's
events went through JSON in a checkpoint. So arguments are reduced to their canonical JSON
(`flink_agents.api._values.canonical_value`: tuples are arrays like lists, enum members are
their values, ``str``/``int``/``float`` subclasses are the plain values, pydantic models are
their ``model_dump(mode="json")``, model classes their ``module:qualname``; objects have sorted
keys). Anything else (bytes, sets, datetimes outside a model, dicts with non-string keys, NaN
and infinities, arbitrary objects) raises :class:`TypeError` naming the argument's position
and the offending type, never the value.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flink_agents.api._values import UnencodableValueError, canonical_json, canonical_value

__all__ = [
    "DIGEST_SCHEME",
    "call_digest",
    "canonical_call_json",
    "function_identity",
]

DIGEST_SCHEME = "flink-agents/durable-call/v1"
"""Part of every digest, so a future change of the scheme reads as a changed call."""


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


def _canonical_argument(identity: str, where: str, value: Any) -> Any:
    try:
        return canonical_value(value)
    except UnencodableValueError as exc:
        raise TypeError(
            f"durable call to {identity}: {where} cannot be digested: {exc.reason}. Pass JSON "
            "values (None, bool, int, finite float, str, list/tuple, dict with str keys), enum "
            "members or pydantic models."
        ) from None


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
    return canonical_json(document)


def call_digest(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """Hex SHA-256 of the call's canonical JSON; equal calls give equal digests anywhere."""
    return hashlib.sha256(canonical_call_json(fn, args, kwargs).encode("ascii")).hexdigest()
