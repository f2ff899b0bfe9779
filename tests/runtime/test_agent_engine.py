"""The run engine: steps, snapshots, resume, ids, failures, memory and durable calls."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import cloudpickle
import pytest

from flink_agents.api import (
    Agent,
    ChatMessage,
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    MessageRole,
    OutputEvent,
    Prompt,
    Resource,
    ResourceDescriptor,
    ResourceType,
    RunnerContext,
    ScriptedChatModelConnection,
    ToolCallBlock,
    ToolMetadata,
    ToolRequestEvent,
    ToolResponseEvent,
)
from flink_agents.api.prompts import LocalPrompt
from flink_agents.plan import AgentPlan
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.builtin_actions import CHAT_ACTION, TOOL_ACTION
from flink_agents.runtime.context_retrieval import CONTEXT_RETRIEVAL_ACTION
from flink_agents.runtime.errors import ActionExecutionError, UnhandledEventError
from flink_agents.runtime.run_state import KeyState, RunState
from tests.runtime.chat_agents import chat_agent


def lookup(ticket: str) -> str:
    """Look a ticket up.

    Args:
        ticket: The ticket id.
    """
    return f"{ticket} is open"


def two_turn_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    last = messages[-1]
    if last.role.value == "user":
        return ChatMessage.assistant(
            tool_calls=[
                ToolCallBlock(id="c1", name="lookup", input={"ticket": "T1"}),
                ToolCallBlock(id="c2", name="lookup", input={"ticket": "T2"}),
            ]
        )
    return " / ".join(m.tool_result_block.text for m in messages if m.tool_result_block)


def run_to_end(engine: AgentEngine, run: RunState, key_state: KeyState) -> list[Any]:
    return asyncio.run(engine.run(run, key_state))


def test_an_agent_runs_with_the_builtin_chat_and_tool_actions() -> None:
    async def finish(event: Event, ctx: RunnerContext) -> None: ...

    agent = Agent().add_action("finish", ChatResponseEvent, finish)
    plan = AgentEngine(agent).plan
    assert list(plan.actions) == [CHAT_ACTION, TOOL_ACTION, CONTEXT_RETRIEVAL_ACTION, "finish"]
    assert [s.name for s in plan.actions_for(ChatRequestEvent.EVENT_TYPE)] == [CHAT_ACTION]
    assert [s.name for s in plan.actions_for(ToolResponseEvent.EVENT_TYPE)] == [CHAT_ACTION]
    assert [s.name for s in plan.actions_for(ToolRequestEvent.EVENT_TYPE)] == [TOOL_ACTION]
    assert [s.name for s in plan.actions_for(ChatResponseEvent.EVENT_TYPE)] == ["finish"]
    # A plan given to the engine runs as it is.
    bare = AgentPlan.from_agent(agent)
    assert AgentEngine(bare).plan is bare


def test_the_builtin_action_names_are_reserved() -> None:
    async def mine(event: Event, ctx: RunnerContext) -> None: ...

    with pytest.raises(ValueError, match=f"{CHAT_ACTION!r} is reserved"):
        AgentEngine(Agent().add_action(CHAT_ACTION, InputEvent, mine))


def test_a_step_processes_one_event() -> None:
    async def start(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(Event("middle", {"n": 1}))
        ctx.send_event(OutputEvent(output="early"))

    async def middle(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.attributes["n"] + 1))

    async def also_middle(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output="second action"))

    agent = (
        Agent()
        .add_action("start", InputEvent, start)
        .add_action("middle", "middle", middle)
        .add_action("also_middle", "middle", also_middle)
    )
    engine = AgentEngine(agent)
    key_state = KeyState()
    run = engine.start_run("k", "hello", key_state)
    assert (run.seq, key_state.next_seq) == (0, 1)
    assert [e.type for e in run.pending_events] == ["_input_event"]

    asyncio.run(engine.step(run, key_state))
    assert [e.type for e in run.pending_events] == ["middle"]
    assert run.outputs == ["early"]
    assert run.action_steps == 1 and not run.done

    asyncio.run(engine.step(run, key_state))
    assert run.pending_events == []
    assert run.outputs == ["early", 2, "second action"]  # both actions ran, in order
    assert run.action_steps == 3 and run.done

    second = engine.start_run("k", "again", key_state)
    assert second.seq == 1 and key_state.next_seq == 2


def test_lineage_and_deterministic_ids() -> None:
    seen: list[Event] = []

    async def start(event: Event, ctx: RunnerContext) -> None:
        sent = Event("next")
        ctx.send_event(sent)
        seen.append(sent)  # the sender's object carries the id it was given

    async def record(event: Event, ctx: RunnerContext) -> None:
        seen.append(event)

    agent = Agent().add_action("start", InputEvent, start).add_action("record", "next", record)

    def ids() -> list[tuple[str, str | None, str | None]]:
        seen.clear()
        engine = AgentEngine(agent)
        key_state = KeyState()
        run = engine.start_run("key-1", 0, key_state)
        input_id = run.pending_events[0].id
        run_to_end(engine, run, key_state)
        assert seen[0].upstream_event_id == input_id
        return [(e.id, e.upstream_event_id, e.upstream_action_name) for e in seen]

    first, second = ids(), ids()
    assert first == second  # a replayed run sends events with the same ids
    assert first[0] == first[1]  # the sender's copy and the delivered event agree
    assert first[0][2] == "start"


def test_run_state_snapshot_resumes_in_another_runner() -> None:
    model = FunctionChatModelConnection(function=two_turn_model)
    agent = chat_agent(model, tools={"lookup": lookup})
    shipped = cloudpickle.dumps(AgentEngine(agent))  # as a Flink job ships it

    engine = cloudpickle.loads(shipped)
    key_state = KeyState()
    run = engine.start_run("k", "check both", key_state)
    while not any(isinstance(e, ToolRequestEvent) for e in run.pending_events):
        asyncio.run(engine.step(run, key_state))
    assert run.chat_loops and not run.sensory_memory  # the loop is the run's, not the agent's

    # Checkpoint here, restore in a "new process" and go on.
    run_json, key_json = run.to_json(), key_state.to_json()
    restored_run = RunState.from_json(run_json)
    restored_key = KeyState.from_json(key_json)
    assert restored_run.to_json() == run_json
    assert isinstance(restored_run.pending_events[0], ToolRequestEvent)

    other = cloudpickle.loads(shipped)
    outputs = run_to_end(other, restored_run, restored_key)
    assert len(outputs) == 1 and isinstance(outputs[0], ChatResponseEvent)
    assert outputs[0].response is not None
    assert outputs[0].response.text == "T1 is open / T2 is open"
    resumed_model = other.get_resource("connection", ResourceType.CHAT_MODEL_CONNECTION)
    assert isinstance(resumed_model, FunctionChatModelConnection)
    # The restored loop sent the full history: request, assistant, two tool messages.
    assert [m.role.value for m in resumed_model.calls[0].messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
    ]
    assert restored_run.chat_loops == {}


def test_run_state_json_holds_no_pickles() -> None:
    agent = chat_agent(
        FunctionChatModelConnection(function=two_turn_model), tools={"lookup": lookup}
    )
    engine = AgentEngine(agent)
    key_state = KeyState(short_term_memory={"seen": 3})
    run = engine.start_run("k", {"q": "x"}, key_state)
    asyncio.run(engine.step(run, key_state))
    asyncio.run(engine.step(run, key_state))
    text = run.to_json()
    data = json.loads(text)
    # The chat loop's state is plain JSON: the history as ChatMessage JSON.
    (loop,) = data["chat_loops"].values()
    assert data["sensory_memory"] == {}
    assert [ChatMessage.model_validate(m).role.value for m in loop["history"]] == [
        "user",
        "assistant",
    ]
    assert data["pending_events"][0]["type"] == "_tool_request_event"
    restored = RunState.from_json(text)
    assert restored.key == "k" and restored.seq == 0
    assert [type(e) for e in restored.pending_events] == [type(e) for e in run.pending_events]
    assert KeyState.from_json(key_state.to_json()) == key_state


def test_failed_action_leaves_the_run_as_it_was() -> None:
    attempts = {"n": 0}

    async def flaky(event: Event, ctx: RunnerContext) -> None:
        attempts["n"] += 1
        ctx.send_event(OutputEvent(output="partial"))
        if attempts["n"] == 1:
            raise ValueError("first attempt fails")

    engine = AgentEngine(Agent().add_action("flaky", InputEvent, flaky))
    key_state = KeyState()
    run = engine.start_run("k", 1, key_state)
    before = run.to_json()
    with pytest.raises(ActionExecutionError) as raised:
        asyncio.run(engine.step(run, key_state))
    assert raised.value.action == "flaky" and raised.value.key == "k" and raised.value.seq == 0
    assert isinstance(raised.value.__cause__, ValueError)
    assert run.to_json() == before  # nothing committed
    assert run_to_end(engine, run, key_state) == ["partial"]


def test_sync_actions_run_in_worker_threads() -> None:
    threads: dict[str, str] = {}

    def sync_action(event: Event, ctx: RunnerContext) -> None:
        threads["sync"] = threading.current_thread().name
        ctx.send_event(OutputEvent(output="sync"))

    async def async_action(event: Event, ctx: RunnerContext) -> None:
        threads["async"] = threading.current_thread().name

    agent = (
        Agent().add_action("s", InputEvent, sync_action).add_action("a", InputEvent, async_action)
    )
    engine = AgentEngine(agent)
    key_state = KeyState()
    assert run_to_end(engine, engine.start_run("k", 1, key_state), key_state) == ["sync"]
    assert threads["sync"].startswith("agent-action")
    assert threads["async"] == threading.current_thread().name
    engine.close()


def test_memory_sensory_per_run_short_term_per_key() -> None:
    async def count(event: Event, ctx: RunnerContext) -> None:
        ctx.short_term_memory["runs"] = ctx.short_term_memory.get("runs", 0) + 1
        assert "mine" not in ctx.sensory_memory
        ctx.sensory_memory["mine"] = True
        ctx.send_event(OutputEvent(output=(ctx.key, ctx.short_term_memory["runs"])))

    engine = AgentEngine(Agent().add_action("count", InputEvent, count))
    states = {"a": KeyState(), "b": KeyState()}
    outputs = []
    for key in ["a", "a", "b", "a"]:
        outputs += run_to_end(engine, engine.start_run(key, None, states[key]), states[key])
    assert outputs == [("a", 1), ("a", 2), ("b", 1), ("a", 3)]


def test_resources_are_built_once_and_checked() -> None:
    agent = (
        Agent()
        .add_resource("p", ResourceType.PROMPT, Prompt.from_text("x"))
        .add_resource(
            "conn",
            ResourceType.CHAT_MODEL_CONNECTION,
            ResourceDescriptor(clazz=FunctionChatModelConnection, function=two_turn_model),
        )
        .add_resource(
            "wrong", ResourceType.TOOL, ResourceDescriptor(clazz=LocalPrompt, template="x")
        )
        .add_resource("lookup", ResourceType.TOOL, lookup)
    )
    engine = AgentEngine(agent)
    conn = engine.get_resource("conn", ResourceType.CHAT_MODEL_CONNECTION)
    assert engine.get_resource("conn", ResourceType.CHAT_MODEL_CONNECTION) is conn
    assert conn.get_resource is not None  # can look up other resources
    assert engine.get_resource("lookup", ResourceType.TOOL).metadata.name == "lookup"  # type: ignore[attr-defined]
    with pytest.raises(KeyError, match="no prompt resource named 'nope'"):
        engine.get_resource("nope", ResourceType.PROMPT)
    with pytest.raises(TypeError, match="is a prompt, not a tool"):
        engine.get_resource("wrong", ResourceType.TOOL)
    # Picklable after use too: built resources are rebuilt where it lands.
    copy = cloudpickle.loads(cloudpickle.dumps(engine))
    assert copy.get_resource("conn", ResourceType.CHAT_MODEL_CONNECTION) is not conn


class Held(Resource):
    """A resource that counts its opens and closes (one instance, shared by engines)."""

    opened: int = 0
    closed: int = 0

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL_CONNECTION

    def open(self) -> None:
        self.opened += 1

    def close(self) -> None:
        self.closed += 1


def test_an_engine_opens_what_it_builds_and_closes_it_when_it_closes() -> None:
    shared = Held()
    agent = (
        Agent()
        .add_resource("held", ResourceType.CHAT_MODEL_CONNECTION, shared)
        .add_resource("p", ResourceType.PROMPT, Prompt.from_text("x"))
    )
    first, second = AgentEngine(agent), AgentEngine(agent)
    assert first.get_resource("held", ResourceType.CHAT_MODEL_CONNECTION) is shared
    first.get_resource("held", ResourceType.CHAT_MODEL_CONNECTION)  # built once: opened once
    second.get_resource("held", ResourceType.CHAT_MODEL_CONNECTION)
    first.get_resource("p", ResourceType.PROMPT)  # the default hooks do nothing
    assert (shared.opened, shared.closed) == (2, 0)
    first.close()
    assert (shared.opened, shared.closed) == (2, 1)  # once per engine that opened it
    second.close()
    assert (shared.opened, shared.closed) == (2, 2)
    first.close()  # closing again closes nothing again
    assert shared.closed == 2


# ---------------------------------------------------------------------------- durable calls


class RecordingLog:
    """A durable call log that records call keys and runs the calls."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, int, int, str, int]] = []
        self.sync_calls: list[str] = []
        self.functions: list[str] = []

    def _note(self, call_key: Any, fn: Callable[..., Any]) -> None:
        self.functions.append(getattr(fn, "__name__", "?"))
        self.keys.append(
            (call_key.agent_key, call_key.seq, call_key.step, call_key.action, call_key.call_index)
        )

    async def execute(
        self,
        call_key: Any,
        fn: Callable[..., Any],
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        reconciler: Callable[..., Any] | None = None,
    ) -> Any:
        self._note(call_key, fn)
        result = fn(*args, **kwargs)
        if asyncio.iscoroutine(result):
            result = await result
        return result

    def execute_sync(
        self,
        call_key: Any,
        fn: Callable[..., Any],
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        reconciler: Callable[..., Any] | None = None,
    ) -> Any:
        self._note(call_key, fn)
        self.sync_calls.append(threading.current_thread().name)
        return fn(*args, **kwargs)


def test_model_and_tool_calls_go_through_the_durable_log() -> None:
    log = RecordingLog()
    agent = chat_agent(
        FunctionChatModelConnection(function=two_turn_model), tools={"lookup": lookup}
    )
    engine = AgentEngine(agent, call_log=log)  # type: ignore[arg-type]
    key_state = KeyState(next_seq=4)
    outputs = run_to_end(engine, engine.start_run(7, "go", key_state), key_state)
    assert outputs[0].ok
    # step 0: start; step 1: chat action (model call 0); step 2: tool action (two tool
    # calls, numbered in call order); step 3: chat action (model call 0 of that step).
    assert log.keys == [
        ("7", 4, 1, CHAT_ACTION, 0),
        ("7", 4, 2, TOOL_ACTION, 0),
        ("7", 4, 2, TOOL_ACTION, 1),
        ("7", 4, 3, CHAT_ACTION, 0),
    ]


class ServedPrompt(Prompt):
    """A prompt rendered elsewhere (as an MCP server renders one): its sync rendering would
    hold the runner's loop, so the chat action must await the async one."""

    def format_string(self, **kwargs: Any) -> str:
        raise AssertionError("rendered synchronously on the runner's loop")

    def format_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        raise AssertionError("rendered synchronously on the runner's loop")

    async def aformat_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        await asyncio.sleep(0)
        return [ChatMessage.system(f"You handle {kwargs['team']} tickets.")]


@pytest.mark.parametrize("durable", [False, True], ids=["no-call-log", "call-log"])
def test_the_chat_action_awaits_the_prompts_async_rendering(durable: bool) -> None:
    """With a durable call log the request's fingerprint holds the prompt's messages too."""
    seen: list[list[str]] = []

    def model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> str:
        seen.append([m.text for m in messages])
        return "ok"

    agent = chat_agent(
        FunctionChatModelConnection(function=model),
        prompt=ServedPrompt(),
        prompt_args={"team": "billing"},
    )
    engine = AgentEngine(agent, call_log=RecordingLog() if durable else None)  # type: ignore[arg-type]
    key_state = KeyState()
    [output] = run_to_end(engine, engine.start_run("k", "hi", key_state), key_state)
    assert output.ok
    assert seen == [["You handle billing tickets.", "hi"]]


def test_durable_execute_from_actions() -> None:
    log = RecordingLog()

    def sync_action(event: Event, ctx: RunnerContext) -> None:
        value = ctx.durable_execute(lambda x: x * 2, 21)
        ctx.send_event(OutputEvent(output=value))

    async def async_action(event: Event, ctx: RunnerContext) -> None:
        first = ctx.durable_execute_async(asyncio.sleep, 0.01, "a")
        second = ctx.durable_execute_async(lambda: "b")  # a sync function, in a thread
        ctx.send_event(OutputEvent(output=list(await asyncio.gather(second, first))))

    agent = (
        Agent()
        .add_action("sync_action", InputEvent, sync_action)
        .add_action("async_action", InputEvent, async_action)
    )
    for durable in (None, log):
        engine = AgentEngine(agent, call_log=durable)  # type: ignore[arg-type]
        key_state = KeyState()
        assert run_to_end(engine, engine.start_run("k", 0, key_state), key_state) == [
            42,
            ["b", "a"],
        ]
        engine.close()
    assert log.keys[0] == ('"k"', 0, 0, "sync_action", 0)  # the key's typed text
    # Numbered when durable_execute_async is called, not when awaited: the sleep call
    # (made first) is 0 although gather starts the other one first.
    assert log.keys[1:] == [('"k"', 0, 1, "async_action", 1), ('"k"', 0, 1, "async_action", 0)]
    assert log.functions[1:] == ["<lambda>", "sleep"]
    assert log.sync_calls[0].startswith("agent-action")
    # A sync durable_execute in an async action runs, as upstream's (with a warning:
    # tests/runtime/test_upstream_runtime_contract.py).


def test_replay_with_the_sqlite_durable_log_skips_recorded_calls(tmp_path: Any) -> None:
    durable = pytest.importorskip("flink_agents.runtime.durable")
    store = durable.SqliteActionStateStore(str(tmp_path / "calls.db"))
    log = durable.DurableCallLog(store)
    model = ScriptedChatModelConnection(
        replies=[
            ChatMessage.assistant(
                tool_calls=[ToolCallBlock(id="c1", name="lookup", input={"ticket": "T"})]
            ),
            "done",
        ]
    )
    tool_calls: list[str] = []

    def counted(ticket: str) -> str:
        """Lookup.

        Args:
            ticket: Id.
        """
        tool_calls.append(ticket)
        return "open"

    agent = chat_agent(model, tools={"lookup": counted})
    first = AgentEngine(agent, call_log=log)
    key_state = KeyState()
    snapshot = key_state.to_json()
    out1 = run_to_end(first, first.start_run("k", "go", key_state), key_state)

    # A restart from before the run: the same run replays from the record.
    restored = KeyState.from_json(snapshot)
    second = AgentEngine(agent, call_log=log)
    out2 = run_to_end(second, second.start_run("k", "go", restored), restored)
    assert out1[0].response.text == out2[0].response.text == "done"
    assert len(model.calls) == 2  # not called again
    assert tool_calls == ["T"]
    log.close()


def _flaky_agent(fail_times: list[int]) -> Agent:
    """Appends the input to memory, then raises while `fail_times[0]` > 0."""

    async def work(event: Event, ctx: RunnerContext) -> None:
        ctx.short_term_memory["seen"] = [*ctx.short_term_memory.get("seen", []), event.input]
        if fail_times[0] > 0:
            fail_times[0] -= 1
            raise ValueError(f"cannot handle {event.input}")
        ctx.send_event(OutputEvent(output=list(ctx.short_term_memory["seen"])))

    return Agent().add_action("work", InputEvent, work)


def test_an_action_error_names_the_original_exception() -> None:
    engine = AgentEngine(_flaky_agent([1]))
    key_state = KeyState()
    with pytest.raises(ActionExecutionError) as failed:
        run_to_end(engine, engine.start_run("k", "a", key_state), key_state)
    assert str(failed.value) == (  # the cause first
        "ValueError: cannot handle a (action 'work' on a _input_event event, key 'k', seq 0)"
    )
    assert isinstance(failed.value.__cause__, ValueError)


def test_a_retried_run_starts_again_with_the_memory_of_its_start() -> None:
    engine = AgentEngine(_flaky_agent([1]), {"input-failure.policy": "skip"})
    key_state = KeyState(short_term_memory={"seen": ["before"]}, next_seq=3)
    run = engine.start_run("k", "a", key_state)
    with pytest.raises(ActionExecutionError):
        run_to_end(engine, run, key_state)
    assert key_state.short_term_memory["seen"] == ["before", "a"]  # the failed attempt's
    again = engine.retry_run(run, key_state)
    assert (again.seq, key_state.next_seq) == (3, 4)
    assert run_to_end(engine, again, key_state) == [["before", "a"]]


def test_an_abandoned_run_leaves_memory_as_before_and_gives_its_failure_record() -> None:
    engine = AgentEngine(_flaky_agent([5]), {"input-failure.policy": "skip"})
    key_state = KeyState(short_term_memory={"seen": ["before"]})
    run = engine.start_run(7, {"text": "a"}, key_state)
    with pytest.raises(ActionExecutionError) as failed:
        run_to_end(engine, run, key_state)
    failure = engine.abandon_run(run, key_state, failed.value, attempts=2)
    assert key_state.short_term_memory == {"seen": ["before"]}
    assert key_state.next_seq == 1  # the input keeps its sequence number
    record = dict(failure.record)
    assert record.pop("failed_at").endswith("+00:00")
    assert record == {
        "key": 7,
        "input": {"text": "a"},
        "action": "work",
        "event_type": "_input_event",
        "error_type": "ValueError",
        "message": "cannot handle {'text': 'a'}",
        "attempts": 2,
    }


def test_without_policy_skip_runs_keep_no_start() -> None:
    engine = AgentEngine(_flaky_agent([0]))
    key_state = KeyState()
    run = engine.start_run("k", "a", key_state)
    assert run.start is None
    with pytest.raises(RuntimeError, match="kept no start"):
        engine.retry_run(run, key_state)


def _two_step_agent(with_second: bool = True) -> Agent:
    async def first(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(Event("second", {"n": event.input}))

    async def second(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.attributes["n"]))

    agent = Agent().add_action("first", InputEvent, first)
    if with_second:
        agent.add_action("second", ["second"], second)
    return agent


def test_a_restored_run_with_an_event_no_action_handles_fails_naming_it() -> None:
    old = AgentEngine(_two_step_agent())
    key_state = KeyState()
    run = old.start_run("k", 1, key_state)
    asyncio.run(old.step(run, key_state))  # the "second" event is pending
    new = AgentEngine(_two_step_agent(with_second=False))  # that action was removed
    restored = new.load_run(run.to_json())
    with pytest.raises(UnhandledEventError, match="pending 'second' event that no action"):
        asyncio.run(new.step(restored, key_state))


def test_a_restored_run_goes_on_when_its_events_are_handled() -> None:
    engine = AgentEngine(_two_step_agent())
    key_state = KeyState()
    run = engine.start_run("k", 1, key_state)
    asyncio.run(engine.step(run, key_state))
    restored = engine.load_run(run.to_json())
    assert run_to_end(engine, restored, key_state) == [1]


def test_runs_without_output_are_counted_and_warned_once_per_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = AgentEngine(_two_step_agent(with_second=False))
    with caplog.at_level("WARNING", logger="flink_agents.runtime.agent_runner"):
        for seq in range(3):
            key_state = KeyState(next_seq=seq)
            assert run_to_end(engine, engine.start_run("k", seq, key_state), key_state) == []
    assert engine.metrics.get_counter("runsWithoutOutput").get_count() == 3
    dropped = [r for r in caplog.records if "no action handles 'second'" in r.getMessage()]
    ended = [r for r in caplog.records if "ended without an OutputEvent" in r.getMessage()]
    assert len(dropped) == 1 and len(ended) == 1
    assert "actions: first" in ended[0].getMessage()


def test_a_snapshot_with_its_chat_loop_in_sensory_memory_still_answers() -> None:
    """Snapshots written before `RunState.chat_loops` kept open chat loops in the run's
    sensory memory under ``_flink_agents.chat_loops``: restored, the loop goes on."""
    model = FunctionChatModelConnection(function=two_turn_model)
    agent = chat_agent(model, tools={"lookup": lookup})
    engine = AgentEngine(agent)
    key_state = KeyState()
    run = engine.start_run("k", "check both", key_state)
    while not any(isinstance(e, ToolRequestEvent) for e in run.pending_events):
        asyncio.run(engine.step(run, key_state))
    data = json.loads(run.to_json())
    loops = data.pop("chat_loops")
    data["sensory_memory"]["_flink_agents.chat_loops"] = {
        request_id: {"$model": "flink_agents.runtime.builtin_actions:ChatLoopState", "$data": loop}
        for request_id, loop in loops.items()
    }
    restored = engine.load_run(json.dumps(data))
    assert restored.sensory_memory == {} and list(restored.chat_loops) == list(loops)
    outputs = run_to_end(engine, restored, key_state)
    assert len(outputs) == 1 and isinstance(outputs[0], ChatResponseEvent)
    assert outputs[0].response is not None
    assert outputs[0].response.text == "T1 is open / T2 is open"


def test_a_snapshot_with_the_text_ids_of_older_versions_still_answers() -> None:
    """Event ids were strings such as ``<key digest>-<seq>-<step>-<n>`` before they were
    UUIDs: a run checkpointed then, with a chat loop waiting for its tools, resumes, and
    what was keyed by those ids (the loop, the response's ``request_id``) still matches."""
    model = FunctionChatModelConnection(function=two_turn_model)
    agent = chat_agent(model, tools={"lookup": lookup})
    engine = AgentEngine(agent)
    key_state = KeyState()
    run = engine.start_run("k", "check both", key_state)
    while not any(isinstance(e, ToolRequestEvent) for e in run.pending_events):
        asyncio.run(engine.step(run, key_state))
    written = run.to_json()
    ids = list(dict.fromkeys(re.findall(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}", written)))
    assert ids  # the pending events' ids, their lineage and the open chat loop's key
    legacy = {text: f"5eed1e55c0ffee00-0-{i}-0" for i, text in enumerate(ids)}
    for text, old in legacy.items():
        written = written.replace(text, old)
    restored = engine.load_run(written)
    [pending] = restored.pending_events
    assert isinstance(pending.id, uuid.UUID) and str(pending.id) in legacy.values()
    assert list(restored.chat_loops) == [str(pending.id)]
    assert restored.to_json() == written  # written back as the same text
    outputs = run_to_end(engine, restored, key_state)
    assert len(outputs) == 1 and isinstance(outputs[0], ChatResponseEvent)
    assert outputs[0].response is not None
    assert outputs[0].response.text == "T1 is open / T2 is open"
    assert str(outputs[0].request_id) in legacy.values()
