"""Memory in agent runs: the short-term memory TTL, memory events and the run-begin event."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import logging
from typing import Any, ClassVar

import pytest

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext
from flink_agents.api.decorators import action
from flink_agents.api.events.event_type import EventType
from flink_agents.api.events.memory_event import MemoryEvent, ShortTermWriteEvent
from flink_agents.api.events.run_event import AgentRunBeginEvent
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.event_log import EventLog
from flink_agents.runtime.run_state import KeyState, RunState


class Clock:
    """Milliseconds that pass only when a test says so."""

    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def engine_with_clock(agent: Agent, config: dict[str, Any], clock: Clock) -> AgentEngine:
    engine = AgentEngine(agent, config)
    engine.memory = dataclasses.replace(engine.memory, clock_ms=clock)
    return engine


def run_once(engine: AgentEngine, key_state: KeyState, value: Any, key: str = "k") -> list[Any]:
    run = engine.start_run(key, value, key_state)
    return asyncio.run(engine.run(run, key_state))


# ---------------------------------------------------------------- TTL


def remember(event: Event, ctx: RunnerContext) -> None:
    """Input ("set", path, value) writes; ("get", path) answers the value; ("wait", ms)
    moves the test clock forward during the action, then reads path "a"."""
    command = event.get_attr("input")
    memory = ctx.short_term_memory
    if command[0] == "set":
        memory.set(command[1], command[2])
        ctx.send_event(OutputEvent(output="ok"))
    elif command[0] == "get":
        ctx.send_event(OutputEvent(output=memory.get(command[1])))
    else:
        CLOCK.now += command[1]
        ctx.send_event(OutputEvent(output=[memory.get("a"), memory.is_exist("a"), list(memory)]))


CLOCK = Clock()
TTL = {"short-term-memory.state-ttl.ms": 1000}


def ttl_engine(**options: Any) -> AgentEngine:
    agent = Agent().add_action("remember", [InputEvent], remember)
    return engine_with_clock(agent, {**TTL, **options}, CLOCK)


def test_an_expired_value_reads_as_absent() -> None:
    engine, state = ttl_engine(), KeyState()
    run_once(engine, state, ("set", "a", 1))
    CLOCK.now += 999
    assert run_once(engine, state, ("get", "a")) == [1]
    CLOCK.now += 1000  # the read above refreshed it (ON_READ_AND_WRITE): 1000 ms since
    assert run_once(engine, state, ("get", "a")) == [None]
    assert state.short_term_memory == {} and state.memory_touched_ms == {}


def test_without_ttl_nothing_expires_and_no_times_are_kept() -> None:
    engine, state = (
        engine_with_clock(Agent().add_action("remember", [InputEvent], remember), {}, CLOCK),
        KeyState(),
    )
    run_once(engine, state, ("set", "a", 1))
    CLOCK.now += 10**9
    assert run_once(engine, state, ("get", "a")) == [1]
    assert state.memory_touched_ms == {}
    assert "memory_touched_ms" not in state.to_json()


def test_on_create_and_write_reads_do_not_refresh() -> None:
    engine = ttl_engine(**{"short-term-memory.state-ttl.update-type": "ON_CREATE_AND_WRITE"})
    state = KeyState()
    run_once(engine, state, ("set", "a", 1))
    CLOCK.now += 600
    assert run_once(engine, state, ("get", "a")) == [1]
    CLOCK.now += 600  # 1200 ms after the write
    assert run_once(engine, state, ("get", "a")) == [None]


def test_writes_refresh_the_objects_above_them() -> None:
    engine, state = ttl_engine(), KeyState()
    run_once(engine, state, ("set", "user.name", "ann"))
    CLOCK.now += 800
    run_once(engine, state, ("set", "user.tier", 2))
    CLOCK.now += 800  # "user.name" expired, "user" was refreshed by the second write
    assert run_once(engine, state, ("get", "user.name")) == [None]
    assert run_once(engine, state, ("get", "user.tier")) == [2]
    assert list(state.short_term_memory) == ["user"]


def test_a_value_expiring_during_a_run_hides_at_once_by_default() -> None:
    engine, state = ttl_engine(), KeyState()
    run_once(engine, state, ("set", "a", 1))
    assert run_once(engine, state, ("wait", 1000)) == [[None, False, []]]


def test_return_expired_if_not_cleaned_up_shows_it_until_the_next_run() -> None:
    engine = ttl_engine(
        **{"short-term-memory.state-ttl.visibility": "RETURN_EXPIRED_IF_NOT_CLEANED_UP"}
    )
    state = KeyState()
    run_once(engine, state, ("set", "a", 1))
    assert run_once(engine, state, ("wait", 1000)) == [[1, True, ["a"]]]
    CLOCK.now += 1000
    assert run_once(engine, state, ("get", "a")) == [None]  # cleaned up when the run started


def test_times_survive_the_key_state_json() -> None:
    engine, state = ttl_engine(), KeyState()
    run_once(engine, state, ("set", "a", 1))
    restored = KeyState.from_json(state.to_json())
    assert restored.memory_touched_ms == {"a": CLOCK.now}
    CLOCK.now += 1000
    assert run_once(engine, restored, ("get", "a")) == [None]


def test_values_written_before_ttl_was_on_get_a_time_at_the_next_run() -> None:
    engine, state = ttl_engine(), KeyState(short_term_memory={"old": 1})
    assert run_once(engine, state, ("get", "old")) == [1]
    assert state.memory_touched_ms == {"old": CLOCK.now}


# ---------------------------------------------------------------- memory events


class AuditingAgent(Agent):
    """Writes to both memories on input; audits the memory events it gets."""

    seen: ClassVar[list[Event]] = []

    @action(EventType.InputEvent)
    @staticmethod
    def process(event: Event, ctx: RunnerContext) -> None:
        stm = ctx.short_term_memory
        stm.set("user.tier", "silver")
        stm.set("user.tier", "gold")  # the last write wins
        stm.new_object("prefs")
        ctx.sensory_memory.set("draft", {"n": 1})
        stm.get("user.tier")  # reads make no event by default
        ctx.send_event(OutputEvent(output="done"))

    @action(
        EventType.ShortTermWriteEvent, EventType.SensoryWriteEvent, EventType.ShortTermReadEvent
    )
    @staticmethod
    def audit(event: Event, ctx: RunnerContext) -> None:
        AuditingAgent.seen.append(MemoryEvent.from_event(event))
        ctx.short_term_memory.set("audited", True)  # makes no further memory event


def test_an_action_gets_the_memory_events_of_the_actions_before_it() -> None:
    AuditingAgent.seen = []
    engine, state = AgentEngine(AuditingAgent()), KeyState()
    assert run_once(engine, state, 1, key="user-42") == ["done"]
    stm_write, sensory_write = AuditingAgent.seen
    assert isinstance(stm_write, ShortTermWriteEvent)
    assert stm_write.key == "user-42"
    assert stm_write.value == {"user.tier": "gold", "prefs": None}
    assert stm_write.upstream_action_name == "process"
    assert sensory_write.type == EventType.SensoryWriteEvent
    assert sensory_write.value == {"draft": {"n": 1}}
    assert state.short_term_memory["audited"] is True


def test_read_events_when_enabled_and_none_when_switched_off() -> None:
    AuditingAgent.seen = []
    engine = AgentEngine(AuditingAgent(), {"memory.generate-event.short-term-read": True})
    run_once(engine, KeyState(), 1)
    assert [e.type for e in AuditingAgent.seen] == [
        EventType.ShortTermWriteEvent,
        EventType.ShortTermReadEvent,
        EventType.SensoryWriteEvent,
    ]
    assert AuditingAgent.seen[1].value == {"user.tier": "gold"}

    AuditingAgent.seen = []
    run_once(AgentEngine(AuditingAgent(), {"memory.generate-event": False}), KeyState(), 1)
    assert AuditingAgent.seen == []


def test_no_memory_events_when_no_action_listens() -> None:
    def write(event: Event, ctx: RunnerContext) -> None:
        ctx.short_term_memory.set("x", 1)

    engine, state = AgentEngine(Agent().add_action("w", [InputEvent], write)), KeyState()
    run = engine.start_run("k", 1, state)
    asyncio.run(engine.step(run, state))
    assert run.pending_events == [] and run.done


def test_memory_events_have_ids_from_the_runs_position() -> None:
    AuditingAgent.seen = []
    run_once(AgentEngine(AuditingAgent()), KeyState(), 1, key="k")
    first = [e.id for e in AuditingAgent.seen]
    AuditingAgent.seen = []
    run_once(AgentEngine(AuditingAgent()), KeyState(), 1, key="k")
    assert [e.id for e in AuditingAgent.seen] == first


# ---------------------------------------------------------------- run-begin event


class BeginAgent(Agent):
    order: ClassVar[list[Any]] = []

    @action(EventType.AgentRunBeginEvent)
    @staticmethod
    def on_begin(event: Event, ctx: RunnerContext) -> None:
        begin = AgentRunBeginEvent.from_event(event)
        BeginAgent.order.append(("begin", begin.key, begin.value, begin.upstream_action_name))

    @action(EventType.InputEvent)
    @staticmethod
    def on_input(event: Event, ctx: RunnerContext) -> None:
        BeginAgent.order.append(("input", event.get_attr("input")))
        ctx.short_term_memory.set(f"seen.n{event.get_attr('input')}", [event.get_attr("input")])


def test_the_run_begin_event_comes_first_with_the_memory_values() -> None:
    BeginAgent.order = []
    engine, state = AgentEngine(BeginAgent(), {"agent-run.begin-event": True}), KeyState()
    run = engine.start_run(7, 1, state)
    begin, input_event = run.pending_events
    assert isinstance(begin, AgentRunBeginEvent) and begin.upstream_event_id == input_event.id
    asyncio.run(engine.run(run, state))
    run_once(engine, state, 2, key=7)  # type: ignore[arg-type]
    assert BeginAgent.order == [
        ("begin", "7", {}, "agent_run_begin_action"),
        ("input", 1),
        ("begin", "7", {"seen.n1": [1]}, "agent_run_begin_action"),
        ("input", 2),
    ]
    restored = RunState.from_json(engine.start_run(7, 3, state).to_json())
    assert isinstance(restored.pending_events[0], AgentRunBeginEvent)


def test_no_run_begin_event_unless_enabled() -> None:
    BeginAgent.order = []
    engine, state = AgentEngine(BeginAgent()), KeyState()
    assert [e.type for e in engine.start_run("k", 1, state).pending_events] == ["_input_event"]


# ---------------------------------------------------------------- in the event log


def test_with_an_event_log_memory_events_are_logged_though_no_action_listens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As upstream, the event log shows the memory events the options enable; with no
    action listening they are logged only: not queued, no "no action handles" warning."""

    def write(event: Event, ctx: RunnerContext) -> None:
        ctx.short_term_memory.set("user.tier", "gold")
        ctx.send_event(OutputEvent(output="ok"))

    stream = io.StringIO()
    agent = Agent().add_action("write", [InputEvent], write)
    engine = AgentEngine(agent, event_log=EventLog(stream, upstream_records=True))
    state = KeyState()
    run = engine.start_run(7, 1, state)
    with caplog.at_level(logging.WARNING):
        assert asyncio.run(engine.run(run, state)) == ["ok"]
    assert run.done and run.pending_events == [] and run.action_steps == 1
    assert "no action handles" not in caplog.text
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [r["eventType"] for r in records] == [
        "_input_event",
        "_output_event",
        "_short_term_write_event",
    ]
    assert records[2]["eventAttributes"] == {"key": "7", "value": {"user.tier": "gold"}}
    # Without an event log (and no listener) none is made, as before.
    assert AgentEngine(agent).memory.event_types == frozenset()


def test_the_run_begin_event_is_logged_right_after_its_input_event() -> None:
    stream = io.StringIO()
    engine = AgentEngine(
        BeginAgent(),
        {"agent-run.begin-event": True},
        event_log=EventLog(stream, upstream_records=True),
    )
    state = KeyState()
    run_once(engine, state, 1, key="k")
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [r["eventType"] for r in records[:2]] == ["_input_event", "_agent_run_begin_event"]
    assert records[1]["upstreamEventId"] == records[0]["eventId"]
