"""``ctx.long_term_memory`` in runs, on a backend that keeps items in dicts: scoped by key,
each operation a durable call (replayed, not repeated, after a restart), its events made
when the action finishes, and a clear error when no backend is set up."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext
from flink_agents.api.events.memory_event import (
    LongTermGetEvent,
    LongTermSearchEvent,
    LongTermUpdateEvent,
)
from flink_agents.api.memory.long_term_memory import MemorySet, MemorySetItem
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.durable import DurableCallLog, SqliteActionStateStore
from flink_agents.runtime.errors import ActionExecutionError, LongTermMemoryError
from flink_agents.runtime.memory.internal_base_long_term_memory import (
    InternalBaseLongTermMemory,
    LongTermOp,
)
from flink_agents.runtime.run_state import KeyState

ITEMS: dict[tuple[str, str], dict[str, str]] = {}
CALLS: list[tuple[str, str, str]] = []


class DictBackend(InternalBaseLongTermMemory):
    """Items in a dict per (key, set) (`ITEMS`, calls in `CALLS`); a search finds the
    items that share a word with the query."""

    def scoped_call(self, key: str, op: LongTermOp, memory_set: str, params: dict[str, Any]) -> Any:
        CALLS.append((key, op, memory_set))
        held = ITEMS.setdefault((key, memory_set), {})
        if op == "add":
            entries = []
            for text in params["items"]:
                memory_id = f"m{len(held)}"
                held[memory_id] = text
                entries.append({"id": memory_id, "event": "ADD", "memory": text})
            return entries
        if op == "search":
            words = set(params["query"].lower().split())
            return [
                {"id": i, "memory": text, "score": 1.0}
                for i, text in held.items()
                if words & set(text.lower().split())
            ][: params["limit"]]
        if op == "get":
            return [{"id": i, "memory": text} for i, text in held.items()]
        if op == "delete_set":
            held.clear()
        return None

    def configure_observation(self, **_: bool) -> None: ...

    def switch_context(self, key: str, **_: Any) -> None: ...

    def get_memory_set(self, name: str) -> MemorySet: ...  # type: ignore[empty-body]

    def delete_memory_set(self, name: str) -> bool: ...  # type: ignore[empty-body]

    def add(self, *a: Any, **k: Any) -> list[str]: ...  # type: ignore[empty-body]

    def get(self, *a: Any, **k: Any) -> list[MemorySetItem]: ...  # type: ignore[empty-body]

    def delete(self, *a: Any, **k: Any) -> None: ...

    def search(self, *a: Any, **k: Any) -> list[MemorySetItem]: ...  # type: ignore[empty-body]

    def close(self) -> None: ...


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ITEMS.clear()
    CALLS.clear()


def remember_then_recall(event: Event, ctx: RunnerContext) -> None:
    """Input "fact": store it; input "? words": answer what the set holds about them."""
    text: str = event.get_attr("input")
    prefs = ctx.long_term_memory.get_memory_set("prefs")
    if text.startswith("? "):
        ctx.send_event(OutputEvent(output=[i.value for i in prefs.search(text[2:], limit=3)]))
    else:
        ctx.send_event(OutputEvent(output=prefs.add(text)))


SEEN: list[Event] = []


def listen(event: Event, ctx: RunnerContext) -> None:
    SEEN.append(event)


def agent(*listened: type[Event]) -> Agent:
    built = Agent().add_action("remember", [InputEvent], remember_then_recall)
    if listened:
        built.add_action("listen", list(listened), listen)
    return built


def engine_for(built: Agent, **kwargs: Any) -> AgentEngine:
    engine = AgentEngine(built, **kwargs)
    engine._long_term_memory = DictBackend()
    return engine


def run(engine: AgentEngine, key: str, value: str, state: KeyState | None = None) -> Any:
    state = state if state is not None else KeyState()
    outputs = asyncio.run(engine.run(engine.start_run(key, value, state), state))
    return [output for output in outputs]


def test_a_key_never_finds_another_keys_items() -> None:
    engine = engine_for(agent())
    alice, bob = KeyState(), KeyState()
    run(engine, "alice", "likes green tea", alice)
    run(engine, "bob", "likes black coffee", bob)
    assert run(engine, "alice", "? what she likes", alice) == [["likes green tea"]]
    assert run(engine, "bob", "? what he likes", bob) == [["likes black coffee"]]
    # The scope is the key's typed text: "1" and 1 are two keys.
    assert {key for key, _, _ in CALLS} == {'"alice"', '"bob"'}


def test_a_restored_run_gets_its_recorded_memory_calls(tmp_path: Any) -> None:
    log = DurableCallLog(SqliteActionStateStore(str(tmp_path / "calls.db")))
    state = KeyState()
    snapshot = state.to_json()
    first = run(engine_for(agent(), call_log=log), "k", "likes green tea", state)
    assert len(CALLS) == 1
    # A restart from before the run: the add is answered from the record, not made again.
    again = run(
        engine_for(agent(), call_log=log), "k", "likes green tea", KeyState.from_json(snapshot)
    )
    assert again == first == [["m0"]]
    assert len(CALLS) == 1
    # A different question is not answered by that record.
    run(engine_for(agent(), call_log=log), "k", "? green", KeyState.from_json(snapshot))
    assert [op for _, op, _ in CALLS] == ["add", "search"]
    log.close()


def test_the_actions_memory_events_are_made_when_listened_to() -> None:
    SEEN.clear()
    engine = engine_for(agent(LongTermUpdateEvent, LongTermSearchEvent, LongTermGetEvent))
    state = KeyState()
    run(engine, "k", "likes green tea", state)
    run(engine, "k", "? green", state)
    update, search = SEEN
    assert isinstance(update, LongTermUpdateEvent)
    assert update.key == "k" and update.value == {"prefs": {"m0": "likes green tea"}}
    assert update.cleared_sets == []
    assert isinstance(search, LongTermSearchEvent)
    assert search.results == {
        "prefs": {"green": [{"id": "m0", "value": "likes green tea", "score": 1.0}]}
    }


def test_an_event_kind_turned_off_is_not_made() -> None:
    SEEN.clear()
    engine = engine_for(
        agent(LongTermUpdateEvent), config={"memory.generate-event.long-term-update": False}
    )
    run(engine, "k", "likes green tea")
    assert SEEN == []


def test_without_a_backend_the_error_names_the_options() -> None:
    engine = AgentEngine(agent())
    with pytest.raises(ActionExecutionError) as caught:
        run(engine, "k", "likes green tea")
    cause = caught.value.__cause__
    assert isinstance(cause, LongTermMemoryError)
    assert "long-term-memory.mem0.chat-model-setup" in str(cause)
    assert "long-term-memory.mem0.vector-store" in str(cause)
