"""The local runner: per-key order, concurrency across keys, bounds, streaming, the environment."""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from flink_agents.api import (
    Agent,
    AgentsExecutionEnvironment,
    Event,
    InputEvent,
    OutputEvent,
    Prompt,
    ResourceType,
    RunnerContext,
)
from flink_agents.runtime.errors import ActionExecutionError
from flink_agents.runtime.local_runner import AgentOutput, LocalExecutionEnvironment, LocalRunner
from flink_agents.runtime.scheduler import RUN_BYTES

BOUND = 10.0
"""Seconds a test waits at most for something that must happen (a safety net that fails
the test, never the time it expects to take)."""


class Tracker:
    """Records which runs are active, per key and overall."""

    def __init__(self) -> None:
        self.active: dict[Any, int] = {}
        self.total = 0
        self.max_total = 0
        self.overlap = False

    def enter(self, key: Any) -> None:
        self.active[key] = self.active.get(key, 0) + 1
        self.overlap = self.overlap or self.active[key] > 1
        self.total += 1
        self.max_total = max(self.max_total, self.total)

    def leave(self, key: Any) -> None:
        self.active[key] -= 1
        self.total -= 1


def sleeping_agent(tracker: Tracker, seconds: float | Callable[[], float]) -> Agent:
    async def work(event: Event, ctx: RunnerContext) -> None:
        tracker.enter(ctx.key)
        await asyncio.sleep(seconds() if callable(seconds) else seconds)
        tracker.leave(ctx.key)
        ctx.send_event(OutputEvent(output=event.attributes["input"]))

    return Agent().add_action("work", InputEvent, work)


def run(agent: Agent, inputs: Any, config: dict[str, Any] | None = None) -> list[AgentOutput]:
    return asyncio.run(LocalRunner(agent, config).run(inputs))


def test_runs_of_a_key_are_in_input_order_and_never_overlap() -> None:
    tracker = Tracker()
    rng = random.Random(7)
    inputs = [{"key": f"k{i % 5}", "value": i} for i in range(60)]
    outputs = run(sleeping_agent(tracker, lambda: rng.uniform(0, 0.01)), inputs)
    assert not tracker.overlap
    for key in {f"k{i}" for i in range(5)}:
        values = [o.value for o in outputs if o.key == key]
        assert values == sorted(values) and len(values) == 12
        assert [o.seq for o in outputs if o.key == key] == list(range(12))


def test_keys_run_concurrently() -> None:
    tracker = Tracker()
    all_in = asyncio.Event()

    async def work(event: Event, ctx: RunnerContext) -> None:
        tracker.enter(ctx.key)
        if tracker.total == 50:
            all_in.set()
        # Each run waits until all fifty are in flight: one after another, none would end.
        await asyncio.wait_for(all_in.wait(), BOUND)
        tracker.leave(ctx.key)
        ctx.send_event(OutputEvent(output=event.attributes["input"]))

    agent = Agent().add_action("work", InputEvent, work)
    outputs = run(agent, [{"key": i, "value": i} for i in range(50)])
    assert sorted(o.value for o in outputs) == list(range(50))
    assert tracker.max_total == 50


def test_runs_start_while_a_long_input_list_is_read() -> None:
    # A plain list of many inputs: the first runs take their first steps (and would send
    # their model calls) before the whole list is read, not after.
    read: list[int] = []
    read_when_first_ran: list[int] = []

    def inputs() -> Any:
        for i in range(500):
            read.append(i)
            yield {"key": i, "value": i}

    async def work(event: Event, ctx: RunnerContext) -> None:
        if not read_when_first_ran:
            read_when_first_ran.append(len(read))
        ctx.send_event(OutputEvent(output=event.attributes["input"]))

    outputs = run(Agent().add_action("work", InputEvent, work), inputs())
    assert sorted(o.value for o in outputs) == list(range(500))
    assert read_when_first_ran[0] < 100


@pytest.mark.parametrize(
    ("config", "bound"),
    [({"max-in-flight-runs": 2}, 4), ({"max-in-flight-runs": 2, "max-buffered-inputs": 3}, 3)],
    ids=["twice-the-runs", "max-buffered-inputs"],
)
async def test_reading_pauses_at_the_buffered_inputs_bound(
    config: dict[str, Any], bound: int
) -> None:
    release = asyncio.Event()
    read: list[int] = []

    async def inputs() -> AsyncIterator[dict[str, Any]]:
        for i in range(10):
            read.append(i)
            yield {"key": i, "value": i}

    async def held(event: Event, ctx: RunnerContext) -> None:
        await asyncio.wait_for(release.wait(), BOUND)
        ctx.send_event(OutputEvent(output=event.attributes["input"]))

    runner = LocalRunner(Agent().add_action("held", InputEvent, held), config)
    stream = runner.stream(inputs())
    first = asyncio.ensure_future(stream.__anext__())
    for _ in range(50):  # let the reader go as far as it may
        await asyncio.sleep(0)
    # Accepted and unfinished: `bound`; the next one was read and waits for room.
    assert len(read) == bound + 1
    release.set()
    outputs = [(await first).value] + [o.value async for o in stream]
    assert sorted(outputs) == list(range(10))


def test_in_flight_runs_are_bounded() -> None:
    tracker = Tracker()
    outputs = run(
        sleeping_agent(tracker, 0.01),
        [{"key": i, "value": i} for i in range(30)],
        {"max-in-flight-runs": 3},
    )
    assert len(outputs) == 30
    assert tracker.max_total == 3


def test_runs_in_flight_are_bounded_by_memory_by_default() -> None:
    keys = 1500  # more than the 1,000 a count let go on before
    entered = 0
    all_in = asyncio.Event()

    async def wait_for_all(event: Event, ctx: RunnerContext) -> None:
        nonlocal entered
        entered += 1
        if entered == keys:
            all_in.set()
        await asyncio.wait_for(all_in.wait(), BOUND)  # every run waits at once
        ctx.send_event(OutputEvent(output=event.attributes["input"]))

    agent = Agent().add_action("wait_for_all", InputEvent, wait_for_all)
    outputs = run(agent, [{"key": i, "value": i} for i in range(keys)])
    assert sorted(o.value for o in outputs) == list(range(keys))


def test_in_flight_runs_are_bounded_by_their_bytes() -> None:
    tracker = Tracker()
    outputs = run(
        sleeping_agent(tracker, 0.01),
        [{"key": i, "value": i} for i in range(30)],
        {"max-in-flight-runs-bytes": 3 * RUN_BYTES + 100},  # inputs of 1-2 characters
    )
    assert len(outputs) == 30
    assert tracker.max_total == 3


def test_a_sync_action_does_not_stall_other_keys() -> None:
    fast_done = threading.Event()
    lock = threading.Lock()
    fast_finished = 0

    def blocking(event: Event, ctx: RunnerContext) -> None:
        nonlocal fast_finished
        if ctx.key == "slow":
            # Blocks its thread until every other key has finished: on the loop's
            # thread it would stall them, and never see them finish.
            ctx.send_event(OutputEvent(output=fast_done.wait(BOUND)))
            return
        with lock:
            fast_finished += 1
            if fast_finished == 5:
                fast_done.set()
        ctx.send_event(OutputEvent(output=True))

    agent = Agent().add_action("blocking", InputEvent, blocking)
    inputs = [{"key": "slow", "value": 0}] + [{"key": f"fast{i}", "value": 0} for i in range(5)]
    outputs = run(agent, inputs)
    # "slow" saw every other key finish while it blocked its thread.
    assert {o.key: o.value for o in outputs} == {
        "slow": True,
        **{f"fast{i}": True for i in range(5)},
    }


async def test_streaming_yields_outputs_before_the_input_ends() -> None:
    produced: list[int] = []
    output_seen = [asyncio.Event() for _ in range(5)]

    async def inputs() -> AsyncIterator[dict[str, Any]]:
        for i in range(5):
            produced.append(i)
            yield {"key": i, "value": i}
            # The next input comes only once this one's output came out of the stream.
            await asyncio.wait_for(output_seen[i].wait(), BOUND)

    async def echo(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.attributes["input"] * 10))

    runner = LocalRunner(Agent().add_action("echo", InputEvent, echo))
    seen: list[tuple[int, int]] = []
    async for output in runner.stream(inputs()):
        seen.append((output.value, len(produced)))
        output_seen[output.value // 10].set()
    # Each output came while the input was still being read, before the next input.
    assert seen == [(0, 1), (10, 2), (20, 3), (30, 4), (40, 5)]


async def test_outputs_arrive_as_a_run_sends_them() -> None:
    release = asyncio.Event()

    async def first(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output="early"))
        ctx.send_event(Event("later"))

    async def second(event: Event, ctx: RunnerContext) -> None:
        await asyncio.wait_for(release.wait(), 5)  # fails the run if "early" never came
        ctx.send_event(OutputEvent(output="late"))

    agent = Agent().add_action("first", InputEvent, first).add_action("second", "later", second)
    seen: list[str] = []
    async with contextlib.aclosing(LocalRunner(agent).stream([{"key": "k", "value": 0}])) as out:
        async for output in out:
            seen.append(output.value)
            if output.value == "early":
                release.set()  # the run is still waiting: its first output came first
    assert seen == ["early", "late"]


async def test_stopping_a_stream_early_cancels_the_rest() -> None:
    release = asyncio.Event()
    started: list[int] = []
    finished: list[int] = []
    cancelled: list[int] = []

    async def work(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        started.append(value)
        if value != 0:
            try:
                await release.wait()
            except asyncio.CancelledError:
                cancelled.append(value)
                raise
        finished.append(value)
        ctx.send_event(OutputEvent(output=value))

    runner = LocalRunner(Agent().add_action("work", InputEvent, work))
    inputs = [{"key": i, "value": i} for i in range(50)]
    async with contextlib.aclosing(runner.stream(inputs)) as outputs:
        async for output in outputs:
            assert output.value == 0
            break
    assert len(started) > 1  # other runs were in flight when the stream stopped
    release.set()  # a run that was not cancelled would now finish

    async def every_started_run_ended() -> None:
        while len(finished) + len(cancelled) < len(started):
            await asyncio.sleep(0)

    await asyncio.wait_for(every_started_run_ended(), BOUND)
    assert finished == [0]
    assert sorted(cancelled) == sorted(started[1:])


def test_a_failing_action_fails_the_stream() -> None:
    async def boom(event: Event, ctx: RunnerContext) -> None:
        if event.attributes["input"] == 3:
            raise RuntimeError("bad input")
        ctx.send_event(OutputEvent(output=1))

    with pytest.raises(ActionExecutionError) as raised:
        run(
            Agent().add_action("boom", InputEvent, boom), [{"key": i, "value": i} for i in range(6)]
        )
    assert raised.value.key == 3


def test_inputs_must_be_key_value_records() -> None:
    async def echo(event: Event, ctx: RunnerContext) -> None: ...

    with pytest.raises(ValueError, match="key"):
        run(Agent().add_action("echo", InputEvent, echo), [{"value": 1}])


def test_environment_list_in_list_out() -> None:
    async def shout(event: Event, ctx: RunnerContext) -> None:
        prompt = ctx.get_resource("greeting", ResourceType.PROMPT)
        assert isinstance(prompt, Prompt)
        ctx.send_event(OutputEvent(output=prompt.format_string(name=event.attributes["input"])))

    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_resource("greeting", ResourceType.PROMPT, Prompt.from_text("Hello {name}"))
    output = (
        env.from_list([{"key": "a", "value": "Ann"}, {"key": "a", "value": "Bob"}])
        .apply(Agent().add_action("shout", InputEvent, shout))
        .to_list()
    )
    assert output == []
    env.execute()
    assert output == [{"a": "Hello Ann"}, {"a": "Hello Bob"}]


async def test_environment_execute_inside_a_loop() -> None:
    async def echo(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.attributes["input"]))

    env = LocalExecutionEnvironment({"max-in-flight-runs": 2})
    output = (
        env.from_list([{"key": 1, "value": "x"}])
        .apply(Agent().add_action("echo", InputEvent, echo))
        .to_list()
    )
    with pytest.raises(RuntimeError, match="execute_async"):
        env.execute()
    await env.execute_async()
    assert output == [{1: "x"}]


def test_environment_requires_apply() -> None:
    env = LocalExecutionEnvironment()
    env.from_list([{"key": 1, "value": 1}])
    with pytest.raises(RuntimeError, match="apply"):
        env.execute()


def test_keys_of_different_types_keep_separate_state() -> None:
    async def count(event: Event, ctx: RunnerContext) -> None:
        n = ctx.short_term_memory.get("n", 0) + 1
        ctx.short_term_memory["n"] = n
        ctx.send_event(OutputEvent(output=(ctx.key, n)))

    agent = Agent().add_action("count", InputEvent, count)
    keys = [1, "1", True, 1.0, 1, "1"]
    outputs = run(agent, [{"key": k, "value": None} for k in keys])
    got = sorted((repr(o.value[0]), o.value[1]) for o in outputs)
    assert got == sorted([("1", 1), ("'1'", 1), ("True", 1), ("1.0", 1), ("1", 2), ("'1'", 2)])


def test_a_key_without_text_is_refused() -> None:
    agent = sleeping_agent(Tracker(), 0)
    with pytest.raises(TypeError, match="agent key cannot be None"):
        run(agent, [{"key": None, "value": 1}])


def _poison_agent(fail_times: dict[Any, int]) -> Agent:
    """Outputs each input; an input listed in `fail_times` raises that many times first."""

    async def answer(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        await asyncio.sleep(0.001)
        if fail_times.get(value, 0) > 0:
            fail_times[value] -= 1
            raise ValueError(f"poison {value}")
        ctx.send_event(OutputEvent(output=value))

    return Agent().add_action("answer", InputEvent, answer)


def test_under_skip_a_poison_input_is_an_error_record_and_other_keys_go_on() -> None:
    env = LocalExecutionEnvironment({"input-failure.policy": "skip"})
    inputs = [{"key": k, "value": f"{k}/{n}"} for n in range(2) for k in range(100)]
    builder = env.from_list(inputs).apply(_poison_agent({"7/0": 99}))
    env.execute()
    outputs = sorted(v for o in builder.to_list() for v in o.values())
    assert outputs == sorted(i["value"] for i in inputs if i["value"] != "7/0")
    [record] = builder.to_error_list()
    assert record["key"] == 7 and record["input"] == "7/0" and record["attempts"] == 1
    assert (record["action"], record["error_type"], record["message"]) == (
        "answer",
        "ValueError",
        "poison 7/0",
    )


def test_under_skip_a_failed_run_is_tried_again_first() -> None:
    env = LocalExecutionEnvironment({"input-failure.policy": "skip", "input-failure.retries": 2})
    builder = env.from_list([{"key": "a", "value": "x"}, {"key": "a", "value": "y"}])
    builder.apply(_poison_agent({"x": 2, "y": 3}))
    env.execute()
    assert builder.to_list() == [{"a": "x"}]  # x succeeded on its third try
    assert [(r["input"], r["attempts"]) for r in builder.to_error_list()] == [("y", 3)]


def test_under_fail_a_poison_input_fails_the_batch_naming_the_original_error() -> None:
    env = LocalExecutionEnvironment()
    env.from_list([{"key": "a", "value": "x"}]).apply(_poison_agent({"x": 1}))
    with pytest.raises(ActionExecutionError, match="ValueError: poison x"):
        env.execute()


def _sender(payload: Any) -> Agent:
    async def send(event: Event, ctx: RunnerContext) -> None:
        report = Event("report")
        report.attributes["payload"] = payload  # in place: `Event` refuses it when made
        ctx.send_event(report)

    async def report(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output="sent"))

    return Agent().add_action("send", InputEvent, send).add_action("report", ["report"], report)


def test_an_event_attribute_state_cannot_keep_is_refused_when_sent() -> None:
    with pytest.raises(ActionExecutionError) as failed:
        run(_sender(b"\x89PNG"), [{"key": "k", "value": 1}])
    assert "key 'k': a report event cannot be sent: attribute['payload'] is a value of type " in (
        str(failed.value)
    )


def test_values_are_refused_at_the_door_and_skipped_under_skip() -> None:
    env = LocalExecutionEnvironment({"input-failure.policy": "skip"})
    inputs = [{"key": "a", "value": {"raw": b"x"}}, {"key": "b", "value": {"raw": "x"}}]
    builder = env.from_list(inputs).apply(_sender("fine"))
    env.execute()
    assert builder.to_list() == [{"b": "sent"}]
    [record] = builder.to_error_list()
    assert (record["key"], record["attempts"], record["action"]) == ("a", 0, None)
    assert record["message"].startswith("input['raw'] is a value of type bytes")


def test_an_input_state_cannot_keep_fails_the_batch_under_fail() -> None:
    with pytest.raises(TypeError, match=r"""key "a": input is a value of type set"""):
        run(_sender("fine"), [{"key": "a", "value": {1, 2}}])


def _leaky_agent() -> Agent:
    async def leak(event: Event, ctx: RunnerContext) -> None:
        raise ValueError("call failed with key sk-abcdefghijklmnopqrstuvwxyz123456")

    return Agent().add_action("leak", InputEvent, leak)


def test_failure_records_and_errors_carry_no_secret() -> None:
    env = LocalExecutionEnvironment({"input-failure.policy": "skip"})
    builder = env.from_list([{"key": "a", "value": "token=hunter2hunter2"}]).apply(_leaky_agent())
    env.execute()
    [record] = builder.to_error_list()
    assert "abcdefghijklmnop" not in record["message"] and "sk-" in record["message"]
    assert "hunter2hunter2" not in str(record["input"])
    with pytest.raises(ActionExecutionError) as failed:
        run(_leaky_agent(), [{"key": "a", "value": 1}])
    assert "abcdefghijklmnop" not in str(failed.value)


_SILENT_AGENT_SCRIPT = """
from flink_agents.api import Agent, AgentsExecutionEnvironment, Event, InputEvent, action


class Silent(Agent):
    @action(InputEvent)
    @staticmethod
    def ignore(event: Event, ctx) -> None:
        pass


env = AgentsExecutionEnvironment.get_execution_environment()
out = env.from_list([{"key": "T-1", "value": "hi"}]).apply(Silent()).to_list()
env.execute()
print("outputs", out)
"""


def test_a_run_without_output_is_a_warning_on_the_local_runners_console() -> None:
    """With no logging configured (a user's script), the warning reaches stderr."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _SILENT_AGENT_SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "outputs []" in done.stdout
    assert "a run ended without an OutputEvent (key 'T-1', seq 0; actions: ignore)" in done.stderr


class OrderChecked(Event):
    EVENT_TYPE = "order-checked.v1"


def test_string_event_type_names_route_as_the_class_form() -> None:
    """``"InputEvent"``-style names are not class names: the type string is what routes, so
    ``"_input_event"``, a padded quoted user type and the classes reach the same actions."""
    seen: list[str] = []

    def start(event: Event, ctx: RunnerContext) -> None:
        seen.append("start")
        ctx.send_event(OrderChecked(attributes={"n": event.attributes["input"]}))

    def by_name(event: Event, ctx: RunnerContext) -> None:
        seen.append("by_name")

    def by_class(event: Event, ctx: RunnerContext) -> None:
        seen.append("by_class")
        ctx.send_event(OutputEvent(output=event.attributes["n"]))

    agent = (
        Agent()
        .add_action("start", [" _input_event "], start)
        .add_action("by_name", [" 'order-checked.v1' "], by_name)
        .add_action("by_class", [OrderChecked], by_class)
    )
    outputs = run(agent, [{"key": "k", "value": 3}])
    assert [o.value for o in outputs] == [3]
    assert seen == ["start", "by_name", "by_class"]
