"""The collector tuning (`gc.tuning`, `gc.freeze`): held by runners while runs are in flight,
counted, undone exactly; freezing only when asked for."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterator

import pytest

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext
from flink_agents.runtime.gc_tuning import YOUNG_THRESHOLD, CollectorTuning, tuning
from flink_agents.runtime.local_runner import LocalRunner


@pytest.fixture(autouse=True)
def untouched_collector() -> Iterator[None]:
    """Every test starts and ends with Python's collector as it found it."""
    before = gc.get_threshold()
    assert tuning.holders == 0
    yield
    assert tuning.holders == 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_the_first_hold_raises_the_young_threshold_and_freezes_nothing() -> None:
    own = CollectorTuning()
    before = gc.get_threshold()
    own.hold()
    try:
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() == 0
    finally:
        own.release()
    assert gc.get_threshold() == before


def test_a_freezing_hold_freezes_until_the_last_freezing_holder_leaves() -> None:
    kept = [object() for _ in range(3)]  # something alive before the hold
    own = CollectorTuning()
    own.hold()
    own.hold(freeze=True)
    try:
        assert gc.get_freeze_count() > 0
    finally:
        own.release(freeze=True)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD  # the other holder is still there
    own.release()
    assert kept


def test_thresholds_someone_changed_meanwhile_are_left_to_them() -> None:
    own = CollectorTuning()
    before = gc.get_threshold()
    own.hold()
    try:
        gc.set_threshold(1234, *before[1:])
    finally:
        own.release()
    try:
        assert gc.get_threshold() == (1234, *before[1:])
    finally:
        gc.set_threshold(*before)


def test_holds_are_counted_and_the_last_release_restores() -> None:
    own = CollectorTuning()
    before = gc.get_threshold()
    own.hold()
    own.hold()
    own.release()
    assert own.holders == 1
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD  # still held by the other runner
    own.release()
    assert own.holders == 0
    assert gc.get_threshold() == before


def test_a_release_without_a_hold_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="released more often than held"):
        CollectorTuning().release()


def _observing_agent(seen: list[tuple[int, int]]) -> Agent:
    async def work(event: Event, ctx: RunnerContext) -> None:
        seen.append((tuning.holders, gc.get_threshold()[0]))
        ctx.send_event(OutputEvent(output=event.attributes["input"]))

    return Agent().add_action("work", InputEvent, work)


def test_the_local_runner_holds_the_tuning_while_its_runs_are_in_flight() -> None:
    seen: list[tuple[int, int]] = []
    outputs = asyncio.run(
        LocalRunner(_observing_agent(seen)).run([{"key": i, "value": i} for i in range(3)])
    )
    assert len(outputs) == 3
    assert seen == [(1, YOUNG_THRESHOLD)] * 3


def test_gc_tuning_off_leaves_the_collector_alone() -> None:
    seen: list[tuple[int, int]] = []
    runner = LocalRunner(_observing_agent(seen), {"gc.tuning": False})
    asyncio.run(runner.run([{"key": 1, "value": 1}]))
    assert seen == [(0, gc.get_threshold()[0])]


def test_a_failed_stream_releases_the_tuning() -> None:
    async def fail(event: Event, ctx: RunnerContext) -> None:
        raise ValueError("boom")

    runner = LocalRunner(Agent().add_action("fail", InputEvent, fail))
    with pytest.raises(Exception, match="boom"):
        asyncio.run(runner.run([{"key": 1, "value": 1}]))


def test_stopping_a_subtask_releases_its_hold_even_when_its_engine_fails_to_close() -> None:
    pytest.importorskip("pyflink")
    from flink_agents.runtime.flink.loop_thread import LoopThread
    from flink_agents.runtime.flink.operator import _stop_runs
    from flink_agents.runtime.flink.pickled_outputs import hold_reducers
    from flink_agents.runtime.scheduler import RunScheduler
    from tests.runtime.stand_in_engine import StandInEngine

    class BrokenClose(StandInEngine):
        def close(self) -> None:
            raise OSError("the event log's disk is gone")

    for engine in (StandInEngine(), BrokenClose()):
        loop_thread = LoopThread()
        loop_thread.start()
        scheduler = RunScheduler(
            engine,
            max_in_flight=1,
            max_buffered=1,
            snapshot_after_s=0.0,
            launch=loop_thread.launch,
        )
        tuning.hold()  # as the operator's open does with gc.tuning on
        hold_reducers()  # and always
        with (
            pytest.raises(OSError) if isinstance(engine, BrokenClose) else contextlib.nullcontext()
        ):
            _stop_runs(loop_thread, scheduler, engine, True)
        assert tuning.holders == 0
