"""pydantic internals: the instance slots behind trusted instances and unvalidated writes.

Lives beside the API (not in the runtime) because the API's trusted instances use it and
the API never imports the runtime.

Reaches (checked on pydantic 2.14.4 with pydantic-core 2.50.5, Python 3.11; every Flink
line's environment has that pydantic):

- `slot_setters`: `BaseModel` keeps an instance's state in four slots, `__dict__` (the
  field values), `__pydantic_fields_set__`, `__pydantic_extra__` and
  `__pydantic_private__`; writing them through their descriptors builds an instance without
  validation, twice as fast as `object.__setattr__` by name and several times
  `model_construct` (the per-step hot path builds events, messages and run state this way:
  `flink_agents.api._trusted`).
- `field_values`: an instance's field values are its `__dict__` (read there to copy an
  event without re-validation).
- `private_values`: an instance's private attributes are the dict in its
  `__pydantic_private__` slot (reading it there skips pydantic's slow `__getattr__` on a
  tool's every call); `with_private`: `BaseModel.__getstate__` keeps them under the key
  `__pydantic_private__`, where a model resets what must not travel in a pickle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from flink_agents._compat import Assumption

__all__ = [
    "ASSUMPTIONS",
    "INSTANCE_SLOTS",
    "field_values",
    "private_values",
    "slot_setters",
    "with_private",
]

CHECKED_ON = "2.14.4"

INSTANCE_SLOTS = (
    "__dict__",
    "__pydantic_fields_set__",
    "__pydantic_extra__",
    "__pydantic_private__",
)
"""The slots pydantic keeps an instance's state in, in the order `slot_setters` gives them."""


def _slots_have_setters() -> bool:
    slots = BaseModel.__dict__
    return all(callable(getattr(slots.get(name), "__set__", None)) for name in INSTANCE_SLOTS)


def _fields_live_in_dict() -> bool:
    class Probe(BaseModel):
        value: int = 0

    probe = Probe(value=1)
    return vars(probe) == {"value": 1} and probe.model_fields_set == {"value"}


def _private_in_slot_and_state() -> bool:
    from pydantic import PrivateAttr

    class Probe(BaseModel):
        _secret: int = PrivateAttr(default=0)

    probe = Probe()
    probe._secret = 1
    state = probe.__getstate__()
    return probe.__pydantic_private__ == {"_secret": 1} and state.get(_PRIVATE) == {"_secret": 1}


_PRIVATE = "__pydantic_private__"

SLOTS = Assumption(
    "pydantic",
    CHECKED_ON,
    "BaseModel keeps an instance's state in the slots "
    + ", ".join(INSTANCE_SLOTS)
    + ", each with a descriptor that sets it",
    _slots_have_setters,
)
FIELDS_IN_DICT = Assumption(
    "pydantic",
    CHECKED_ON,
    "a model instance's field values are its __dict__, keyed by field name",
    _fields_live_in_dict,
)
PRIVATE = Assumption(
    "pydantic",
    CHECKED_ON,
    "a model's private attributes are the dict in its __pydantic_private__ slot, and "
    "__getstate__ keeps them under the key '__pydantic_private__'",
    _private_in_slot_and_state,
)
ASSUMPTIONS = (SLOTS, FIELDS_IN_DICT, PRIVATE)


def slot_setters() -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of `INSTANCE_SLOTS` (`descriptor.__set__`), in that order; an instance
    made with `cls.__new__(cls)` and given all four is a complete model instance."""
    SLOTS.check()
    return tuple(BaseModel.__dict__[name].__set__ for name in INSTANCE_SLOTS)


def field_values(model: BaseModel) -> dict[str, Any]:
    """The field values of `model`, by name: its own `__dict__` (read them; the runtime
    sets fields as attributes)."""
    return vars(model)


def private_values(model: BaseModel) -> dict[str, Any] | None:
    """The private attributes of `model`, by name (None when it has none), read without
    pydantic's `__getattr__`."""
    return model.__pydantic_private__


def with_private(state: dict[Any, Any], **values: Any) -> dict[Any, Any]:
    """`state` (what `BaseModel.__getstate__` gave) with private attributes set to
    `values` (a pickle leaves out what only makes sense in this process)."""
    if _PRIVATE not in state:
        PRIVATE.broken()
    state[_PRIVATE] = {**(state[_PRIVATE] or {}), **values}
    return state
