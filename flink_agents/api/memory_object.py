"""`MemoryObject`: sensory and short-term memory, as upstream's hierarchical key-value store.

``ctx.short_term_memory`` (kept per key, across runs) and ``ctx.sensory_memory`` (this run
only) are `MemoryObject` roots. Fields are addressed by dotted paths relative to the object:

>>> memory = ctx.short_term_memory
>>> memory.set("user.name", "john")          # creates the object "user" on the way
>>> memory.get("user.name")
'john'
>>> user = memory.get("user")                # a nested object is a MemoryObject
>>> user.get_field_names()
['name']
>>> ref = memory.set("history", [1, 2])      # a MemoryRef to the value
>>> memory.get(ref)
[1, 2]

A `MemoryObject` is also a mutable mapping of its fields, by path: ``memory["count"]``,
``memory["count"] = 3``, ``"count" in memory``, ``memory.get("count", 0)``,
``memory.setdefault("seen", [])``, ``del memory["count"]``, ``len(memory)``, iteration over
the field names.

Values are checked when they are set (`validate_memory_value`): agent state keeps them as
JSON and gives back the same value, so None, strings, booleans, integers, finite floats,
lists, tuples, dicts with string keys and pydantic models are accepted, and anything else
raises `TypeError`. A `MemoryObject` is not a value: make nested objects with `new_object`.
A value is stored as given; if you change a list or dict you read from memory, set it
again, so the change is checked and observed (memory events, TTL).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, MutableMapping
from enum import Enum
from typing import TYPE_CHECKING, Any

from flink_agents.api._values import check_state_value

if TYPE_CHECKING:
    from flink_agents.api.memory_reference import MemoryRef

__all__ = ["NESTED_OBJECT", "MemoryObject", "MemoryType", "validate_memory_value"]

NESTED_OBJECT = "NestedObject"
"""What `MemoryObject.get_fields` shows for a field that is a nested object (as upstream)."""


class MemoryType(Enum):
    """Which memory a `MemoryObject` or a `MemoryRef` belongs to."""

    SENSORY = "sensory"
    """This run only; cleared when the run ends."""
    SHORT_TERM = "short_term"
    """The key's memory, kept across its runs."""


def validate_memory_value(path: str, value: Any) -> None:
    """Raise `TypeError`, naming the path and the offending part, unless ``value`` can be
    kept in memory (see the module doc)."""
    if isinstance(value, MemoryObject):
        raise TypeError(
            f"the value at memory path {path!r} is a MemoryObject; use new_object(...) to "
            "make a nested object instead of passing one to set()"
        )
    check_state_value(value, f"the value at memory path {path!r}")


class MemoryObject(ABC, MutableMapping[str, Any]):
    """An object in sensory or short-term memory: named fields holding values or nested
    objects (see the module doc).

    A subclass implements upstream's six abstract methods (`get`, `set`, `new_object`,
    `is_exist`, `get_field_names`, `get_fields`); the rest has defaults it may override:
    `memory_type` (short-term, as a `MemoryRef` without one), `path` (unknown: it raises
    ``NotImplementedError``), removal (``del``, ``pop``: ``NotImplementedError``), and the
    mapping methods, which go through the six. The runtime's memory objects implement all
    of them.
    """

    @property
    def memory_type(self) -> MemoryType:
        """The memory this object belongs to (short-term unless a subclass says)."""
        return MemoryType.SHORT_TERM

    @property
    def path(self) -> str:
        """The absolute path of this object ("" for the root)."""
        raise NotImplementedError(f"{type(self).__name__} does not say its path")

    @abstractmethod
    def get(self, path_or_ref: str | MemoryRef, default: Any = None) -> Any:  # type: ignore[override]
        """The field at ``path_or_ref`` (a path relative to this object, or a `MemoryRef`,
        whose path is absolute): its value, a `MemoryObject` for a nested object, or
        ``default`` (None) when there is none."""

    @abstractmethod
    def set(self, path: str, value: Any) -> MemoryRef:
        """Set the value of the field at ``path``, making missing objects on the way, and
        return a `MemoryRef` to it. `TypeError` for a value memory cannot keep;
        `ValueError` when the field is a nested object or a part of the path is a value."""

    @abstractmethod
    def new_object(self, path: str, *, overwrite: bool = False) -> MemoryObject:
        """Make (or return, if there is one) the nested object at ``path``. `ValueError`
        when the field holds a value, unless ``overwrite`` replaces it."""

    @abstractmethod
    def is_exist(self, path: str) -> bool:
        """Whether there is a field (value or object) at ``path``."""

    @abstractmethod
    def get_field_names(self) -> list[str]:
        """The names of this object's own fields."""

    @abstractmethod
    def get_fields(self) -> dict[str, Any]:
        """This object's own fields: their values, and ``"NestedObject"`` for the nested
        objects (as upstream)."""

    # ------------------------------------------------------------------ mapping

    def __delitem__(self, path: str) -> None:
        """Remove the field at ``path`` (a nested object with all it holds)."""
        raise NotImplementedError(f"{type(self).__name__} cannot remove fields")

    def __getitem__(self, path: str) -> Any:
        if not self.is_exist(path):
            raise KeyError(path)
        return self.get(path)

    def __setitem__(self, path: str, value: Any) -> None:
        self.set(path, value)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.is_exist(path)

    def __iter__(self) -> Iterator[str]:
        return iter(self.get_field_names())

    def __len__(self) -> int:
        return len(self.get_field_names())

    def __repr__(self) -> str:
        try:
            where = self.path or "<root>"
        except NotImplementedError:
            where = "<path unknown>"
        return f"<{self.memory_type.value} memory object {where}: {self.get_field_names()}>"
