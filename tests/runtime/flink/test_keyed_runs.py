"""`KeyedRuns` + `RunScheduler` driven like Flink's operator thread (no PyFlink)."""

from __future__ import annotations

import json
import random
import threading
from collections import defaultdict
from typing import Any

import pytest

from flink_agents.runtime import scheduler as scheduler_module
from flink_agents.runtime.errors import InputRefusedError
from flink_agents.runtime.flink import keyed_runs
from flink_agents.runtime.flink.keyed_runs import PollPolicy
from flink_agents.runtime.keys import encode_key, refused_key_text
from tests.runtime.flink.fake_flink import (
    BOUND,
    FakeBackend,
    FakeKeyState,
    FakeSubtask,
    FakeTimers,
    KeySlice,
    ManualClock,
    wait_until,
)
from tests.runtime.stand_in_engine import StandInEngine


def _by_key(outputs: list[str]) -> dict[str, list[tuple[int, str]]]:
    grouped: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for out in outputs:
        key, seq, value = out.split(":")
        grouped[key].append((int(seq), value))
    return grouped


@pytest.fixture
def engine() -> StandInEngine:
    return StandInEngine()


def test_every_input_once_in_key_order(engine: StandInEngine) -> None:
    rng = random.Random(7)
    sub = FakeSubtask(engine)
    try:
        for i in range(5):
            for k in range(20):
                delay = rng.choice([0.0, 0.001, 0.005])
                sub.input(f"k{k}", {"v": f"{k}-{i}", "delay": delay, "steps": rng.randint(1, 3)})
        sub.run_until_idle()
    finally:
        sub.close()
    grouped = _by_key(sub.emitted)
    assert len(sub.emitted) == 100
    for k in range(20):
        assert grouped[f"k{k}"] == [(i, f"{k}-{i}") for i in range(5)]
    assert sub.runs.busy_keys == 0
    # Finished work leaves no inputs or run snapshots behind, only the key record.
    for slice_ in sub.backend.slices.values():
        assert slice_.inputs == {} and slice_.run is None
        record = json.loads(slice_.record or "")
        assert record["head"] == record["tail"] == 5
        assert record["key_state"]["next_seq"] == 5
    assert len(sub.backend.slices) == 20


def _new_loop_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t not in before and t.name == "flink-agents-runs"]


def test_end_of_input_finishes_runs_still_in_flight(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    original_wait = sub.scheduler.wait_for_news

    def wait_opening_the_gate(*args: Any, **kwargs: Any) -> list[Any]:
        sub.open_gate("model")  # the model answers only once the end of input waits
        return original_wait(*args, **kwargs)

    try:
        for k in range(10):
            for i in range(3):
                sub.input(f"k{k}", {"v": i, "gate": "model"})
        assert sub.emitted == [] and engine.steps_run == []  # every run is in flight
        sub.scheduler.wait_for_news = wait_opening_the_gate  # type: ignore[method-assign]
        sub.end_of_input()
    finally:
        sub.close()
    grouped = _by_key(sub.emitted)
    assert len(sub.emitted) == 30
    assert all(grouped[f"k{k}"] == [(i, str(i)) for i in range(3)] for k in range(10))


def _acknowledged(sub: FakeSubtask, key: str, runs: int) -> bool:
    """`key`'s keyed state says its first `runs` runs are done and emitted."""
    slice_ = sub.backend.slices[key]
    record = json.loads(slice_.record or "{}")
    return record["head"] == record["tail"] == runs and not slice_.inputs and slice_.run is None


def test_the_drain_emits_every_keys_outputs_as_its_runs_finish(engine: StandInEngine) -> None:
    """A bounded source ended while the runs of three keys wait for their models: the
    final watermark reaches `a` first, whose model answers last. Every key's outputs leave
    when its run finishes, in that order, written to that key's own state, while `a`'s
    end-of-input callback still waits (no poll timer fires then)."""
    sub = FakeSubtask(engine)
    try:
        for key in ("a", "b", "c"):
            sub.input(key, {"v": key, "gate": key})
        assert sub.emitted == [] and {key for _, key in sub.backend.polls} == {"a", "b", "c"}
        drain = sub.drain("a")
        sub.open_gate("c")
        assert next(drain) == ["c:0:c"]
        assert _acknowledged(sub, "c", 1) and sub.backend.switches == ["c"]
        assert {key for _, key in sub.backend.polls} == {"a", "b"}  # c's poll timer went
        sub.open_gate("b")
        assert next(drain) == ["b:0:b"]
        assert _acknowledged(sub, "b", 1) and sub.backend.switches == ["c", "b"]
        sub.open_gate("a")
        assert next(drain) == ["a:0:a"]
        assert next(drain, None) is None
        assert _acknowledged(sub, "a", 1) and sub.backend.polls == set()
        assert sub.backend.switches == ["c", "b"]  # `a` is the callback's own key
        # The other keys' own end-of-input timers find nothing left.
        sub.end_of_input_for("b")
        sub.end_of_input_for("c")
    finally:
        sub.close()
    assert sub.emitted == [] and sub.backend.switches == ["c", "b"]


def test_the_drain_emits_what_a_run_sends_while_it_goes_on(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        sub.input("a", {"v": "a", "gate": "a"})
        sub.input("k", {"v": "v", "steps": 2, "each": True, "gate": ["s0", "s1"]})
        drain = sub.drain("a")
        sub.open_gate("s0")
        assert next(drain) == ["k:0:v:1"]
        # Emitted with the snapshot that holds it, in k's state.
        assert json.loads(sub.backend.slices["k"].record or "{}")["emitted"] == 1
        assert _done_steps(sub.backend.slices["k"].run) == 1
        sub.open_gate("s1")
        assert next(drain) == ["k:0:v"]
        assert _acknowledged(sub, "k", 1)
        sub.open_gate("a")
        assert next(drain) == ["a:0:a"]
        assert next(drain, None) is None
    finally:
        sub.close()


def test_the_drain_writes_no_snapshot_of_another_key_until_it_has_outputs(
    engine: StandInEngine,
) -> None:
    """No checkpoint falls inside the end-of-input callback: a run's intermediate snapshot
    is not worth switching keys for; its end is."""
    sub = FakeSubtask(engine)
    scheduler = sub.scheduler
    waits: list[int] = []
    wait_for_news = scheduler.wait_for_news

    def counted_wait(*args: Any, **kwargs: Any) -> list[Any]:
        waits.append(1)
        return wait_for_news(*args, **kwargs)

    scheduler.wait_for_news = counted_wait  # type: ignore[method-assign]
    emitted: list[Any] = []
    try:
        sub.input("a", {"v": "a", "gate": "a"})
        sub.input("k", {"v": "v", "steps": 2, "gate": ["s0", "s1"]})
        drain = sub.drain("a")
        consumer = threading.Thread(target=lambda: emitted.extend(drain))
        consumer.start()
        wait_until(lambda: len(waits) == 1)
        sub.open_gate("s0")  # k publishes its snapshot after one step
        wait_until(lambda: len(waits) == 2)  # the drain took the news and waits again
        assert sub.backend.switches == [] and sub.backend.slices["k"].run is None
        sub.open_gate("s1")
        wait_until(lambda: len(waits) == 3)
        assert sub.backend.switches == ["k"] and _acknowledged(sub, "k", 1)
        sub.open_gate("a")
        consumer.join(BOUND)
        assert not consumer.is_alive()
    finally:
        sub.close()
    assert emitted == [["k:0:v"], ["a:0:a"]]


def test_the_drain_surfaces_a_failure_of_another_key(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        sub.input("a", {"v": 1, "gate": "never"})  # nobody opens it
        sub.input("b", {"v": 2, "delay": 0.01, "fail": True})
        with pytest.raises(RuntimeError, match="an agent run failed"):
            sub.end_of_input_for("a")
    finally:
        sub.close()


def test_in_flight_runs_are_bounded(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine, max_in_flight=3)
    try:
        for k in range(12):
            sub.input(f"k{k}", {"v": k, "gate": "model"})
        # Three runs hold the slots (waiting for their model); nine wait for a slot.
        wait_until(lambda: engine.concurrent == 3)
        assert sub.scheduler.running == 3 and sub.scheduler.buffered == 12
        sub.open_gate("model")
        sub.run_until_idle()
    finally:
        sub.close()
    assert len(sub.emitted) == 12
    assert engine.max_concurrent == 3


def test_runs_waiting_for_a_slot_start_in_the_order_they_were_accepted(
    engine: StandInEngine,
) -> None:
    sub = FakeSubtask(engine, max_in_flight=2)
    try:
        for k in range(8):
            sub.input(f"k{k}", {"v": k, "gate": "model"})
        wait_until(lambda: engine.concurrent == 2)
        # Once the model answers, each run ends at once: runs end in the order they
        # got a slot.
        sub.open_gate("model")
        sub.run_until_idle()
    finally:
        sub.close()
    assert len(sub.emitted) == 8
    assert engine.max_concurrent == 2
    assert [key for key, _, _ in engine.steps_run] == [f"k{k}" for k in range(8)]


def test_closing_cancels_runs_that_wait_for_a_slot(engine: StandInEngine) -> None:
    before = set(threading.enumerate())
    sub = FakeSubtask(engine, max_in_flight=1)
    [loop_thread] = _new_loop_threads(before)
    for k in range(5):
        sub.input(f"k{k}", {"v": k, "gate": "never"})  # nobody opens it
    wait_until(lambda: engine.concurrent == 1)
    sub.close()
    # Closing waited for no run: the loop thread is gone, no run finished a step.
    assert not loop_thread.is_alive()
    assert engine.steps_run == []
    assert engine.concurrent == 0  # the run holding the slot was cancelled in its step
    assert engine.max_concurrent == 1  # the four waiting for a slot never started


def test_runs_of_different_keys_overlap(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        for k in range(50):
            sub.input(f"k{k}", {"v": k, "gate": "model"})
        # All fifty wait for their model at the same time.
        wait_until(lambda: engine.concurrent == 50)
        sub.open_gate("model")
        sub.run_until_idle()
    finally:
        sub.close()
    assert len(sub.emitted) == 50
    assert engine.max_concurrent == 50


def _done_steps(run_json: str | None) -> int | None:
    return None if run_json is None else json.loads(run_json)["done_steps"]


def test_restore_resumes_runs_from_their_snapshot(engine: StandInEngine) -> None:
    steps = ["b0", "b1", "b2", "b3"]
    sub = FakeSubtask(engine, snapshot_after=0.0)
    try:
        for k in range(4):
            sub.input(f"k{k}", {"v": "a", "steps": 1})
            sub.input(f"k{k}", {"v": "b", "steps": 4, "gate": steps})
            sub.input(f"k{k}", {"v": "c", "steps": 1})
        # The first runs finish; the long ones get two steps in and wait at their third.
        sub.open_gate("b0")
        sub.open_gate("b1")
        sub.fire_polls_until(
            lambda: all(_done_steps(s.run) == 2 for s in sub.backend.slices.values())
        )
        snapshot = sub.backend.checkpoint()
        emitted_before = list(sub.emitted)
    finally:
        sub.close()  # the task dies: in-memory work is lost
    assert sorted(emitted_before) == [f"k{k}:0:a" for k in range(4)]

    restored_engine = StandInEngine()
    restored = FakeSubtask(restored_engine, snapshot)
    try:
        restored.open_gate("b2")
        restored.open_gate("b3")
        restored.run_until_idle()  # timers restored with state fire and find the keys
    finally:
        restored.close()
    grouped = _by_key(emitted_before + restored.emitted)
    for k in range(4):
        assert grouped[f"k{k}"] == [(0, "a"), (1, "b"), (2, "c")]
    # The long runs continued from their snapshots instead of starting over.
    assert [run["done_steps"] for run in restored_engine.loaded_runs] == [2, 2, 2, 2]
    assert sorted(restored_engine.steps_run) == sorted(
        [(f"k{k}", 1, step) for k in range(4) for step in (2, 3)]
        + [(f"k{k}", 2, 0) for k in range(4)]
    )


def test_outputs_are_emitted_as_a_run_sends_them(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        sub.input("k", {"v": "a", "steps": 3, "each": True, "gate": ["s0", "s1", "s2"]})
        sub.input("k", {"v": "b"})
        sub.open_gate("s0")
        sub.fire_polls_until(lambda: bool(sub.emitted))
        # Emitted while the run waits for its second step.
        assert sub.emitted == ["k:0:a:1"] and len(engine.steps_run) == 1
        sub.open_gate("s1")
        sub.fire_polls_until(lambda: len(sub.emitted) == 2)
        assert sub.emitted == ["k:0:a:1", "k:0:a:2"] and len(engine.steps_run) == 2
        sub.open_gate("s2")
        sub.run_until_idle()
    finally:
        sub.close()
    assert sub.emitted == ["k:0:a:1", "k:0:a:2", "k:0:a", "k:1:b"]


def test_a_run_that_sends_outputs_is_looked_at_again_soon(
    engine: StandInEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock()  # processing time and busy times stand still unless moved
    monkeypatch.setattr(keyed_runs, "time", clock)
    sub = FakeSubtask(engine, FakeBackend(clock=clock.now))
    try:
        sub.scheduler.typical_wait_s = 0.4  # runs here usually take 0.4 s
        start = clock.now()
        # Waits for its model, having sent nothing: first looked at when runs usually end.
        sub.input("quiet", {"v": "q", "gate": "end"})
        # Sends an output at once, another once "second" opens, then waits for "end".
        sub.input("k", {"v": "a", "steps": 3, "each": True, "gate": [None, "second", "end"]})
        assert sub.emitted == ["k:0:a:1"]  # sent before the run first waited
        assert sub.backend.polls == {(start + 400, "quiet"), (start + 5, "k")}

        queue = sub.scheduler.get(encode_key("k"))
        assert queue is not None
        sub.open_gate("second")
        wait_until(lambda: sub.scheduler.has_news(queue))
        clock.advance(5)
        assert sub.fire_due_polls() == 1
        assert sub.emitted == ["k:0:a:1", "k:0:a:2"]
        # Still sending: looked at again soon, not when runs usually end.
        assert sub.backend.polls == {(start + 400, "quiet"), (start + 10, "k")}
    finally:
        sub.close()


def test_outputs_emitted_before_a_restore_are_not_emitted_again(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        gates = ["s0", "s1", "s2", "s3", "s4"]
        sub.input("k", {"v": "a", "steps": 5, "each": True, "gate": gates})
        sub.input("k", {"v": "b"})
        sub.open_gate("s0")
        sub.open_gate("s1")
        sub.fire_polls_until(lambda: len(sub.emitted) == 2)
        snapshot = sub.backend.checkpoint()
        emitted_before = list(sub.emitted)
    finally:
        sub.close()  # the task dies with the run in progress
    assert emitted_before == ["k:0:a:1", "k:0:a:2"]
    assert json.loads(snapshot.slices["k"].record or "{}")["emitted"] == 2

    restored_engine = StandInEngine()
    restored = FakeSubtask(restored_engine, snapshot)
    try:
        for gate in gates[2:]:
            restored.open_gate(gate)
        restored.run_until_idle()
    finally:
        restored.close()
    assert emitted_before + restored.emitted == [
        "k:0:a:1",
        "k:0:a:2",
        "k:0:a:3",
        "k:0:a:4",
        "k:0:a",
        "k:1:b",
    ]
    assert restored_engine.loaded_runs  # resumed from the snapshot, not replayed


def test_restore_before_any_run_started_replays_inputs(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine, max_in_flight=1)
    try:
        sub.input("k", {"v": "x", "gate": "model"})  # no answer before the checkpoint
        sub.input("k", {"v": "y"})
        snapshot = sub.backend.checkpoint()  # nothing acknowledged yet
    finally:
        sub.close()
    restored = FakeSubtask(StandInEngine(), snapshot)
    try:
        restored.open_gate("model")
        restored.end_of_input()
    finally:
        restored.close()
    assert restored.emitted == ["k:0:x", "k:1:y"]


def test_a_failing_run_fails_the_next_callback(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        sub.input("k", {"v": 1, "fail": True})
        with pytest.raises(RuntimeError, match="an agent run failed") as info:
            sub.fire_polls_while(lambda: True)  # until a poll raises (else TimeoutError)
        assert isinstance(info.value.__cause__, ValueError)
        with pytest.raises(RuntimeError, match="an agent run failed: ValueError: injected"):
            sub.input("other", {"v": 2})
    finally:
        sub.close()


def test_under_skip_a_failed_run_is_tried_again_then_abandoned() -> None:
    engine = StandInEngine(failure_retries=1)
    sub = FakeSubtask(engine)
    try:
        sub.input("flaky", {"v": "a", "delay": 0.005, "fail_times": 1})  # fails once
        sub.input("bad", {"v": "b", "delay": 0.005, "fail": True})  # always fails
        sub.input("bad", {"v": "c"})  # the key goes on after the abandoned input
        sub.input("good", {"v": "d", "delay": 0.005})
        sub.end_of_input()
    finally:
        sub.close()
    failures = [o for o in sub.emitted if isinstance(o, dict)]
    assert failures == [{"failed": "bad:0", "error": "injected failure for bad:0", "attempts": 2}]
    assert sorted(o for o in sub.emitted if isinstance(o, str)) == [
        "bad:1:c",
        "flaky:0:a",
        "good:0:d",
    ]
    assert engine.failures == {("flaky", 0): 1, ("bad", 0): 2}


def test_an_abandoned_inline_run_never_touches_state() -> None:
    engine = StandInEngine(failure_retries=0)
    sub = FakeSubtask(engine)
    try:
        sub.input("k", {"v": 1, "fail": True})  # fails inside the callback that accepts it
        assert sub.emitted == [
            {"failed": "k:0", "error": "injected failure for k:0", "attempts": 1}
        ]
        assert sub.backend.slices["k"].inputs == {}
    finally:
        sub.close()


def test_an_input_state_cannot_keep_is_refused_at_the_door() -> None:
    skipping = FakeSubtask(StandInEngine(failure_retries=0))
    failing = FakeSubtask(StandInEngine())
    try:
        skipping.input("k", {"v": {1, 2}})  # a set: no JSON
        skipping.input("k", {"v": "fine"})
        skipping.end_of_input()
        assert skipping.emitted == [
            {"refused": "k", "error": 'key "k": input is a value of type dict'},
            "k:0:fine",  # the refused input took no sequence number
        ]
        assert skipping.backend.slices["k"].inputs == {}
        with pytest.raises(TypeError, match='key "k": input is a value of type dict'):
            failing.input("k", {"v": {1, 2}})
    finally:
        skipping.close()
        failing.close()


def test_a_refused_key_text_is_refused_at_the_door() -> None:
    """The key selector sent a refused key text (a key without text): a failure record
    naming the key under skip, the door's error under fail; no state either way."""
    text = refused_key_text(None, "'k\\udfff'", "TypeError", "an agent key cannot hold a surrogate")
    skipping = FakeSubtask(StandInEngine(failure_retries=0))
    failing = FakeSubtask(StandInEngine())
    try:
        for sub in (skipping, failing):
            b = sub.backend
            call = (text, "the value", FakeKeyState(b, text), FakeTimers(b, text))
            if sub is failing:
                with pytest.raises(InputRefusedError, match="an agent key cannot hold a"):
                    sub.runs.on_input(*call)
            else:
                assert sub.runs.on_input(*call) == [
                    {
                        "refused": "'k\\udfff'",
                        "error": "key 'k\\udfff': an agent key cannot hold a surrogate",
                    }
                ]
            assert b.slices[text] == KeySlice() and not b.polls
    finally:
        skipping.close()
        failing.close()


def test_end_of_input_surfaces_a_failure(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        sub.input("k", {"v": 1, "delay": 0.01, "fail": True})
        with pytest.raises(RuntimeError, match="an agent run failed"):
            sub.end_of_input()
    finally:
        sub.close()


def test_backpressure_blocks_input_until_runs_finish(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine, max_buffered=2)
    blocking = threading.Event()
    waited: list[bool] = []
    original_wait = sub.scheduler.wait_for_capacity

    def wait_for_capacity(*args: Any, **kwargs: Any) -> bool:
        blocking.set()
        waited.append(original_wait(*args, **kwargs))
        return waited[-1]

    finished_when_b_returned: list[tuple[str, int, int]] = []

    def operator_thread() -> None:
        sub.input("b", {"v": 2, "gate": "b"})  # buffered reaches 2: waits for a finish
        finished_when_b_returned.extend(engine.steps_run)

    try:
        sub.input("a", {"v": 1, "gate": "a"})
        sub.scheduler.wait_for_capacity = wait_for_capacity  # type: ignore[method-assign]
        thread = threading.Thread(target=operator_thread)
        thread.start()
        assert blocking.wait(BOUND)  # b was accepted: its callback waits for capacity
        sub.open_gate("a")
        thread.join(BOUND)
        assert not thread.is_alive()
        sub.open_gate("b")
        sub.run_until_idle()
    finally:
        sub.close()
    # The callback that accepted b waited, and returned only after a's run had finished.
    assert waited == [True]
    assert finished_when_b_returned == [("a", 0, 0)]
    assert sorted(sub.emitted) == ["a:0:1", "b:0:2"]


def test_state_holds_json_only(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine, snapshot_after=0.0)
    try:
        sub.input("k", {"v": "a", "steps": 3, "gate": ["s0", "s1", "s2"]})
        sub.input("k", {"v": "b"})
        sub.open_gate("s0")
        sub.fire_polls_until(lambda: sub.backend.slices["k"].run is not None)
        slice_ = sub.backend.slices["k"]
        for text in [slice_.record, slice_.run, *slice_.inputs.values()]:
            assert text is None or isinstance(json.loads(text), dict)
        assert _done_steps(slice_.run) == 1  # a multi-step run in progress was snapshotted
        sub.open_gate("s1")
        sub.open_gate("s2")
        sub.end_of_input()
    finally:
        sub.close()
    assert sub.emitted == ["k:0:a", "k:1:b"]


def test_inputs_reach_runs_as_their_json_form() -> None:
    seen: list[object] = []

    class Recording(StandInEngine):
        def start_run(self, key, value, key_state):  # type: ignore[no-untyped-def]
            seen.append(value)
            return super().start_run(key, value, key_state)

    sub = FakeSubtask(Recording())
    try:
        sub.input("k", {"v": (1, 2)})  # a tuple becomes a list, before and after a restore
        sub.end_of_input()
    finally:
        sub.close()
    assert seen == [{"v": [1, 2]}]


def test_idle_keys_beyond_the_cache_reload_from_state() -> None:
    engine = StandInEngine()
    reads = 0
    sub = FakeSubtask(engine, max_cached_keys=2)
    original = FakeKeyState.read_record

    def counting_read(self: FakeKeyState) -> str | None:
        nonlocal reads
        reads += 1
        return original(self)

    FakeKeyState.read_record = counting_read  # type: ignore[method-assign]
    try:
        for round_ in range(3):
            for k in range(5):
                sub.input(f"k{k}", {"v": f"{round_}"})
            sub.run_until_idle()
    finally:
        FakeKeyState.read_record = original  # type: ignore[method-assign]
        sub.close()
    grouped = _by_key(sub.emitted)
    assert all(grouped[f"k{k}"] == [(r, str(r)) for r in range(3)] for k in range(5))
    for k in range(5):  # key state survived eviction: every input seen once, in order
        record = json.loads(sub.backend.slices[f"k{k}"].record or "")
        assert record["key_state"]["seen"] == ["0", "1", "2"]
    assert reads > 5  # evicted keys were read back from state


def test_recurring_keys_need_no_state_read(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    reads = 0
    original = FakeKeyState.read_record

    def counting_read(self: FakeKeyState) -> str | None:
        nonlocal reads
        reads += 1
        return original(self)

    FakeKeyState.read_record = counting_read  # type: ignore[method-assign]
    try:
        for round_ in range(4):
            sub.input("k", {"v": round_})
            sub.run_until_idle()
    finally:
        FakeKeyState.read_record = original  # type: ignore[method-assign]
        sub.close()
    assert sub.emitted == [f"k:{i}:{i}" for i in range(4)]
    assert reads == 1


def test_poll_interval_grows_with_busy_time() -> None:
    policy = PollPolicy(min_interval_ms=5, max_interval_ms=1000, factor=0.25)
    assert policy.interval_ms(0) == 5
    assert policy.interval_ms(100) == 25
    assert policy.interval_ms(1000) == 250
    assert policy.interval_ms(60_000) == 1000


def test_first_look_at_a_busy_key_is_when_runs_usually_end() -> None:
    policy = PollPolicy(min_interval_ms=5, max_interval_ms=1000, factor=0.25)
    assert policy.interval_ms(0, expected_ms=200) == 200
    assert policy.interval_ms(150, expected_ms=200) == 50
    assert policy.interval_ms(198, expected_ms=200) == 5  # never sooner than the minimum
    assert policy.interval_ms(200, expected_ms=200) == 5  # then as if busy from there
    assert policy.interval_ms(600, expected_ms=200) == 100
    assert policy.interval_ms(60_000, expected_ms=200) == 1000


def test_the_scheduler_learns_how_long_waiting_runs_take(
    engine: StandInEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock()  # how long a run took, as the scheduler sees it
    monkeypatch.setattr(scheduler_module, "time", clock)
    sub = FakeSubtask(engine)

    def runs_that_wait(name: str, ms: int) -> None:
        for k in range(20):
            sub.input(f"k{k}", {"v": k, "gate": name})
        wait_until(lambda: engine.concurrent == 20)
        clock.advance(ms)  # the model answers after `ms`
        sub.open_gate(name)
        sub.run_until_idle()

    try:
        assert sub.scheduler.typical_wait_s == 0.0
        for k in range(5):
            sub.input(f"k{k}", {"v": k})  # done inline: says nothing about waiting
        assert sub.scheduler.typical_wait_s == 0.0
        runs_that_wait("first", 50)
        assert sub.scheduler.typical_wait_s == pytest.approx(0.05)
        runs_that_wait("second", 10)
        # Shorter runs pull the estimate down quickly (else they would wait for the look):
        # each moves it 30% of the way.
        assert sub.scheduler.typical_wait_s == pytest.approx(0.01 + 0.04 * 0.7**20)
    finally:
        sub.close()


def test_a_run_that_ends_when_expected_is_seen_after_few_looks(
    engine: StandInEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock()
    monkeypatch.setattr(keyed_runs, "time", clock)
    sub = FakeSubtask(engine, FakeBackend(clock=clock.now))
    try:
        sub.scheduler.typical_wait_s = 0.1  # learned: runs here usually take 0.1 s
        start = clock.now()
        for k in range(10):
            sub.input(f"k{k}", {"v": k, "gate": "model"})
        # The first look at each key is when its run usually ends, not 5 ms from now.
        assert sub.backend.polls == {(start + 100, f"k{k}") for k in range(10)}
        sub.open_gate("model")  # the runs end when expected
        wait_until(lambda: sub.scheduler.buffered == 0)
        clock.advance(100)
        assert sub.fire_due_polls() == 10
    finally:
        sub.close()
    # One look per key saw its run's end; none is left.
    assert sorted(sub.emitted) == sorted(f"k{k}:0:{k}" for k in range(10))
    assert sub.backend.polls == set()


def test_a_run_that_goes_on_to_another_wait_is_looked_at_when_that_one_usually_ends(
    engine: StandInEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool round trip: the run's first model call ends when expected, its second one
    starts. The look that finds the run moved on waits for the second call as for the
    first (once, when such waits usually end), instead of looking every few milliseconds
    as if the first wait had run over (which made a two-call run about 27 looks)."""
    clock = ManualClock()
    monkeypatch.setattr(keyed_runs, "time", clock)
    monkeypatch.setattr(scheduler_module, "time", clock)  # when snapshots were published
    sub = FakeSubtask(engine, FakeBackend(clock=clock.now))
    try:
        sub.scheduler.typical_wait_s = 0.4  # learned: waits here usually take 0.4 s
        start = clock.now()
        sub.input("k", {"v": "a", "steps": 2, "gate": ["first", "second"]})
        assert sub.backend.polls == {(start + 400, "k")}
        queue = sub.scheduler.get(encode_key("k"))
        assert queue is not None
        clock.advance(400)
        sub.open_gate("first")  # the first call answers when expected; the second starts
        wait_until(lambda: sub.scheduler.has_news(queue))
        assert sub.fire_due_polls() == 1
        assert sub.emitted == [] and sub.backend.slices["k"].run is not None
        assert sub.backend.polls == {(start + 800, "k")}
        clock.advance(400)
        sub.open_gate("second")
        wait_until(lambda: sub.scheduler.buffered == 0)
        assert sub.fire_due_polls() == 1
    finally:
        sub.close()
    assert sub.emitted == ["k:0:a"] and sub.backend.polls == set()


def test_close_stops_the_loop_thread(engine: StandInEngine) -> None:
    before = set(threading.enumerate())
    sub = FakeSubtask(engine)
    [loop_thread] = _new_loop_threads(before)
    sub.input("k", {"v": 1, "gate": "never"})
    sub.close()
    assert not loop_thread.is_alive()


@pytest.mark.parametrize("inline", [True, False])
def test_an_input_looks_at_a_bounded_number_of_keys_when_many_are_busy(inline: bool) -> None:
    """Beyond `max_cached_keys`, busy keys cannot be forgotten: an input must not rescan all
    of them (the scan grew with the excess, so every input was slower than the last).

    Without `inline` every run ends on the loop thread, as on a loaded machine when an
    input's callback cannot take the loop: the key stays busy until its poll."""
    looked_at: list[int] = [0]

    class CountingEntries(dict):  # the eviction scan reads entries by key
        def __getitem__(self, key: Any) -> Any:
            looked_at[-1] += 1
            return super().__getitem__(key)

    engine = StandInEngine()
    clock = ManualClock()  # polls fire when the test moves processing time
    sub = FakeSubtask(engine, FakeBackend(clock=clock.now), max_cached_keys=10, inline=inline)
    sub.runs._entries = CountingEntries()  # type: ignore[assignment]

    def until_idle() -> None:
        sub.fire_polls_while(after_each=lambda: clock.advance(1000))

    try:
        for k in range(300):
            looked_at.append(0)
            sub.input(f"k{k}", {"v": k, "gate": "answer"})
        assert max(looked_at) <= 64  # was 2 x 290 + 16 (all 300) for the last input
        sub.open_gate("answer")
        until_idle()
        for k in range(300, 400):  # idle keys are forgotten again as inputs come
            sub.input(f"k{k}", {"v": k})
            until_idle()
        assert len(sub.runs._entries) <= 10 + 1
    finally:
        sub.close()
    assert sorted(sub.emitted) == sorted(f"k{k}:0:{k}" for k in range(400))


def test_a_run_that_finishes_as_its_input_is_accepted_leaves_no_input_in_state(
    engine: StandInEngine,
) -> None:
    """The input's run was still going when `on_input` looked (so the input goes to keyed
    state), and finished on the loop thread before `on_input` looked for news (a loaded
    machine): acknowledging it removed an input not stored yet (a KeyError here; in
    Flink, an input left in state for good, past the key's head)."""
    sub = FakeSubtask(engine)
    scheduler = sub.scheduler
    has_news = scheduler.has_news
    looks: list[int] = []

    def finished_meanwhile(queue: Any) -> bool:
        looks.append(1)
        if len(looks) == 2:  # after `submit` saw the run busy: it finishes now
            sub.open_gate("answer")
            wait_until(lambda: bool(queue.finished))
        return has_news(queue)

    scheduler.has_news = finished_meanwhile  # type: ignore[method-assign]
    try:
        sub.input("k", {"v": 1, "gate": "answer"})
        assert sub.emitted == ["k:0:1"] and sub.backend.slices["k"].inputs == {}
        scheduler.has_news = has_news  # type: ignore[method-assign]
        sub.run_until_idle()
        sub.input("k", {"v": 2})
    finally:
        sub.close()
    assert sub.emitted == ["k:0:1", "k:1:2"]
    assert _acknowledged(sub, "k", 2)
