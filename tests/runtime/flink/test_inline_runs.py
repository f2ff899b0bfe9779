"""Runs that need no real waiting finish on the operator thread, inside `on_input`."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.runtime.flink.fake_flink import BOUND, FakeSubtask
from tests.runtime.stand_in_engine import StandInEngine


class ThreadRecordingEngine(StandInEngine):
    """Also records the thread each step ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.step_threads: list[str] = []

    async def step(self, run: dict, key_state: dict) -> bool:  # type: ignore[override]
        self.step_threads.append(threading.current_thread().name)
        return await super().step(run, key_state)


@pytest.fixture
def engine() -> ThreadRecordingEngine:
    return ThreadRecordingEngine()


def test_a_run_without_waiting_finishes_in_the_input_callback(
    engine: ThreadRecordingEngine,
) -> None:
    sub = FakeSubtask(engine)
    try:
        for i in range(3):
            sub.input("k", {"v": i, "steps": 2})
            # Emitted by the callback that accepted the input: no poll, no timer.
            assert sub.emitted == [f"k:{n}:{n}" for n in range(i + 1)]
        assert sub.backend.polls == set() and sub.backend.end_timers == set()
    finally:
        sub.close()
    me = threading.current_thread().name
    assert engine.step_threads == [me] * 6
    slice_ = sub.backend.slices["k"]
    # The input never went to the input map; positions still count the key's runs.
    assert slice_.inputs == {} and slice_.run is None
    record = json.loads(slice_.record or "")
    assert record["head"] == record["tail"] == 3
    assert record["key_state"]["next_seq"] == 3


def test_a_waiting_run_is_left_to_the_loop_thread(engine: ThreadRecordingEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        sub.input("k", {"v": "slow", "gate": "model"})
        assert sub.emitted == []
        # Waiting for the model: the input is in keyed state, a poll and an end timer set.
        assert sub.backend.slices["k"].inputs == {0: json.dumps({"v": "slow", "gate": "model"})}
        assert sub.backend.polls and sub.backend.end_timers == {"k"}
        # An input behind a busy key queues (and is stored) even if it needs no waiting.
        sub.input("k", {"v": "fast"})
        assert sub.emitted == []
        assert set(sub.backend.slices["k"].inputs) == {0, 1}
        sub.open_gate("model")  # the model answers, on the loop thread
        sub.run_until_idle()
    finally:
        sub.close()
    assert sub.emitted == ["k:0:slow", "k:1:fast"]
    slice_ = sub.backend.slices["k"]
    assert slice_.inputs == {}
    assert json.loads(slice_.record or "")["head"] == 2
    # The slow run started here and went on on the loop thread, which ran the next input.
    assert engine.step_threads == [threading.current_thread().name, "flink-agents-runs"]


def test_inline_runs_interleave_with_waiting_ones(engine: ThreadRecordingEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        sub.input("slow", {"v": 1, "gate": "model"})
        for k in range(20):
            sub.input(f"fast{k}", {"v": k})
        # Fast keys were not held up by the slow key's model call (still unanswered).
        assert sorted(sub.emitted) == sorted(f"fast{k}:0:{k}" for k in range(20))
        sub.open_gate("model")
        sub.end_of_input_for("slow")
    finally:
        sub.close()
    assert "slow:0:1" in sub.emitted and len(sub.emitted) == 21


def test_a_run_of_plain_def_actions_finishes_in_the_input_callback() -> None:
    """Upstream's shape: ``def`` actions. Each runs on an action thread while the operator
    thread waits for it briefly, so the run still ends inside `on_input`."""
    from flink_agents.api.agents.agent import Agent
    from flink_agents.api.events.event import Event, InputEvent, OutputEvent
    from flink_agents.api.runner_context import RunnerContext
    from flink_agents.runtime.agent_engine import AgentEngine

    threads: list[str] = []

    def ask(event: Event, ctx: RunnerContext) -> None:
        threads.append(threading.current_thread().name)
        time.sleep(0.01)  # not done by the time the operator thread would look
        ctx.send_event(Event("checked", {"value": event.attributes["input"]["v"]}))

    def answer(event: Event, ctx: RunnerContext) -> None:
        threads.append(threading.current_thread().name)
        ctx.send_event(OutputEvent(output=event.attributes["value"] * 2))

    agent = Agent().add_action("ask", [InputEvent], ask).add_action("answer", ["checked"], answer)
    engine = AgentEngine(agent)
    # The test's bounds, not the defaults (2 ms waits for actions that ran under 0.2 ms).
    engine.action_threads.brief_wait_s = BOUND
    engine.action_threads.fast_s = BOUND
    sub = FakeSubtask(engine)
    try:
        for i in range(3):
            sub.input("k", {"v": i})
            assert sub.emitted == [2 * n for n in range(i + 1)]  # no poll, no timer
        assert sub.backend.polls == set() and sub.backend.end_timers == set()
    finally:
        sub.close()
        engine.close()
    assert len(threads) == 6 and all(name.startswith("agent-action") for name in threads)
