"""Failure records as pickled bytes, with the classes of the job script in them.

The agent operator's side outputs leave it as `PICKLED_BYTE_ARRAY`. Its main outputs are
JSON values (and Rows) by then (`crossing_value`), but a failure record holds the input as
it arrived, which may be an object of a job script's class (a `Ticket` defined in
`__main__`). Such classes reach the workers by value: cloudpickle ships them with the
agent. In thread mode PyFlink pickles an operator's outputs with the standard `pickle`,
which names a class by module and name and cannot find `__main__.Ticket` in the
TaskManager's interpreter (`PicklingError: Can't pickle <class '__main__.Ticket'>`).

So before a record leaves, `pickle_by_value` looks at the classes in it (the value, the
items of its lists, tuples, sets and dicts, the attributes of its objects: a model's fields)
and gives each class the standard pickle cannot name a reducer (`copyreg`): pickled, such an
object is cloudpickle's bytes for it and a call that loads them. Whoever unpickles it (the
next Python operator in another task, the client's `execute_and_collect`) gets the value; in
the process that shipped the class (the client that ran the job script) it comes back as
that very class. The record itself is not wrapped: a Python operator fused with the agent
operator (PyFlink chains them into one) gets it as it is.

Each class is looked at once while reducers are held; at most 10,000 items of a record are.

The reducers are process-wide (`copyreg.dispatch_table`), so they are held: the agent
operator holds them from `open` to `close` (or until its finalizer stops its runs), and the
last holder in the process removes every reducer it added (`held_reducers`): the process's
`copyreg` is then as it was. A Python operator in another chain of the same TaskManager
that passes such an object on after every agent operator there closed pickles it by name
again (and fails as without this module).
"""

from __future__ import annotations

import copyreg
import pickle
import threading
from typing import Any

import cloudpickle

__all__ = ["hold_reducers", "pickle_by_value", "release_reducers"]

_SCALARS = frozenset({str, int, float, bool, bytes, type(None)})
_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
_MAX_NODES = 10_000

_looked_at: set[type] = set(_SCALARS | _CONTAINERS)
"""Classes already looked at: pickle names them, or they have the reducer."""
_added: list[type] = []
"""The classes given `_by_value` in `copyreg.dispatch_table` (removed by the last holder)."""
_holders = 0
_lock = threading.Lock()
_pickling = threading.local()


def hold_reducers() -> None:
    """Count one more holder of the reducers `pickle_by_value` adds (an open operator)."""
    global _holders
    with _lock:
        _holders += 1


def release_reducers() -> None:
    """One holder fewer; the last one removes every reducer added (those someone replaced
    since are left as they are) and forgets the classes looked at."""
    global _holders
    with _lock:
        if _holders == 0:
            raise RuntimeError("the pickled-output reducers were released more often than held")
        _holders -= 1
        if _holders:
            return
        table = copyreg.dispatch_table
        for cls in _added:
            if table.get(cls) is _by_value:
                del table[cls]
        _added.clear()
        _looked_at.intersection_update(_SCALARS | _CONTAINERS)


def pickle_by_value(value: Any) -> None:
    """Give the classes in ``value`` that the standard pickle cannot name a reducer that
    pickles their objects by value (between `hold_reducers` and `release_reducers`)."""
    kind = type(value)
    if kind in _SCALARS:
        return
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind not in _looked_at:
            _look_at(kind)
        if kind in _CONTAINERS:
            seen += len(item)
            if seen > _MAX_NODES:
                return
            if kind is dict:
                stack.extend(item.keys())
                stack.extend(item.values())
            else:
                stack.extend(item)
        elif kind not in _SCALARS:
            fields = getattr(item, "__dict__", None)  # a model's fields, an object's attributes
            if type(fields) is dict:
                seen += len(fields)
                if seen > _MAX_NODES:
                    return
                stack.extend(fields.values())


def _look_at(cls: type) -> None:
    with _lock:
        if cls in _looked_at:
            return
        if _holders == 0:
            raise RuntimeError("pickle_by_value needs hold_reducers() first")
        if cls.__module__ != "builtins":  # functions, methods...: not state values anyway
            try:
                pickle.dumps(cls)  # by reference: module and name
            except Exception:  # PicklingError mostly; whatever it is, pickle cannot name it
                copyreg.pickle(cls, _by_value)
                _added.append(cls)
        _looked_at.add(cls)


def _by_value(obj: Any) -> Any:
    """The reducer: cloudpickle's bytes of ``obj`` and `pickle.loads`. Inside that
    cloudpickle call, the object's own reduction (cloudpickle ships the class by value)."""
    if getattr(_pickling, "active", False):
        return obj.__reduce_ex__(cloudpickle.DEFAULT_PROTOCOL)
    _pickling.active = True
    try:
        data = cloudpickle.dumps(obj)
    finally:
        _pickling.active = False
    return (pickle.loads, (data,))
