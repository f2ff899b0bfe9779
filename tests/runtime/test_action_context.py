"""`ActionContext`, the context each action execution gets: what it refuses to send, the
ids and lineage of what it sends, memory, action config and metrics, durable calls."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ValidationError

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext
from flink_agents.runtime.action_context import event_id_for
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.durable import DurableCallLog, SqliteActionStateStore
from flink_agents.runtime.errors import ActionExecutionError
from flink_agents.runtime.run_state import KeyState

SENT: list[str] = []


def send_email(to: str) -> str:
    """A call with a side effect."""
    SENT.append(to)
    return f"sent to {to}"


async def mail_action(event: Event, ctx: RunnerContext) -> None:
    result = await ctx.durable_execute_async(send_email, event.attributes["input"])
    ctx.send_event(OutputEvent(output=result))


def _run(engine: AgentEngine, key: Any, value: Any) -> list[Any]:
    key_state = KeyState()  # a fresh key: its first input is seq 0
    return asyncio.run(engine.run(engine.start_run(key, value, key_state), key_state))


@pytest.fixture(autouse=True)
def _clear_sent() -> None:
    SENT.clear()


def test_keys_of_different_types_keep_separate_records(tmp_path: Path) -> None:
    store = SqliteActionStateStore(tmp_path / "calls.db")
    log = DurableCallLog(store)
    agent = Agent().add_action("mail", InputEvent, mail_action)
    engine = AgentEngine(agent, call_log=log)
    # The same call (same function, same argument) at the same seq, step and action.
    assert _run(engine, 1, "a@example.com") == ["sent to a@example.com"]
    assert _run(engine, "1", "a@example.com") == ["sent to a@example.com"]
    assert SENT == ["a@example.com", "a@example.com"]  # the second key's side effect ran
    assert [r.key.agent_key for r in store.load_run("1", 0)] == ["1"]
    assert [r.key.agent_key for r in store.load_run('"1"', 0)] == ['"1"']
    # Each key replays its own record.
    _run(engine, 1, "a@example.com")
    _run(engine, "1", "a@example.com")
    assert len(SENT) == 2
    engine.close()
    log.close()


def test_a_key_with_no_text_is_refused_before_the_call(tmp_path: Path) -> None:
    log = DurableCallLog(SqliteActionStateStore(tmp_path / "calls.db"))
    engine = AgentEngine(Agent().add_action("mail", InputEvent, mail_action), call_log=log)
    with pytest.raises(ActionExecutionError) as raised:
        _run(engine, None, "a@example.com")
    assert isinstance(raised.value.__cause__, TypeError)
    assert "None" in str(raised.value.__cause__)
    assert SENT == []
    engine.close()
    log.close()


def _cause(engine: AgentEngine, key: Any = "k", value: Any = 0) -> BaseException:
    """The exception an action raised, from the failed run."""
    with pytest.raises(ActionExecutionError) as raised:
        _run(engine, key, value)
    cause = raised.value.__cause__
    assert cause is not None
    return cause


# ---------------------------------------------------------------------- identity


def test_the_context_names_the_key_the_run_and_the_action() -> None:
    async def whoami(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=[ctx.key, ctx.seq, ctx.action_name]))  # type: ignore[attr-defined]

    engine = AgentEngine(Agent().add_action("whoami", InputEvent, whoami))
    key_state = KeyState(next_seq=7)  # the key's eighth input
    run = engine.start_run(("user", 1), "hi", key_state)
    assert asyncio.run(engine.run(run, key_state)) == [[("user", 1), 7, "whoami"]]


# ---------------------------------------------------------------------- sending events


def test_send_event_takes_only_events() -> None:
    async def send_a_dict(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event({"type": "report"})  # type: ignore[arg-type]

    cause = _cause(AgentEngine(Agent().add_action("send", InputEvent, send_a_dict)))
    assert isinstance(cause, TypeError)
    assert str(cause) == "send_event takes an Event, got dict"


def test_an_event_state_cannot_keep_is_refused_when_it_is_sent() -> None:
    refused: list[str] = []

    async def send(event: Event, ctx: RunnerContext) -> None:
        with pytest.raises(ValidationError):  # as upstream: refused when it is made
            Event("report", {"payload": object()})
        event = Event("report")
        event.attributes["payload"] = object()  # changed in place: refused when sent
        try:
            ctx.send_event(event)
        except TypeError as exc:  # at the call, on every runner: not at a checkpoint
            refused.append(str(exc))
        ctx.send_event(OutputEvent(output="went on"))

    async def report(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output="reported"))

    agent = Agent().add_action("send", InputEvent, send).add_action("report", "report", report)
    assert _run(AgentEngine(agent), "k", 0) == ["went on"]  # the refused event never went
    [message] = refused
    assert message.startswith("key 'k': a report event cannot be sent: attribute['payload']")


def test_an_output_without_json_form_is_refused_when_it_is_sent() -> None:
    """On Flink an output crosses to downstream as JSON (as upstream's, whose OutputEvent
    refuses it when it is made): refused at the send, on every runner, not on its way out."""
    refused: list[str] = []

    class Opaque:
        pass

    class Holder(BaseModel):
        value: Any

    async def send(event: Event, ctx: RunnerContext) -> None:
        try:
            ctx.send_event(OutputEvent(output={"held": Holder(value=Opaque())}))
        except TypeError as exc:
            refused.append(str(exc))
        ctx.send_event(OutputEvent(output=Holder(value=[1])))

    agent = Agent().add_action("send", InputEvent, send)
    assert _run(AgentEngine(agent), "k", 0) == [Holder(value=[1])]  # a model, as sent
    [message] = refused
    assert message.startswith(f"key 'k': a {OutputEvent.EVENT_TYPE} event cannot be sent:")
    assert "model_dump(mode='json') of" in message and "Opaque()" not in message


class Ticket(BaseModel):
    id: str


class TicketEvent(Event):
    EVENT_TYPE: ClassVar[str] = "test_action_context.ticket"
    ATTRIBUTE_TYPES: ClassVar[Mapping[str, Any]] = {"ticket": Ticket}


def test_a_plain_event_of_a_known_type_is_sent_as_its_class() -> None:
    received: list[Event] = []
    refused: list[str] = []

    async def send(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(Event(TicketEvent.EVENT_TYPE, {"ticket": {"id": "T1"}}))
        try:
            ctx.send_event(Event(TicketEvent.EVENT_TYPE, {"ticket": {"number": 1}}))
        except TypeError as exc:
            refused.append(str(exc))

    async def receive(event: Event, ctx: RunnerContext) -> None:
        received.append(event)

    agent = (
        Agent()
        .add_action("send", InputEvent, send)
        .add_action("receive", TicketEvent.EVENT_TYPE, receive)
    )
    _run(AgentEngine(agent), "k", 0)
    # Its class's view, as it would be after a restore: attributes of their declared type.
    [ticket] = received
    assert type(ticket) is TicketEvent and ticket.attributes == {"ticket": Ticket(id="T1")}
    [message] = refused  # an attribute its class refuses: not sent
    assert message.startswith(f"key 'k': a {TicketEvent.EVENT_TYPE} event cannot be sent:")


def test_sent_events_get_ids_from_the_runs_position_and_keep_their_attributes() -> None:
    sent: list[Event] = []
    delivered: list[Event] = []

    async def send(event: Event, ctx: RunnerContext) -> None:
        for n in range(2):
            note = Event("note", {"n": n})
            ctx.send_event(note)
            note.attributes["n"] = "changed after sending"  # the run holds its own copy
            sent.append(note)

    async def receive(event: Event, ctx: RunnerContext) -> None:
        delivered.append(event)

    agent = Agent().add_action("send", InputEvent, send).add_action("receive", "note", receive)
    engine = AgentEngine(agent)
    key_state = KeyState(next_seq=3)
    run = engine.start_run("k", 0, key_state)
    input_id = run.pending_events[0].id
    asyncio.run(engine.run(run, key_state))
    # (key, seq, action step, n): the same when the run is replayed.
    ids = [event_id_for("k", 3, 0, 0), event_id_for("k", 3, 0, 1)]
    assert [e.id for e in sent] == ids  # the sender's objects carry them too
    assert [(e.id, e.attributes) for e in delivered] == [(ids[0], {"n": 0}), (ids[1], {"n": 1})]
    assert {(e.upstream_event_id, e.upstream_action_name) for e in delivered} == {
        (input_id, "send")
    }


# ---------------------------------------------------------------------- memory


def test_sensory_memory_is_the_runs_and_short_term_memory_the_keys() -> None:
    seen: list[tuple[Any, ...]] = []

    async def first(event: Event, ctx: RunnerContext) -> None:
        before = ctx.sensory_memory.get("note")
        ctx.sensory_memory["note"] = f"from run {ctx.seq}"  # type: ignore[attr-defined]
        ctx.short_term_memory["runs"] = ctx.short_term_memory.get("runs", 0) + 1
        seen.append(("first", before))
        ctx.send_event(Event("next"))

    async def second(event: Event, ctx: RunnerContext) -> None:
        seen.append(("second", ctx.sensory_memory.get("note"), ctx.short_term_memory.get("runs")))
        ctx.send_event(OutputEvent(output=None))

    engine = AgentEngine(
        Agent().add_action("first", InputEvent, first).add_action("second", "next", second)
    )
    a, b = KeyState(), KeyState()
    for key, key_state in (("a", a), ("a", a), ("b", b)):
        asyncio.run(engine.run(engine.start_run(key, 0, key_state), key_state))
    assert seen == [
        ("first", None),  # each run starts with empty sensory memory
        ("second", "from run 0", 1),  # the next action of the run reads what was written
        ("first", None),
        ("second", "from run 1", 2),  # short-term memory went on from the key's last run
        ("first", None),
        ("second", "from run 0", 1),  # another key: its own
    ]


# ---------------------------------------------------------------------- config, metrics


def test_action_config_and_the_actions_metric_group() -> None:
    seen: dict[str, Any] = {}

    async def act(event: Event, ctx: RunnerContext) -> None:
        seen["config"] = ctx.action_config
        seen["limit"] = ctx.get_action_config_value("limit")
        seen["missing"] = ctx.get_action_config_value("missing", "default")
        ctx.action_config["limit"] = 99  # a copy: the action's config stays
        ctx.action_metric_group.get_counter("handled").inc()
        ctx.send_event(OutputEvent(output=ctx.get_action_config_value("limit")))

    engine = AgentEngine(Agent().add_action("act", InputEvent, act, limit=3))
    assert _run(engine, "k", 0) == [3]
    assert seen == {"config": {"limit": 3}, "limit": 3, "missing": "default"}
    assert engine.metrics.snapshot()["action"]["act"]["handled"] == 1  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- durable calls


def test_durable_execute_takes_a_sync_function() -> None:
    async def fetch() -> int:
        return 1

    def sync_action(event: Event, ctx: RunnerContext) -> None:
        ctx.durable_execute(fetch)

    cause = _cause(AgentEngine(Agent().add_action("sync_action", InputEvent, sync_action)))
    assert isinstance(cause, TypeError)
    assert str(cause) == "durable_execute takes a sync function; use durable_execute_async"


def test_without_a_log_durable_calls_are_plain_calls_and_still_numbered() -> None:
    indexes: list[int] = []
    unwrapped: list[bool] = []

    async def double(x: int) -> int:
        return 2 * x

    def triple(x: int) -> tuple[int, str]:
        return 3 * x, threading.current_thread().name

    async def act(event: Event, ctx: RunnerContext) -> None:
        indexes.append(ctx.next_call_index)  # type: ignore[attr-defined]
        doubled = ctx.durable_execute_async(double, 4)
        # Nothing to record: an async function's call is the coroutine itself.
        unwrapped.append(asyncio.iscoroutine(doubled) and doubled.__qualname__.endswith("double"))
        indexes.append(ctx.next_call_index)  # type: ignore[attr-defined]
        tripled, thread = await ctx.durable_execute_async(triple, 5)  # a sync one: on a thread
        indexes.append(ctx.next_call_index)  # type: ignore[attr-defined]
        ctx.send_event(OutputEvent(output=[await doubled, tripled, thread]))

    engine = AgentEngine(Agent().add_action("act", InputEvent, act))
    [[doubled, tripled, thread]] = _run(engine, "k", 0)
    engine.close()
    assert (doubled, tripled) == (8, 15)
    assert thread.startswith("agent-action")
    assert unwrapped == [True]
    assert indexes == [0, 1, 2]  # numbered as called, recorded or not


def test_forgotten_calls_are_made_again_when_the_run_is_replayed(tmp_path: Path) -> None:
    calls: list[str] = []

    def lookup(name: str) -> str:
        calls.append(name)
        return name.upper()

    async def act(event: Event, ctx: RunnerContext) -> None:
        first = await ctx.durable_execute_async(lookup, "a")
        second = await ctx.durable_execute_async(lookup, "b")
        if event.attributes["input"] == "forget":
            await ctx.forget_durable_calls(1)  # type: ignore[attr-defined]
        ctx.send_event(OutputEvent(output=first + second))

    log = DurableCallLog(SqliteActionStateStore(tmp_path / "calls.db"))
    engine = AgentEngine(Agent().add_action("act", InputEvent, act), call_log=log)
    # The same run twice (as after a restart), on two keys.
    for _ in range(2):
        assert _run(engine, "kept", "keep") == ["AB"]
        assert _run(engine, "forgot", "forget") == ["AB"]
    engine.close()
    log.close()
    # "kept" replayed both calls; "forgot" replayed call 0 and made call 1 again.
    assert calls == ["a", "b", "a", "b", "b"]
