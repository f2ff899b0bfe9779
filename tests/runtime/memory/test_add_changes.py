"""What an ``add`` changed, read once for both of the runtime's long-term memories: the
action's view (`ActionLongTermMemory`) and upstream's runner API (`Mem0LongTermMemory`)."""

from __future__ import annotations

from typing import Any

from flink_agents.api.memory.long_term_memory import MemorySet
from flink_agents.runtime.memory.internal_base_long_term_memory import LongTermOp
from flink_agents.runtime.memory.long_term import ActionLongTermMemory
from flink_agents.runtime.memory.mem0.mem0_long_term_memory import add_changes
from tests.runtime.memory.test_long_term_in_runs import DictBackend

ENTRIES = [
    {"id": "a", "event": "ADD", "memory": "likes tea"},
    {"id": "b", "event": "update", "memory": "likes green tea"},
    {"id": "c", "event": "DELETE", "memory": "likes coffee"},
    {"id": "d", "event": "NONE", "memory": "likes tea"},
    {"id": "e", "event": None},
]


def test_add_changes_names_what_changed_and_drops_the_rest() -> None:
    assert list(add_changes(ENTRIES)) == [
        ("ADD", "a", "likes tea"),
        ("UPDATE", "b", "likes green tea"),
        ("DELETE", "c", None),
    ]


class _Backend(DictBackend):
    def scoped_call(self, key: str, op: LongTermOp, memory_set: str, params: dict[str, Any]) -> Any:
        return ENTRIES


def test_the_actions_view_records_the_same_changes() -> None:
    memory = ActionLongTermMemory(
        backend=_Backend(), key='"k"', execute=lambda func, *args: func(*args)
    )
    ids = memory.add(MemorySet(name="prefs", ltm=memory), "likes green tea")
    assert ids == ["a", "b", "c", "d", "e"]
    assert [(r["op"], r["id"], r["value"]) for r in memory.records] == list(add_changes(ENTRIES))
