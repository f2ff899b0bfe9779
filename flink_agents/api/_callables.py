"""What kind of callable a function is (awaited on the loop, or run in a thread), and
whether what it returned is to be awaited."""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Awaitable, Callable
from typing import Any

from typing_extensions import TypeIs

__all__ = ["is_async_callable", "is_awaitable"]


def is_async_callable(func: Callable[..., Any]) -> bool:
    """Whether calling ``func`` gives a coroutine to await: an ``async def`` function, a
    bound ``async def`` method, an object whose ``__call__`` is ``async def``, or a
    `functools.partial` of any of these."""
    # The common case (a plain function) is answered without `inspect`.
    if type(func) is types.FunctionType and func.__code__.co_flags & inspect.CO_COROUTINE:
        return True
    while isinstance(func, functools.partial):
        func = func.func
    # An object with an async `__call__` (looked up on its type: a class whose instances
    # have one is called to build an instance, which is sync).
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(type(func), "__call__", None)  # noqa: B004
    )


def is_awaitable(value: object) -> TypeIs[Awaitable[Any]]:
    """`inspect.isawaitable`, without its ABC check for the plain values most calls return
    (what `await` takes: a coroutine, a generator-based coroutine, or an object whose type
    has ``__await__``)."""
    kind = type(value)
    if kind is types.CoroutineType:
        return True
    if kind is types.GeneratorType:
        return inspect.isawaitable(value)
    # What `await` looks up: ``__await__`` in a class of the type's MRO (not `hasattr`,
    # which on a pydantic model class runs its metaclass's ``__getattr__`` and raises).
    for base in kind.__mro__:  # noqa: SIM110 (any() over a generator: twice the time)
        if "__await__" in base.__dict__:
            return True
    return False
