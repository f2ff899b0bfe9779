"""`ToolThreadPool`: bounded threads for sync tools; timed-out threads are written off."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from flink_agents.runtime.errors import ToolCallTimeoutError
from flink_agents.runtime.tool_threads import ToolThreadPool

BOUND = 5.0
"""Seconds any test waits at most (a safety net, never the expected time)."""


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of each test: lets every hung call return."""
    event = threading.Event()
    yield event
    event.set()


def hang(release: threading.Event) -> Callable[[], str]:
    def call() -> str:
        release.wait()
        return "late"

    return call


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, BOUND)

    return asyncio.run(bounded())


def wait_until(condition: Callable[[], bool]) -> None:
    done = threading.Event()
    for _ in range(int(BOUND / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("condition not met in time")


def test_results_and_exceptions_come_back() -> None:
    pool = ToolThreadPool(2)

    def boom() -> None:
        raise KeyError("missing")

    async def main() -> None:
        assert await pool.run(lambda: 41 + 1, 1.0) == 42
        with pytest.raises(KeyError, match="missing"):
            await pool.run(boom, 1.0)

    run(main())
    pool.close()


def test_threads_are_bounded_and_reused() -> None:
    pool = ToolThreadPool(3, thread_name_prefix="bounded-pool")
    seen: set[str] = set()
    gate = threading.Barrier(3, timeout=BOUND)

    def work() -> None:
        seen.add(threading.current_thread().name)
        gate.wait()  # three at once, so all three threads start

    async def main() -> None:
        for _ in range(4):
            await asyncio.gather(*(pool.run(work, BOUND) for _ in range(3)))

    run(main())
    assert len(seen) == 3 and pool.workers == 3
    pool.close()
    wait_until(lambda: pool.workers == 0)


def test_a_timed_out_call_is_written_off_and_replaced(
    release: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    pool = ToolThreadPool(1)

    async def main() -> None:
        with pytest.raises(ToolCallTimeoutError) as raised:
            await pool.run(hang(release), 0.05)
        assert raised.value.started and raised.value.timeout == 0.05
        assert pool.abandoned == 1
        # The only thread is still hung: a new one serves the next call.
        assert await pool.run(lambda: "quick", BOUND) == "quick"

    with caplog.at_level(logging.WARNING, logger="flink_agents.runtime.tool_threads"):
        run(main())
    assert any("written off" in r.getMessage() for r in caplog.records)
    release.set()
    wait_until(lambda: pool.abandoned == 0)  # the written-off thread ended when it returned
    pool.close()


def test_a_call_waiting_for_a_thread_is_not_timed_out_by_the_wait(
    release: threading.Event,
) -> None:
    pool = ToolThreadPool(2)

    async def main() -> tuple[Any, ...]:
        # Both threads hang; the quick call waits for one (0.5 s), then runs once they
        # are written off: its timeout (0.25 s) counts from its start, not from its
        # submission. (The quarter second is a margin for a busy machine to start a
        # thread and run it: the call itself takes microseconds.)
        return await asyncio.gather(
            pool.run(hang(release), 0.5),
            pool.run(hang(release), 0.5),
            pool.run(lambda: "quick", 0.25),
            return_exceptions=True,
        )

    first, second, quick = run(main())
    assert isinstance(first, ToolCallTimeoutError) and isinstance(second, ToolCallTimeoutError)
    assert quick == "quick"
    pool.close()


def test_written_off_threads_are_capped(
    release: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    pool = ToolThreadPool(1, max_abandoned=1)

    async def main() -> None:
        with pytest.raises(ToolCallTimeoutError):
            await pool.run(hang(release), 0.05)  # written off
        with pytest.raises(ToolCallTimeoutError):
            await pool.run(hang(release), 0.05)  # at the cap: keeps its thread
        assert pool.abandoned == 1 and pool.workers == 1
        # No thread can become free: a waiting call times out without running.
        with pytest.raises(ToolCallTimeoutError) as raised:
            await pool.run(lambda: "never", 0.05)
        assert not raised.value.started

    with caplog.at_level(logging.WARNING, logger="flink_agents.runtime.tool_threads"):
        run(main())
    assert any("not written off" in r.getMessage() for r in caplog.records)
    release.set()
    wait_until(lambda: pool.abandoned == 0)

    async def after() -> str:
        return await pool.run(lambda: "again", BOUND)

    assert run(after()) == "again"  # the kept thread serves calls again
    pool.close()


def test_close_fails_waiting_calls_and_refuses_new_ones(release: threading.Event) -> None:
    pool = ToolThreadPool(1)

    started = threading.Event()

    def busy_call() -> str:
        started.set()
        release.wait()
        return "late"

    async def main() -> None:
        busy = asyncio.ensure_future(pool.run(busy_call, BOUND))
        waiting = asyncio.ensure_future(pool.run(lambda: "never", BOUND))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, BOUND)
        pool.close()
        with pytest.raises(RuntimeError, match="closed"):
            await waiting
        with pytest.raises(RuntimeError, match="closed"):
            await pool.run(lambda: None, 1.0)
        release.set()
        assert await busy == "late"  # a running call still returns

    run(main())
    wait_until(lambda: pool.workers == 0)


def test_max_workers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ToolThreadPool(0)
