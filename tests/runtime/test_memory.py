"""Sensory and short-term memory as upstream's `MemoryObject`, over agent state."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.api.events.event import Event
from flink_agents.api.memory_object import MemoryObject, MemoryType, validate_memory_value
from flink_agents.api.memory_reference import MemoryRef
from flink_agents.runtime.memory import MemoryAccess, MemoryNode, StateMemoryObject
from flink_agents.runtime.run_state import KeyState, RunState


class Profile(BaseModel):
    name: str
    tier: int


def memory(root: dict[str, Any] | None = None, kind: MemoryType = MemoryType.SHORT_TERM) -> Any:
    return StateMemoryObject(MemoryAccess(root={} if root is None else root, memory_type=kind))


class FakeContext:
    """What `MemoryRef.resolve` reads: the two memories."""

    def __init__(self) -> None:
        self.short_term_memory = memory()
        self.sensory_memory = memory(kind=MemoryType.SENSORY)


# ---------------------------------------------------------------- upstream's operations


def test_set_and_get_values_of_every_kind() -> None:
    mem = memory()
    mem.set("int", 1)
    assert mem.get_field_names() == ["int"]
    assert mem.get_fields() == {"int": 1}
    mem.set("float", 3.14)
    mem.set("str", "hello")
    mem.set("list", ["a", "b"])
    mem.set("dict", {"x": 10})
    mem.set("model", Profile(name="ann", tier=2))
    mem.set("none", None)
    assert mem.get("int") == 1 and mem.get("float") == 3.14 and mem.get("str") == "hello"
    assert mem.get("list") == ["a", "b"] and mem.get("dict") == {"x": 10}
    assert mem.get("model") == Profile(name="ann", tier=2)
    assert mem.get("none") is None and mem.is_exist("none")
    assert mem.get("missing") is None and not mem.is_exist("missing")


def test_dotted_paths_make_and_reach_nested_objects() -> None:
    mem = memory()
    mem.set("a.b.c", True)
    inner = mem.get("a.b")
    assert isinstance(inner, MemoryObject) and inner.path == "a.b"
    inner.set("tmp", 10)
    assert mem.get("a.b.tmp") == 10
    assert sorted(mem.get("a.b").get_field_names()) == ["c", "tmp"]
    assert mem.get("a").get("b").get("c") is True
    assert mem.get("a").get_fields() == {"b": "NestedObject"}
    assert mem.is_exist("a") and mem.is_exist("a.b") and mem.is_exist("a.b.c")
    assert mem.get("") is mem


def test_new_object_and_its_overwrite_rules() -> None:
    mem = memory()
    user = mem.new_object("user")
    user.set("name", "john")
    assert mem.new_object("user").get("name") == "john"  # the existing object
    mem.new_object("x.y.z")
    assert mem.is_exist("x") and mem.is_exist("x.y") and mem.get_fields()["x"] == "NestedObject"

    mem.set("profile", "active")
    with pytest.raises(ValueError, match="holds a value, not an object"):
        mem.new_object("profile")
    mem.new_object("profile", overwrite=True).set("status", "ok")
    assert mem.get("profile.status") == "ok"

    with pytest.raises(ValueError, match="is an object: it cannot be overwritten"):
        mem.set("user", 123)
    mem.set("flag", 1)
    with pytest.raises(ValueError, match="'flag' holds a value, not an object"):
        mem.set("flag.inner", 2)
    mem.set("conf", {"a": 1})  # a dict value is a value, not an object
    assert mem.get("conf.a") is None and not mem.is_exist("conf.a")


def test_paths_and_values_are_checked() -> None:
    mem = memory()
    with pytest.raises(ValueError, match="empty part"):
        mem.set("a..b", 1)
    with pytest.raises(ValueError, match="empty part"):
        mem.get(".a")
    with pytest.raises(TypeError, match="a memory path is a string"):
        mem.set(3, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"memory path 'items'\[1\] is a value of type set"):
        mem.set("items", [1, {2}])
    with pytest.raises(TypeError, match="string keys"):
        mem.set("d", {1: "x"})
    with pytest.raises(TypeError, match="use new_object"):
        mem.set("copy", mem.new_object("orig"))
    with pytest.raises(TypeError, match="agent state cannot keep"):
        validate_memory_value("p", float("nan"))
    assert not mem.is_exist("items") and not mem.is_exist("copy")


def test_set_returns_a_reference_that_get_and_resolve_follow() -> None:
    ctx = FakeContext()
    mem = ctx.short_term_memory
    user = mem.new_object("user")
    ref = user.set("name", "john")
    assert ref == MemoryRef(memory_type=MemoryType.SHORT_TERM, path="user.name")
    assert mem.get(ref) == "john" and user.get(ref) == "john"  # absolute path
    assert ref.resolve(ctx) == "john"  # type: ignore[arg-type]
    assert mem.get(MemoryRef.create(MemoryType.SHORT_TERM, "user")).get("name") == "john"
    assert mem.get(MemoryRef(path="no.such.path")) is None

    sensory_ref = ctx.sensory_memory.set("draft", [1, 2])
    assert sensory_ref.memory_type is MemoryType.SENSORY
    assert sensory_ref.resolve(ctx) == [1, 2]  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="points into sensory memory"):
        mem.get(sensory_ref)

    # A reference travels as JSON (in events, in state) and stays hashable.
    assert MemoryRef.model_validate_json(ref.model_dump_json()) == ref
    assert len({ref, MemoryRef(path="user.name"), MemoryRef(path="user.age")}) == 2


def test_item_access_keeps_working_as_a_mapping_of_paths() -> None:
    root: dict[str, Any] = {}
    mem = memory(root)
    mem["count"] = 1
    mem["count"] = mem.get("count", 0) + 1
    assert mem["count"] == 2 and "count" in mem and len(mem) == 1
    seen = mem.setdefault("seen", [])
    seen.append("a")  # the stored list itself, as before
    assert mem["seen"] == ["a"]
    mem["user.name"] = "john"
    assert mem["user"]["name"] == "john" and "user.name" in mem
    assert sorted(mem) == ["count", "seen", "user"]
    assert dict(mem.items())["count"] == 2
    del mem["user.name"]
    assert "user.name" not in mem and "user" in mem
    with pytest.raises(KeyError):
        _ = mem["nope"]
    with pytest.raises(KeyError):
        del mem["nope"]
    assert mem.get("nope", "default") == "default"
    assert mem.pop("count") == 2 and "count" not in mem
    assert root == {"seen": ["a"], "user": MemoryNode()}


def test_keys_with_a_dot_in_the_root_are_the_runtimes_and_invisible() -> None:
    mem = memory({"_flink_agents.chat_loops": {"r": 1}, "mine": 1}, MemoryType.SENSORY)
    assert mem.get_field_names() == ["mine"] and list(mem) == ["mine"]
    assert mem.get("_flink_agents.chat_loops") is None


# ---------------------------------------------------------------- state and JSON


def test_nested_objects_survive_the_key_state_json() -> None:
    key_state = KeyState()
    mem = memory(key_state.short_term_memory)
    mem.set("user.profile", Profile(name="ann", tier=2))
    mem.new_object("empty")
    mem.set("plain", {"$object": {"not": "a node"}, "x": (1, 2)})
    restored = KeyState.from_json(key_state.to_json())
    again = memory(restored.short_term_memory)
    assert isinstance(again.get("user"), MemoryObject)
    assert again.get("user.profile") == Profile(name="ann", tier=2)
    assert isinstance(again.get("empty"), MemoryObject) and again.get("empty").get_fields() == {}
    assert again.get("plain") == {"$object": {"not": "a node"}, "x": (1, 2)}
    assert restored.short_term_memory == key_state.short_term_memory


def test_state_without_nested_objects_is_written_as_before() -> None:
    key_state = KeyState(short_term_memory={"seen": [1, 2]}, next_seq=3)
    assert json.loads(key_state.to_json()) == {"short_term_memory": {"seen": [1, 2]}, "next_seq": 3}
    # A snapshot written before memory objects existed loads as it was.
    gone = {"$model": f"{__name__}:Gone"}  # a class no longer in its (imported) module
    old = KeyState.from_json(json.dumps({"short_term_memory": {"seen": [1], "m": gone}}))
    assert memory(old.short_term_memory).get("seen") == [1]


def test_sensory_memory_with_objects_survives_the_run_json() -> None:
    run = RunState(key="k", seq=0)
    memory(run.sensory_memory, MemoryType.SENSORY).set("step.draft", "text")
    restored = RunState.from_json(run.to_json())
    assert memory(restored.sensory_memory, MemoryType.SENSORY).get("step.draft") == "text"


def test_memory_and_its_times_are_rewound_together() -> None:
    key_state = KeyState(short_term_memory={"a": 1}, memory_touched_ms={"a": 5})
    saved = key_state.memory_json()
    key_state.short_term_memory["b"] = 2
    key_state.memory_touched_ms["b"] = 9
    key_state.next_seq = 4
    key_state.restore_memory(saved)
    assert key_state.short_term_memory == {"a": 1}
    assert key_state.memory_touched_ms == {"a": 5}
    assert key_state.next_seq == 4
    assert KeyState.from_json(key_state.to_json()).memory_touched_ms == {"a": 5}


def test_a_reference_sent_in_an_event_survives_the_run_json() -> None:
    run = RunState(key="k", seq=0)
    ref = memory(run.sensory_memory, MemoryType.SENSORY).set("draft", "text")
    run.pending_events.append(Event(type="review", draft=ref))
    restored = RunState.from_json(run.to_json())
    sent = restored.pending_events[0].get_attr("draft")
    assert sent == ref and isinstance(sent, MemoryRef)
    assert memory(restored.sensory_memory, MemoryType.SENSORY).get(sent) == "text"
