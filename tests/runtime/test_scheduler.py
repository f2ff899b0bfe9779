"""`RunScheduler` on one asyncio loop (as the local runner drives it): no threads, no
sleeps; runs go on when a test opens their gate."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from flink_agents.runtime.errors import InputRefusedError
from flink_agents.runtime.scheduler import KeyQueue, RunScheduler, admit, run_bytes
from tests.runtime.stand_in_engine import StandInEngine


async def _settle() -> None:
    """Let every ready task run until all wait."""
    for _ in range(20):
        await asyncio.sleep(0)


class Harness:
    """A scheduler, its engine, and every key's outputs as `take` gives them."""

    def __init__(self, engine: StandInEngine | None = None, **options: Any) -> None:
        self.engine = engine or StandInEngine()
        self.progressed: list[str] = []
        self.scheduler = RunScheduler(
            self.engine, on_progress=lambda q: self.progressed.append(q.key), **options
        )
        self.outputs: dict[str, list[Any]] = {}

    def submit(self, key: str, value: Any) -> KeyQueue:
        scheduler = self.scheduler
        queue = scheduler.get(key) or scheduler.create(key, key)
        encoded, decoded = admit(self.engine, key, value)
        scheduler.submit(queue, decoded, len(encoded))
        return queue

    def take_all(self) -> None:
        for key, queue in self.scheduler.queues.items():
            progress = self.scheduler.take(queue)
            found = self.outputs.setdefault(key, [])
            for outputs in progress.finished:
                found += outputs
            found += progress.sent


async def test_per_key_order_and_overlap_across_keys() -> None:
    h = Harness()
    for i in range(3):
        for key in ("a", "b"):
            h.submit(key, {"v": i, "gate": f"{key}{i}"})
    await _settle()
    assert h.scheduler.running == 2  # one run per key, both keys at once
    for name in ("b2", "b1", "a1", "a2"):  # later inputs' gates opened first
        h.engine.gate(name).set()
    await _settle()
    h.take_all()
    assert h.outputs == {"a": [], "b": []}  # each key's first run still waits
    h.engine.gate("a0").set()
    h.engine.gate("b0").set()
    await _settle()
    h.take_all()
    assert h.outputs == {"a": ["a:0:0", "a:1:1", "a:2:2"], "b": ["b:0:0", "b:1:1", "b:2:2"]}
    assert h.scheduler.buffered == 0 and h.scheduler.running == 0


async def test_slots_go_to_waiting_runs_in_the_order_they_asked() -> None:
    h = Harness(max_in_flight=2)
    for key in "abcde":
        h.submit(key, {"v": key, "gate": key})
    await _settle()
    assert h.scheduler.running == 2 and h.engine.max_concurrent == 2
    started: list[str] = []
    for key in "abcde":
        h.engine.gate(key).set()
        await _settle()
        started = [k for k, _, _ in h.engine.steps_run]
    assert started == list("abcde")
    assert h.engine.max_concurrent == 2


async def test_runs_in_flight_are_bounded_by_memory_not_by_a_count() -> None:
    h = Harness()  # the defaults: 256 MiB, no count
    inputs = [{"v": i, "gate": "never"} for i in range(1500)]
    for i, value in enumerate(inputs):
        h.submit(f"k{i}", value)
    await _settle()
    # Every run waits at once (1,000 at most while runs were counted, not sized).
    assert h.scheduler.running == 1500 and h.engine.concurrent == 1500
    assert h.scheduler.running_bytes == sum(run_bytes(len(json.dumps(v))) for v in inputs)
    h.scheduler.cancel()
    await _settle()


async def test_large_runs_are_held_back_and_runs_go_on_in_the_order_they_asked() -> None:
    def big(key: str) -> dict[str, Any]:
        return {"v": key, "gate": key, "pad": "x" * 100_000}

    small = {"v": "s", "gate": "s"}
    big_bytes = run_bytes(len(json.dumps(big("a"))))
    assert big_bytes > 400_000  # 16 KiB and 4 bytes per character of its JSON
    h = Harness(max_in_flight_bytes=2 * big_bytes + run_bytes(len(json.dumps(small))))
    for key in "abc":
        h.submit(key, big(key))
    h.submit("s", small)  # would fit beside a and b, but asked after c
    await _settle()
    assert h.scheduler.running == 2 and h.engine.concurrent == 2  # a and b
    h.engine.gate("a").set()
    await _settle()
    assert h.scheduler.running == 3  # b, c and s
    assert h.scheduler.running_bytes == 2 * big_bytes + run_bytes(len(json.dumps(small)))
    for key in "bcs":
        h.engine.gate(key).set()
    await _settle()
    assert [key for key, _, _ in h.engine.steps_run] == list("abcs")
    assert h.scheduler.running == 0 and h.scheduler.running_bytes == 0


async def test_one_run_goes_on_however_large() -> None:
    h = Harness(max_in_flight_bytes=1)
    h.submit("a", {"v": 1, "gate": "a"})
    h.submit("b", {"v": 2, "gate": "b"})
    await _settle()
    assert h.scheduler.running == 1
    h.engine.gate("a").set()
    h.engine.gate("b").set()
    await _settle()
    h.take_all()
    assert h.outputs == {"a": ["a:0:1"], "b": ["b:0:2"]}


async def test_a_run_is_counted_for_its_latest_snapshot() -> None:
    h = Harness(snapshot_after_s=0.0)
    value = {"v": "x", "steps": 2, "each": True, "gate": ["g1", "g2"]}
    queue = h.submit("k", value)
    await _settle()
    assert h.scheduler.running_bytes == run_bytes(len(json.dumps(value)))  # its input
    h.engine.gate("g1").set()
    await _settle()
    run_json = h.scheduler.take(queue).run_json
    assert run_json is not None and len(run_json) > len(json.dumps(value))
    assert h.scheduler.running_bytes == run_bytes(len(run_json))
    h.engine.gate("g2").set()
    await _settle()
    assert h.scheduler.running_bytes == 0


async def test_outputs_a_run_sends_are_published_at_once_and_taken_once() -> None:
    h = Harness(snapshot_after_s=3600.0)  # only outputs publish intermediate snapshots
    queue = h.submit("k", {"v": "x", "steps": 3, "each": True, "gate": ["g1", "g2", "g3"]})
    h.engine.gate("g1").set()
    await _settle()
    progress = h.scheduler.take(queue)
    assert progress.sent == ["k:0:x:1"] and progress.taken == 1
    assert progress.run_json is not None and json.loads(progress.run_json)["done_steps"] == 1
    assert h.scheduler.take(queue).sent == []  # taken once
    h.engine.gate("g2").set()
    h.engine.gate("g3").set()
    await _settle()
    progress = h.scheduler.take(queue)
    # The finished run's outputs that were not taken yet, then nothing in progress.
    assert progress.finished == [["k:0:x:2", "k:0:x"]]
    assert progress.sent == [] and progress.run_json is None and progress.idle


async def test_a_run_that_finishes_after_a_take_is_taken_by_the_next_one_only() -> None:
    """A take is what was published when it was made: a run finishing on the loop thread
    while the operator thread still reads a take (of nothing finished) is given by the
    next take alone (it was given twice: the take held the queue's own list, which the
    run's end then filled: its outputs emitted twice, its input removed twice)."""
    h = Harness()
    queue = h.submit("k", {"v": "x", "gate": "g"})
    await _settle()
    before = h.scheduler.take(queue)
    h.engine.gate("g").set()
    await _settle()
    assert before.finished == []
    assert h.scheduler.take(queue).finished == [["k:0:x"]]
    assert h.scheduler.take(queue).finished == []


async def test_a_stored_run_resumes_and_its_taken_outputs_are_not_given_again() -> None:
    engine = StandInEngine()
    stored = engine.start_run("k", {"v": "x", "steps": 3, "each": True}, {"next_seq": 0})
    stored.update(done_steps=1, outputs=["k:0:x:1"])
    h = Harness(engine)
    queue = h.scheduler.create(
        "k",
        "k",
        key_state_json=json.dumps({"next_seq": 1, "seen": []}),
        run_json=json.dumps(stored),
        inputs=[({"v": "x", "steps": 3, "each": True}, 0), ("next", 0)],
        taken=1,
    )
    await _settle()
    progress = h.scheduler.take(queue)
    assert progress.finished == [["k:0:x:2", "k:0:x"], ["k:1:next"]]
    assert h.scheduler.stats.runs_resumed == 1 and h.scheduler.stats.runs_started == 1


async def test_under_skip_a_failed_run_is_tried_again_then_abandoned() -> None:
    h = Harness(StandInEngine(failure_retries=2))
    h.submit("k", {"v": "flaky", "fail_times": 2})
    h.submit("k", {"v": "bad", "fail": True})
    h.submit("k", {"v": "fine"})
    await _settle()
    h.take_all()
    assert h.outputs["k"] == [
        "k:0:flaky",
        {"failed": "k:1", "error": "injected failure for k:1", "attempts": 3},
        "k:2:fine",
    ]
    assert h.scheduler.failure is None


async def test_under_fail_the_first_failure_stops_the_key_and_is_kept() -> None:
    h = Harness()
    h.submit("k", {"v": "bad", "fail": True})
    h.submit("k", {"v": "never"})
    h.submit("other", {"v": "fine"})
    await _settle()
    failure = h.scheduler.failure
    assert isinstance(failure, ValueError) and "k:0" in str(failure)
    assert "k" in h.progressed  # the caller heard of it
    assert ("k", 1, 0) not in h.engine.steps_run
    h.take_all()
    assert h.outputs["other"] == ["other:0:fine"]


async def test_capacity_counts_inputs_until_their_run_finishes() -> None:
    h = Harness(max_buffered=2)
    h.submit("a", {"v": 1, "gate": "g"})
    assert h.scheduler.has_capacity()
    h.submit("b", {"v": 2, "gate": "g"})
    assert not h.scheduler.has_capacity() and h.scheduler.buffered == 2
    h.engine.gate("g").set()
    await _settle()
    assert h.scheduler.has_capacity() and h.scheduler.buffered == 0


async def test_cancel_stops_runs_in_flight() -> None:
    h = Harness()
    h.submit("k", {"v": 1, "gate": "never"})
    await _settle()
    h.scheduler.cancel()
    await _settle()
    assert h.scheduler.running == 0
    assert h.engine.steps_run == []


async def test_an_idle_key_is_released_only_once_everything_is_taken() -> None:
    h = Harness()
    queue = h.submit("k", "x")
    await _settle()
    assert h.scheduler.is_idle(queue)
    assert not h.scheduler.release(queue)  # its output was not taken
    h.take_all()
    assert h.scheduler.release(queue) and h.scheduler.get("k") is None


async def test_keys_with_news_come_in_the_order_they_published() -> None:
    h = Harness()
    a, b, c = (h.submit(key, {"v": 1, "gate": key}) for key in ("a", "b", "c"))
    await _settle()
    scheduler = h.scheduler
    scheduler.watch_news()
    for name in ("c", "a"):
        h.engine.gate(name).set()
        await _settle()
    assert scheduler.wait_for_news() == [c, a]  # runs of b are left: it had news to return
    h.engine.gate("b").set()
    await _settle()
    scheduler.take(b)  # taken by someone else (a poll): no news any more
    assert scheduler.wait_for_news() == []  # and no run left to wait for


def test_admit_gives_the_decoded_json_form() -> None:
    engine = StandInEngine()
    assert admit(engine, '"k"', (1, 2)) == ("[1, 2]", [1, 2])
    with pytest.raises(InputRefusedError, match='key "k": input is a value of type set'):
        admit(engine, '"k"', {1})
