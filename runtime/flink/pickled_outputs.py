"""Agent outputs as pickled bytes, with the classes of the job script in them.

The agent operator's outputs (and failure records) leave it as `PICKLED_BYTE_ARRAY`. A job
script's classes (an output schema `Weather` defined in `__main__`) reach the workers by
value: cloudpickle ships them with the agent. In thread mode PyFlink pickles an operator's
outputs with the standard `pickle`, which names a class by module and name and cannot find
`__main__.Weather` in the TaskManager's interpreter (`PicklingError: Can't pickle <class
'__main__.Weather'>`).

So an output that is not plain data (strings, numbers, bytes, None, and lists, tuples and
dicts of them) goes out as `ByValue`: pickled, it is cloudpickle's bytes for the value and
a call that loads them. Whoever unpickles it (the next Python operator, the client's
`execute_and_collect`) gets the value itself, never the wrapper; a class that cannot be
imported by name travels by value, and in the process that shipped it (the client that
ran the job script) it comes back as that very class. Plain data goes out as it is.
"""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle

__all__ = ["ByValue", "by_value", "is_plain_data"]

_SCALARS = frozenset({str, int, float, bool, bytes, type(None)})
_CONTAINERS = frozenset({list, tuple, dict})
_MAX_NODES = 10_000


def is_plain_data(value: Any) -> bool:
    """Whether ``value`` is made of built-in scalars, lists, tuples and dicts only (exact
    types, at most 10,000 parts): the standard pickle writes it without naming a class
    of the job."""
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind not in _CONTAINERS:
            return False
        seen += len(item)
        if seen > _MAX_NODES:
            return False
        if kind is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        else:
            stack.extend(item)
    return True


class ByValue:
    """A value that pickles through cloudpickle and unpickles as the value itself."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        return (pickle.loads, (cloudpickle.dumps(self.value),))

    def __repr__(self) -> str:
        return f"ByValue({type(self.value).__qualname__})"


def by_value(value: Any) -> Any:
    """``value`` itself when it is plain data, else a `ByValue` of it."""
    return value if is_plain_data(value) else ByValue(value)
