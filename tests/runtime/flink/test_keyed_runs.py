"""`KeyedRuns` + `RunScheduler` driven like Flink's operator thread (no PyFlink)."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import defaultdict

import pytest

from flink_agents.runtime.flink.keyed_runs import PollPolicy
from tests.runtime.flink.fake_flink import FakeKeyState, FakeSubtask
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


def test_end_of_input_finishes_runs_still_in_flight(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        for k in range(10):
            for i in range(3):
                sub.input(f"k{k}", {"v": i, "delay": 0.02})
        assert len(sub.emitted) < 30  # nothing polled yet: runs are in flight
        sub.end_of_input()
    finally:
        sub.close()
    grouped = _by_key(sub.emitted)
    assert len(sub.emitted) == 30
    assert all(grouped[f"k{k}"] == [(i, str(i)) for i in range(3)] for k in range(10))


def test_in_flight_runs_are_bounded(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine, max_in_flight=3)
    try:
        for k in range(12):
            sub.input(f"k{k}", {"v": k, "delay": 0.01})
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
            sub.input(f"k{k}", {"v": k, "delay": 0.01})
        sub.run_until_idle()
    finally:
        sub.close()
    assert len(sub.emitted) == 8
    assert engine.max_concurrent == 2
    assert [key for key, _, _ in engine.steps_run] == [f"k{k}" for k in range(8)]


def test_closing_cancels_runs_that_wait_for_a_slot(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine, max_in_flight=1)
    for k in range(5):
        sub.input(f"k{k}", {"v": k, "delay": 0.5})
    started = time.monotonic()
    sub.close()
    assert time.monotonic() - started < 2.0  # not 5 runs x 0.5 s one after another
    assert len(engine.steps_run) <= 1  # only the run holding the slot got to start


def test_runs_of_different_keys_overlap(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    started = time.monotonic()
    try:
        for k in range(50):
            sub.input(f"k{k}", {"v": k, "delay": 0.1})
        sub.run_until_idle()
    finally:
        sub.close()
    assert len(sub.emitted) == 50
    assert time.monotonic() - started < 2.0  # 50 x 100 ms serially would be 5 s
    assert engine.max_concurrent > 10


def test_restore_resumes_runs_from_their_snapshot(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine, snapshot_after=0.0)
    try:
        for k in range(4):
            sub.input(f"k{k}", {"v": "a", "steps": 1})
            sub.input(f"k{k}", {"v": "b", "steps": 4, "delay": 0.03})
            sub.input(f"k{k}", {"v": "c", "steps": 1})
        # Let the first runs finish and the long ones get two steps in, then checkpoint.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            sub.fire_due_polls()
            if len(sub.emitted) == 4 and all(
                json.loads(s.run or "{}").get("done_steps", 0) >= 2
                for s in sub.backend.slices.values()
            ):
                break
            time.sleep(0.002)
        snapshot = sub.backend.checkpoint()
        emitted_before = list(sub.emitted)
    finally:
        sub.close()  # the task dies: in-memory work is lost
    assert sorted(emitted_before) == [f"k{k}:0:a" for k in range(4)]

    restored_engine = StandInEngine()
    restored = FakeSubtask(restored_engine, snapshot)
    try:
        restored.run_until_idle()  # timers restored with state fire and find the keys
    finally:
        restored.close()
    grouped = _by_key(emitted_before + restored.emitted)
    for k in range(4):
        assert grouped[f"k{k}"] == [(0, "a"), (1, "b"), (2, "c")]
    # The long runs continued from their snapshots instead of starting over.
    assert len(restored_engine.loaded_runs) == 4
    assert all(run["done_steps"] >= 2 for run in restored_engine.loaded_runs)
    resumed_first_steps = [s for s in restored_engine.steps_run if s[1] == 1]
    assert all(step >= 2 for _, _, step in resumed_first_steps)


def test_outputs_are_emitted_as_a_run_sends_them(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    seen_while_running: list[str] = []
    try:
        sub.input("k", {"v": "a", "steps": 3, "delay": 0.05, "each": True})
        sub.input("k", {"v": "b"})

        def look() -> None:
            if sub.emitted and not seen_while_running and len(engine.steps_run) < 3:
                seen_while_running.extend(sub.emitted)

        sub.fire_polls_while(after_each=look)
    finally:
        sub.close()
    assert sub.emitted == ["k:0:a:1", "k:0:a:2", "k:0:a", "k:1:b"]
    assert seen_while_running and seen_while_running[0] == "k:0:a:1"


def test_a_run_that_sends_outputs_is_looked_at_again_soon(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        for k in range(5):  # runs here usually take 0.4 s
            sub.input(f"w{k}", {"v": k, "delay": 0.4})
        sub.run_until_idle()
        assert sub.scheduler.typical_wait_s > 0.3
        emitted_at: dict[str, float] = {}
        started = time.monotonic()
        # Sends an output at once, another after 0.1 s, and ends after 0.4 s.
        sub.input("k", {"v": "a", "steps": 3, "delay": [0.0, 0.1, 0.3], "each": True})

        def stamp() -> None:
            for output in sub.emitted:
                emitted_at.setdefault(output, time.monotonic() - started)

        sub.fire_polls_while(after_each=stamp)
    finally:
        sub.close()
    assert emitted_at["k:0:a:1"] < 0.05  # sent before the run first waited
    # The key is looked at again soon, not when runs usually end (0.4 s).
    assert emitted_at["k:0:a:2"] < 0.3, emitted_at


def test_outputs_emitted_before_a_restore_are_not_emitted_again(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        sub.input("k", {"v": "a", "steps": 5, "delay": 0.03, "each": True})
        sub.input("k", {"v": "b"})
        sub.fire_polls_while(lambda: len(sub.emitted) < 2)
        snapshot = sub.backend.checkpoint()
        emitted_before = list(sub.emitted)
    finally:
        sub.close()  # the task dies with the run in progress
    assert 2 <= len(emitted_before) < 5
    assert json.loads(snapshot.slices["k"].record or "{}")["emitted"] == len(emitted_before)

    restored_engine = StandInEngine()
    restored = FakeSubtask(restored_engine, snapshot)
    try:
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
        sub.input("k", {"v": "x", "delay": 0.05})
        sub.input("k", {"v": "y"})
        snapshot = sub.backend.checkpoint()  # nothing acknowledged yet
    finally:
        sub.close()
    restored = FakeSubtask(StandInEngine(), snapshot)
    try:
        restored.end_of_input()
    finally:
        restored.close()
    assert restored.emitted == ["k:0:x", "k:1:y"]


def test_a_failing_run_fails_the_next_callback(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        sub.input("k", {"v": 1, "fail": True})
        deadline = time.monotonic() + 5
        with pytest.raises(RuntimeError, match="an agent run failed") as info:
            while time.monotonic() < deadline:
                sub.fire_due_polls()
                time.sleep(0.002)
        assert isinstance(info.value.__cause__, ValueError)
        with pytest.raises(RuntimeError):
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
            {"refused": "k", "error": "input is a value of type dict"},
            "k:0:fine",  # the refused input took no sequence number
        ]
        assert skipping.backend.slices["k"].inputs == {}
        with pytest.raises(TypeError, match='key "k": input is a value of type dict'):
            failing.input("k", {"v": {1, 2}})
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
    try:
        sub.input("a", {"v": 1, "delay": 0.1})
        started = time.monotonic()
        sub.input("b", {"v": 2, "delay": 0.1})  # buffered reaches 2: waits for a finish
        waited = time.monotonic() - started
        sub.run_until_idle()
    finally:
        sub.close()
    assert waited >= 0.05
    assert sorted(sub.emitted) == ["a:0:1", "b:0:2"]


def test_state_holds_json_only(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine, snapshot_after=0.0)
    try:
        sub.input("k", {"v": "a", "steps": 3, "delay": 0.02})
        sub.input("k", {"v": "b"})
        time.sleep(0.03)
        sub.fire_due_polls()
        time.sleep(0.02)
        sub.fire_due_polls()
        slice_ = sub.backend.slices["k"]
        for text in [slice_.record, slice_.run, *slice_.inputs.values()]:
            assert text is None or isinstance(json.loads(text), dict)
        assert slice_.run is not None  # a multi-step run in progress was snapshotted
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


def test_the_scheduler_learns_how_long_waiting_runs_take(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        assert sub.scheduler.typical_wait_s == 0.0
        for k in range(5):
            sub.input(f"k{k}", {"v": k})  # done inline: says nothing about waiting
        assert sub.scheduler.typical_wait_s == 0.0
        for k in range(20):
            sub.input(f"k{k}", {"v": k, "delay": 0.05})
        sub.run_until_idle()
        assert 0.04 < sub.scheduler.typical_wait_s < 0.08
        for k in range(20):
            sub.input(f"k{k}", {"v": k, "delay": 0.01})
        sub.run_until_idle()
        # Shorter runs pull the estimate down quickly (else they would wait for the look).
        assert sub.scheduler.typical_wait_s < 0.025
    finally:
        sub.close()


def test_a_run_that_ends_when_expected_is_seen_after_few_looks(engine: StandInEngine) -> None:
    sub = FakeSubtask(engine)
    try:
        for k in range(10):  # learn the usual time
            sub.input(f"k{k}", {"v": k, "delay": 0.1})
        sub.run_until_idle()
        emitted = len(sub.emitted)
        for k in range(10):
            sub.input(f"k{k}", {"v": k, "delay": 0.1})
        polls = sub.fire_polls_while()
    finally:
        sub.close()
    assert len(sub.emitted) == emitted + 10
    # Polling from the start, every 25% of the busy time, would look about nine times.
    assert polls <= 10 * 4, polls


def test_close_stops_the_loop_thread(engine: StandInEngine) -> None:
    before = {t.name for t in threading.enumerate()}
    sub = FakeSubtask(engine)
    sub.input("k", {"v": 1, "delay": 5.0})
    sub.close()
    time.sleep(0.05)
    after = {t.name for t in threading.enumerate()}
    assert "flink-agents-runs" not in after - before
