"""A `MemoryObject` subclass written for upstream (its six abstract methods only) can be
made and used, mapping access included; what it does not say fails plainly."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.api.memory_object import MemoryObject, MemoryType
from flink_agents.api.memory_reference import MemoryRef


class SixMethods(MemoryObject):
    """Upstream's abstract methods over a flat dict of dotted paths, nothing more."""

    def __init__(self) -> None:
        self.stored: dict[str, Any] = {}

    def get(self, path_or_ref: str | MemoryRef) -> Any:  # type: ignore[override]  # upstream's signature
        path = path_or_ref.path if isinstance(path_or_ref, MemoryRef) else path_or_ref
        return self.stored.get(path)

    def set(self, path: str, value: Any) -> MemoryRef:
        self.stored[path] = value
        return MemoryRef(path=path)

    def new_object(self, path: str, *, overwrite: bool = False) -> MemoryObject:
        raise NotImplementedError

    def is_exist(self, path: str) -> bool:
        return path in self.stored

    def get_field_names(self) -> list[str]:
        return sorted(self.stored)

    def get_fields(self) -> dict[str, Any]:
        return dict(self.stored)


def test_a_subclass_with_upstreams_six_methods_is_a_memory_object() -> None:
    memory = SixMethods()
    ref = memory.set("count", 0)
    assert memory.get(ref) == 0
    assert memory.memory_type is MemoryType.SHORT_TERM  # as a MemoryRef without one
    memory["count"] = 2
    assert memory["count"] == 2
    assert ("count" in memory, len(memory), list(memory)) == (True, 1, ["count"])
    with pytest.raises(KeyError):
        memory["missing"]
    assert repr(memory) == "<short_term memory object <path unknown>: ['count']>"


def test_what_such_a_subclass_does_not_say_fails_plainly() -> None:
    memory = SixMethods()
    memory.set("count", 1)
    with pytest.raises(NotImplementedError, match="does not say its path"):
        _ = memory.path
    with pytest.raises(NotImplementedError, match="cannot remove fields"):
        del memory["count"]
    assert memory.get("count") == 1
