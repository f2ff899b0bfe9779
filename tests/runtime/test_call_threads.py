"""`CallThreadPool`: bounded threads for sync calls (tools, actions); timed-out threads are
written off."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

from flink_agents.runtime.brief_wait import brief_waits
from flink_agents.runtime.call_threads import CallThreadPool
from flink_agents.runtime.errors import ToolCallTimeoutError, ToolThreadsExhaustedError

BOUND = 5.0
"""Seconds any test waits at most (a safety net, never the expected time)."""


def hang(release: threading.Event, started: threading.Event | None = None) -> Callable[[], str]:
    def call() -> str:
        if started is not None:
            started.set()
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
    pool = CallThreadPool(2)

    def boom() -> None:
        raise KeyError("missing")

    async def main() -> None:
        assert await pool.run(lambda: 41 + 1, 1.0) == 42
        with pytest.raises(KeyError, match="missing"):
            await pool.run(boom, 1.0)

    run(main())
    pool.close()


def test_threads_are_bounded_and_reused() -> None:
    pool = CallThreadPool(3, thread_name_prefix="bounded-pool")
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


def test_a_call_waiting_behind_a_blocked_one_gets_a_new_thread(
    release: threading.Event,
) -> None:
    pool = CallThreadPool(4)
    started = threading.Event()

    async def main() -> None:
        blocked = asyncio.ensure_future(pool.run(hang(release, started), BOUND))
        await asyncio.sleep(0)  # submitted
        assert started.wait(BOUND)
        # No thread is idle: the next call gets a thread of its own.
        assert await pool.run(lambda: "quick", BOUND) == "quick"
        assert not blocked.done() and pool.workers == 2
        release.set()
        assert await blocked == "late"

    run(main())
    pool.close()


def test_a_timed_out_call_is_written_off_and_replaced(
    release: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    pool = CallThreadPool(1)

    async def main() -> None:
        with pytest.raises(ToolCallTimeoutError) as raised:
            await pool.run(hang(release), 0.05)
        assert raised.value.written_off and raised.value.timeout == 0.05
        assert pool.abandoned == 1
        # The only thread is still hung: a new one serves the next call.
        assert await pool.run(lambda: "quick", BOUND) == "quick"

    with caplog.at_level(logging.WARNING, logger="flink_agents.runtime.call_threads"):
        run(main())
    assert any("written off" in r.getMessage() for r in caplog.records)
    release.set()
    wait_until(lambda: pool.abandoned == 0)  # the written-off thread ended when it returned
    pool.close()


def test_a_call_waiting_for_a_thread_is_not_timed_out_by_the_wait(
    release: threading.Event,
) -> None:
    pool = CallThreadPool(2)

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
    pool = CallThreadPool(1, max_abandoned=1)

    async def main() -> None:
        with pytest.raises(ToolCallTimeoutError) as raised:
            await pool.run(hang(release), 0.05)
        assert raised.value.written_off
        with pytest.raises(ToolCallTimeoutError) as raised:
            await pool.run(hang(release), 0.05)
        assert not raised.value.written_off  # at the cap: it keeps its thread
        assert pool.abandoned == 1 and pool.workers == 1
        # No thread can become free: a new call is refused at once, not run, and not
        # reported as a timeout.
        with pytest.raises(ToolThreadsExhaustedError) as refused:
            await pool.run(lambda: "never", BOUND)
        assert (refused.value.threads, refused.value.abandoned) == (1, 1)

    with caplog.at_level(logging.WARNING, logger="flink_agents.runtime.call_threads"):
        run(main())
    assert any("not written off" in r.getMessage() for r in caplog.records)
    release.set()
    wait_until(lambda: pool.abandoned == 0)

    async def after() -> str:
        return await pool.run(lambda: "again", BOUND)

    assert run(after()) == "again"  # the kept thread serves calls again
    pool.close()


def test_calls_waiting_behind_blocked_ones_get_extra_threads_before_any_times_out(
    release: threading.Event,
) -> None:
    # Eight calls block both threads and six more: long before any can time out, the
    # waiting ones get threads beyond the pool's two, and a quick call runs at once.
    pool = CallThreadPool(2, max_abandoned=16, extra_after_s=0.01)
    started = [threading.Event() for _ in range(8)]

    async def main() -> None:
        hung = [asyncio.ensure_future(pool.run(hang(release, e), 60.0)) for e in started]
        await asyncio.sleep(0)  # submitted
        assert await asyncio.get_running_loop().run_in_executor(
            None, lambda: all(e.wait(BOUND) for e in started)
        )
        assert await pool.run(lambda: "quick", 60.0) == "quick"
        assert not any(call.done() for call in hung)  # none timed out
        assert pool.workers == 2 and 6 <= pool.abandoned <= 7  # beyond the two
        release.set()
        # Calls on the extra threads answer their callers as any other.
        assert await asyncio.gather(*hung) == ["late"] * 8

    run(main())
    wait_until(lambda: pool.abandoned == 0)  # each extra thread ended after its call
    pool.close()


def test_extra_threads_are_bounded_by_max_abandoned(release: threading.Event) -> None:
    pool = CallThreadPool(1, max_abandoned=2, extra_after_s=0.001)
    started: list[threading.Event] = [threading.Event() for _ in range(5)]

    async def main() -> None:
        hung = [asyncio.ensure_future(pool.run(hang(release, e), 60.0)) for e in started]
        await asyncio.sleep(0)
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: [e.wait(BOUND) for e in started[:3]]
        )
        # One thread of the pool and two beyond it: the other two calls wait for one.
        assert pool.abandoned == 2 and pool.workers == 1
        assert sum(e.is_set() for e in started) == 3
        release.set()
        assert await asyncio.gather(*hung) == ["late"] * 5

    run(main())
    pool.close()


def test_waiting_calls_are_refused_not_timed_out_once_every_thread_is_kept(
    release: threading.Event,
) -> None:
    # No thread may be written off (the limit is 0): when the only thread's call times
    # out, it keeps the thread, and the call waiting behind it is refused at once, not
    # run, and not reported as a timeout (it never ran).
    pool = CallThreadPool(1, max_abandoned=0, extra_after_s=0.001)
    ran: list[str] = []

    async def main() -> None:
        hung = asyncio.ensure_future(pool.run(hang(release), 0.05))
        waiting = asyncio.ensure_future(pool.run(lambda: ran.append("waiting"), 60.0))
        with pytest.raises(ToolCallTimeoutError) as timed_out:
            await hung
        assert not timed_out.value.written_off
        with pytest.raises(ToolThreadsExhaustedError):
            await waiting
        with pytest.raises(ToolThreadsExhaustedError):  # and new calls, until it returns
            await pool.run(lambda: ran.append("new"), 60.0)

    run(main())
    assert ran == []
    release.set()

    def runs_again() -> bool:  # once the kept call has returned
        try:
            return run(pool.run(lambda: "again", BOUND)) == "again"
        except ToolThreadsExhaustedError:
            return False

    wait_until(runs_again)
    pool.close()


def test_a_kept_thread_is_written_off_once_a_thread_beyond_the_limit_returns(
    release: threading.Event,
) -> None:
    pool = CallThreadPool(1, max_abandoned=1)
    first_release = threading.Event()

    async def main() -> None:
        with pytest.raises(ToolCallTimeoutError):
            await pool.run(hang(first_release), 0.05)  # written off: the limit is reached
        with pytest.raises(ToolCallTimeoutError) as kept:
            await pool.run(hang(release), 0.05)
        assert not kept.value.written_off and pool.abandoned == 1
        first_release.set()  # the written-off call returns: room for the kept one to go
        await asyncio.get_running_loop().run_in_executor(
            None, wait_until, lambda: pool.abandoned == 1 and pool.workers == 0
        )
        assert await pool.run(lambda: "quick", BOUND) == "quick"  # on a new thread

    run(main())
    pool.close()


def test_close_fails_waiting_calls_and_refuses_new_ones(release: threading.Event) -> None:
    pool = CallThreadPool(1)

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
        CallThreadPool(0)


def record_calls(loop: asyncio.AbstractEventLoop, method: str) -> list[object]:
    """Record the first argument of each call of ``loop``'s ``method`` (which still runs)."""
    calls: list[object] = []
    original = getattr(loop, method)

    def recorded(first: object, *args: Any, **kwargs: Any) -> Any:
        calls.append(first)
        return original(first, *args, **kwargs)

    setattr(loop, method, recorded)
    return calls


def count_wakeups(loop: asyncio.AbstractEventLoop) -> list[object]:
    """Record each cross-thread wake-up of ``loop`` (`call_soon_threadsafe`)."""
    return record_calls(loop, "call_soon_threadsafe")


def test_calls_that_finish_while_the_loop_is_busy_wake_it_once(
    release: threading.Event,
) -> None:
    pool = CallThreadPool(1)
    last_started = threading.Event()

    def last() -> str:
        last_started.set()
        release.wait()
        return "last"

    async def main() -> None:
        wakeups = count_wakeups(asyncio.get_running_loop())
        calls = [
            asyncio.ensure_future(pool.run(functools.partial(int, i), BOUND)) for i in range(20)
        ]
        final = asyncio.ensure_future(pool.run(last, BOUND))
        await asyncio.sleep(0)  # every call is submitted
        # The loop is held here while the one thread runs the twenty calls in turn.
        assert last_started.wait(BOUND)
        assert await asyncio.gather(*calls) == list(range(20))
        assert len(wakeups) == 1  # one hand-over for the twenty outcomes
        release.set()
        assert await final == "last"

    run(main())
    pool.close()


def test_a_fast_tool_is_waited_for_without_suspending_on_a_thread_of_the_pool() -> None:
    pool = CallThreadPool(1, thread_name_prefix="brief", brief_wait_s=BOUND / 2)

    def where() -> str:
        return threading.current_thread().name

    async def main() -> None:
        wakeups = count_wakeups(asyncio.get_running_loop())
        with brief_waits:  # as on the Flink operator thread running loop callbacks
            for _ in range(3):
                assert (await pool.run(where, BOUND, "lookup")).startswith("brief-")
            with pytest.raises(KeyError, match="missing"):
                await pool.run(functools.partial({}.__getitem__, "missing"), BOUND, "lookup")
        assert wakeups == []  # each outcome was taken right there, none handed over
        # Outside `brief_waits` (the loop's own thread) the run suspends and the loop is
        # woken with the outcome: it has other runs to go on with meanwhile.
        assert (await pool.run(where, BOUND, "lookup")).startswith("brief-")
        assert len(wakeups) == 1

    run(main())
    pool.close()


def test_a_call_not_done_within_the_brief_wait_goes_on_and_its_tool_counts_as_slow(
    release: threading.Event,
) -> None:
    pool = CallThreadPool(2, brief_wait_s=0.01)
    gate = threading.Event()

    def hung() -> str:
        release.wait()
        return "late"

    def waits_for_the_loop() -> bool:
        return gate.wait(0.5)  # set by the loop at once, unless a wait holds it

    async def main() -> None:
        with brief_waits:
            first = asyncio.ensure_future(pool.run(hung, BOUND, "report"))
            await asyncio.sleep(0)  # waited for 10 ms, then left to its thread
            assert not first.done()
            # While that call hangs, its tool counts as slow: the next call is not waited
            # for, even where the wait would be long.
            pool.brief_wait_s = 1.0
            second = asyncio.ensure_future(pool.run(waits_for_the_loop, BOUND, "report"))
            await asyncio.sleep(0)
        gate.set()
        assert await second is True
        release.set()
        assert await first == "late"

    run(main())
    pool.close()


def test_only_calls_made_inside_brief_waits_time_their_key() -> None:
    pool = CallThreadPool(1, brief_wait_s=BOUND / 2)
    slow = threading.Event()

    async def main() -> None:
        wakeups = count_wakeups(asyncio.get_running_loop())
        # On the loop's own thread nothing is waited for: the call is not timed (that
        # costs every call), so this slow one does not make its tool count as slow ...
        assert await pool.run(functools.partial(slow.wait, 0.01), BOUND, "lookup") is False
        assert len(wakeups) == 1
        with brief_waits:  # ... and a call where brief waits are on is waited for
            assert await pool.run(lambda: "fast", BOUND, "lookup") == "fast"
        assert len(wakeups) == 1

    run(main())
    pool.close()


def test_calls_without_a_key_are_never_waited_for() -> None:
    pool = CallThreadPool(1, brief_wait_s=1.0)
    gate = threading.Event()

    async def main() -> None:
        with brief_waits:
            call = asyncio.ensure_future(pool.run(lambda: gate.wait(0.5), BOUND))
            await asyncio.sleep(0)
        gate.set()
        assert await call is True

    run(main())
    pool.close()


def test_a_call_without_a_timeout_sets_no_timer_and_may_be_waited_for_briefly(
    release: threading.Event,
) -> None:
    pool = CallThreadPool(1, brief_wait_s=BOUND / 2)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        call_at = loop.call_at
        timers = record_calls(loop, "call_at")  # `call_later` goes through it too
        with brief_waits:
            assert await pool.run(functools.partial(str.upper, "a"), None, "action") == "A"
        slow = asyncio.ensure_future(pool.run(release.wait, None))
        await asyncio.sleep(0)  # submitted
        assert timers == []
        loop.call_at = call_at  # type: ignore[method-assign]
        await asyncio.sleep(0.05)
        assert not slow.done()  # never times out: it waits for its call
        release.set()
        assert await slow is True

    run(main())
    pool.close()


def test_calls_with_a_timeout_share_one_timer_set_for_the_first_that_can_time_out(
    release: threading.Event,
) -> None:
    pool = CallThreadPool(21)  # a thread for each call

    async def main() -> None:
        loop = asyncio.get_running_loop()
        call_at = loop.call_at
        timers: list[tuple[asyncio.TimerHandle, list[bool]]] = []
        """The timers set for calls' timeouts, each with whether it fired."""

        def recorded(at: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
            if getattr(callback, "__name__", "") != "_look":  # not a timeout's timer
                return call_at(at, callback, *args, **kwargs)
            fired: list[bool] = []

            def fire(*given: Any) -> None:
                fired.append(True)
                callback(*given)

            timers.append((call_at(at, fire, *args, **kwargs), fired))
            return timers[-1][0]

        loop.call_at = recorded  # type: ignore[method-assign]
        started = loop.time()
        long = [asyncio.ensure_future(pool.run(hang(release), BOUND)) for _ in range(20)]
        await asyncio.sleep(0)
        assert len(timers) == 1  # twenty calls, one timer: when the first can time out
        assert started + BOUND <= timers[0][0].when() <= loop.time() + BOUND
        # A call that can time out sooner sets it earlier, and times out on its own.
        with pytest.raises(ToolCallTimeoutError) as raised:
            await pool.run(hang(release), 0.05)
        assert raised.value.timeout == 0.05 and pool.abandoned == 1
        assert timers[0][0].cancelled()  # moved earlier ...
        assert timers[-1][0].when() >= started + BOUND  # ... and set again for the twenty
        # One timer for the short call, one set again for the twenty; on a loaded machine the
        # short call can still wait for its thread when its timer fires (a timeout counts
        # from the call's start), which sets one more.
        assert 3 <= len(timers) <= 4
        assert not any(call.done() for call in long)
        release.set()
        assert await asyncio.gather(*long) == ["late"] * 20
        # Each timer fired or was cancelled: none outlived the calls it was set for.
        assert all(handle.cancelled() or fired for handle, fired in timers)

    run(main())
    pool.close()


def policy_of_a_pool_thread(pool: CallThreadPool) -> int:
    try:
        return run(pool.run(lambda: os.sched_getscheduler(0), None))
    finally:
        pool.close()


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="a Linux scheduling policy")
def test_with_batch_scheduling_pool_threads_do_not_preempt_their_waker() -> None:
    assert policy_of_a_pool_thread(CallThreadPool(1, batch_scheduling=True)) == os.SCHED_BATCH
    assert policy_of_a_pool_thread(CallThreadPool(1)) == os.SCHED_OTHER  # the default
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # the caller's thread keeps its own
