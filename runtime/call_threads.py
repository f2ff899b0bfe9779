"""`CallThreadPool`: the threads synchronous calls run on, away from the event loop.

The engine has two: one for sync tools (``tool_threads``), one for sync actions and sync
durable calls (``action_threads``), so hung tools cannot take the threads actions need.

A plain ``def`` tool or action blocks a thread while it runs. If it hangs, it holds that
thread; on a pool shared with other work, a few hung calls would leave none for the calls
of other keys. This pool is bounded (``max_workers`` threads run calls at once) and lets go
of a thread whose call timed out (a tool's `tool-call.timeout`; actions have none): `run`
writes it off, so it no longer counts against ``max_workers`` and a new thread takes its
place; the written-off thread ends when (if ever) its call returns, and its result is
dropped. At most ``max_abandoned`` threads (4 x ``max_workers`` by default) are written off
at a time; past that a timed-out call keeps its thread (the pool runs with one thread less
until the call returns). Each write-off logs a WARNING.

A call's timeout counts from when it starts on a thread, not while it waits for one:
waiting is bounded because running calls end or are written off within the timeout.
Only when every thread holds a timed-out call that could not be written off (the limit
was reached) does a call that has waited a whole timeout for a thread time out without
having run.

What a call costs the event loop, which runs every key's work: one future, one queue put,
and when the call returns, a share of one cross-thread wake-up (outcomes that finish while
the loop is busy wait in a list, and only the first of them wakes it). Calls with a timeout
share one timer per loop (`flink_agents.runtime.deadlines`), set for when the first of
them could time out.

The pool starts one thread. A call that waits for a thread gets a new one (up to
``max_workers``) only once every running call has run ``spawn_after_s`` (1 ms) or longer,
looked at again every ``spawn_after_s`` while calls wait (a timer on the caller's loop):
calls that hold the GIL (most `def` actions) gain nothing from a second thread, which
could only wait for the GIL while each wake-up costs switches, while calls that block (a
tool waiting on the network, or hung) get more threads within a millisecond or two.

On a thread inside `brief_waits` (the Flink operator thread while it runs
loop callbacks itself, see `flink.loop_thread`), a call whose key (a tool, an action) ran
under ``fast_s`` (0.2 ms) in its recent calls is waited for briefly instead: the thread
blocks up to ``brief_wait_s`` (2 ms), the GIL released, while a pool thread runs the call,
and goes on with its outcome without suspending the run. That keeps the run inside the
Flink callback that started it (no snapshot, no timer poll). The call still runs on a pool
thread, under its timeout: a call that is not done within the brief wait is awaited as any
other, and its key counts as slow (not waited for) until its calls are fast again, so a hung
call holds the thread once, for ``brief_wait_s``. Elsewhere (the loop's own thread) calls
are never waited for: the loop has other runs to go on with, and the hand-over costs less
than the thread switches of a wait (measured in docs/benchmarks.md).

With ``batch_scheduling`` (Flink subtasks), the pool's threads run under Linux's
``SCHED_BATCH`` policy (`use_batch_scheduling`): a woken thread does not preempt the thread
that woke it. That one (the operator thread, the loop) holds the GIL, so a thread that
preempted it could only wait for the GIL and switch back: two context switches per hand-over
for nothing. The threads keep their share of the CPU; they run when a CPU is free or the
running thread's slice ends, so a call's outcome may come back a little later: more
throughput, a little more latency (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Hashable
from enum import Enum
from typing import Any

from flink_agents.runtime.deadlines import Deadlines
from flink_agents.runtime.errors import ToolCallTimeoutError

__all__ = ["CallThreadPool", "brief_waits", "use_batch_scheduling"]

logger = logging.getLogger(__name__)


class _BriefWaits(threading.local):
    """While entered on a thread, calls made there wait briefly for fast tools."""

    active = False

    def __enter__(self) -> None:
        self.active = True

    def __exit__(self, *exc: object) -> None:
        self.active = False


brief_waits = _BriefWaits()
"""``with brief_waits:`` on a thread that runs loop callbacks outside the loop's own
thread (module doc)."""


def use_batch_scheduling() -> bool:
    """Put the calling thread under Linux's ``SCHED_BATCH`` policy: woken, it waits for a
    free CPU or the end of the running thread's slice instead of preempting that thread
    (its share of the CPU stays as it was). False where that is not available."""
    set_policy = getattr(os, "sched_setscheduler", None)
    batch = getattr(os, "SCHED_BATCH", None)
    if set_policy is None or batch is None:
        return False
    try:
        set_policy(0, batch, os.sched_param(0))  # 0: this thread
    except OSError:  # not allowed here (a container's seccomp profile, say)
        return False
    return True


class _State(Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    DROPPED = "dropped"
    """Taken off the queue before it ran (timed out, cancelled, or the pool closed)."""


# The states as plain module names: an `Enum` member read through its class costs a
# lookup through the enum's type on every use, and the hot paths read them per call.
_QUEUED, _RUNNING, _DONE, _DROPPED = _State.QUEUED, _State.RUNNING, _State.DONE, _State.DROPPED


class _Call:
    """One submitted call; ``state``, ``started_at``, ``abandoned``, ``kept``, ``waiter``,
    ``result`` and ``error`` change under the pool's lock. ``key`` is what its thread
    times it under (None: not timed; only calls made inside `brief_waits` are)."""

    __slots__ = (
        "abandoned",
        "error",
        "fn",
        "future",
        "kept",
        "key",
        "loop",
        "result",
        "started_at",
        "state",
        "timeout",
        "waiter",
    )

    def __init__(
        self,
        fn: Callable[[], Any],
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        timeout: float | None,
        key: Hashable | None,
    ) -> None:
        self.fn = fn
        self.loop = loop
        self.future = future
        self.timeout = timeout
        self.key = key
        self.state = _QUEUED
        self.started_at = 0.0
        self.abandoned = False
        self.kept = False
        self.waiter: threading.Lock | None = None
        """Held while the loop's thread waits for this call (the brief wait); the thread
        that ran the call leaves its outcome in ``result`` / ``error`` and releases it."""
        self.result: Any = None
        self.error: BaseException | None = None


_Outcome = tuple[_Call, Any, "BaseException | None"]


def _settle(outcomes: list[_Outcome]) -> None:
    """On the loop: hand finished calls' outcomes to their callers."""
    for call, result, error in outcomes:
        future = call.future
        if future.done():  # timed out, or the caller was cancelled: nobody waits for it
            continue
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)


class CallThreadPool:
    """Threads for synchronous calls (tools, actions); see the module doc.

    >>> pool = CallThreadPool(4)
    >>> result = await pool.run(functools.partial(lookup, order_id="A1"), 300.0, "lookup")
    """

    def __init__(
        self,
        max_workers: int,
        *,
        max_abandoned: int | None = None,
        thread_name_prefix: str = "agent-call",
        brief_wait_s: float = 0.002,
        fast_s: float = 0.0002,
        batch_scheduling: bool = False,
        spawn_after_s: float = 0.001,
    ) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        """Calls that run at once (threads that count against the pool)."""
        self.max_abandoned = 4 * max_workers if max_abandoned is None else max(0, max_abandoned)
        """Threads written off (still running a timed-out call) at most at a time."""
        self.brief_wait_s = brief_wait_s
        """How long the loop's thread waits for a fast call at most (0: never)."""
        self.fast_s = fast_s
        """A key whose recent calls ran shorter than this is waited for briefly."""
        self.batch_scheduling = batch_scheduling
        """Whether the threads run under ``SCHED_BATCH`` (module doc)."""
        self.spawn_after_s = spawn_after_s
        """A call waiting for a thread gets a new one only once every running call has run
        this long (module doc); 0: at once, as in a plain pool."""
        self._prefix = thread_name_prefix
        self._names = itertools.count()
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._workers = 0
        """Threads that count against ``max_workers``."""
        self._idle = 0
        """Of those, the ones waiting for a call (or about to)."""
        self._queued = 0
        """Calls on the queue that no thread has taken yet."""
        self._abandoned = 0
        """Threads written off whose call has not returned yet."""
        self._kept = 0
        """Threads that count against ``max_workers`` whose call timed out but could not be
        written off (the limit was reached); they are free again when it returns."""
        self._finished: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
        """Per loop, outcomes of finished calls its callers have not been handed yet. A
        loop has an entry exactly while a wake-up to hand them over is on its way."""
        self._deadlines: Deadlines[_Call] = Deadlines(self._check)
        """The calls with a timeout, per loop."""
        self._running: set[_Call] = set()
        """Calls running on threads that count against ``max_workers``."""
        self._relief: dict[asyncio.AbstractEventLoop, asyncio.TimerHandle] = {}
        """Per loop, the timer that looks again whether waiting calls need a new thread."""
        self._took: dict[Hashable, float] = {}
        """Per key (a tool, an action), how long its calls made inside `brief_waits` ran
        lately, in seconds: a slow call counts at once, a fast one halves the distance."""
        self._closed = False

    # ------------------------------------------------------------------ state

    @property
    def abandoned(self) -> int:
        """Threads written off whose call has not returned yet."""
        return self._abandoned

    @property
    def workers(self) -> int:
        """Threads that count against ``max_workers`` (idle ones included)."""
        return self._workers

    def __repr__(self) -> str:
        return (
            f"CallThreadPool(max_workers={self.max_workers}, workers={self._workers}, "
            f"abandoned={self._abandoned})"
        )

    # ------------------------------------------------------------------ calls

    async def run(
        self, fn: Callable[[], Any], timeout: float | None, key: Hashable | None = None
    ) -> Any:
        """``fn()`` on a pool thread; its result or exception. ``key`` names what is
        called (a tool, an action), so calls of a fast one are waited for briefly (module
        doc).

        Raises `ToolCallTimeoutError` when it runs longer than ``timeout`` seconds (its
        thread is then written off, see the module doc), or when the pool is at its
        written-off limit and no thread became free within ``timeout``. ``None``: no
        timeout.
        """
        loop = asyncio.get_running_loop()
        # Only where calls may be waited for briefly is it worth timing them (the key on
        # the call is what its thread times them by).
        timed = key is not None and brief_waits.active
        call = _Call(fn, loop, loop.create_future(), timeout, key if timed else None)
        brief = (
            timed
            and self.brief_wait_s > 0
            and self._took.get(key, 0.0) < self.fast_s
            and (timeout is None or timeout > self.brief_wait_s)
        )
        if not brief:
            self._submit(call)
        elif self._brief_wait(call):
            if call.error is not None:
                raise call.error
            return call.result
        watch = None if timeout is None else self._deadlines.add(loop, call, timeout)
        try:
            return await call.future
        finally:
            if watch is not None:
                Deadlines.drop(watch, call)
            if call.state is _QUEUED:  # cancelled: a thread that takes it skips it
                with self._lock:
                    if call.state is _QUEUED:
                        call.state = _DROPPED

    def _brief_wait(self, call: _Call) -> bool:
        """Submit ``call`` and block this thread up to ``brief_wait_s`` for it: True when
        it finished (its outcome is on it), False when it goes on as usual (its tool now
        counts as slow)."""
        waiter = call.waiter = threading.Lock()
        waiter.acquire()
        self._submit(call)
        waiter.acquire(timeout=self.brief_wait_s)
        with self._lock:
            call.waiter = None  # from now on its outcome goes to its future
            if call.state is _DONE:
                return True
            took = self._took
            key = call.key
            took[key] = max(took.get(key, 0.0), self.brief_wait_s)
        return False

    def _check(self, call: _Call, now: float) -> float | None:
        """On the loop, when ``call`` may have timed out: fail it and return None, or
        return in how many seconds to look again (None too when it is done)."""
        future = call.future
        if future.done():
            return None
        timeout = call.timeout
        assert timeout is not None  # only calls with a timeout have a timer
        again: float | None = None
        error: ToolCallTimeoutError | None = None
        with self._lock:
            state = call.state
            if state is _QUEUED:
                if self._kept >= self.max_workers:
                    # Every thread holds a timed-out call it could not be written off
                    # from: none may become free.
                    call.state = _DROPPED
                    error = ToolCallTimeoutError(timeout, started=False)
                else:
                    again = timeout
            elif state is _RUNNING:
                left = call.started_at + timeout - time.monotonic()
                if left > 0:
                    again = left
                else:
                    self._write_off(call, timeout)
                    error = ToolCallTimeoutError(timeout)
            # else done: its result is on its way to the loop
        if error is not None:
            future.set_exception(error)
        return again

    def _write_off(self, call: _Call, timeout: float) -> None:
        """Let go of the thread running ``call`` (under the lock), if the limit allows."""
        if self._abandoned >= self.max_abandoned:
            logger.warning(
                "a sync call has run %s s and timed out; its thread is not written off "
                "(%d written-off threads already, the most allowed): the pool has one "
                "thread less until the call returns",
                timeout,
                self._abandoned,
            )
            call.kept = True
            self._kept += 1
            return
        call.abandoned = True
        self._abandoned += 1
        self._workers -= 1
        self._running.discard(call)
        logger.warning(
            "a sync call has run %s s and timed out; its thread is written off and "
            "replaced (%d written-off threads still running)",
            timeout,
            self._abandoned,
        )
        if self._queued > self._idle:
            self._spawn()

    def _submit(self, call: _Call) -> None:
        relieve = False
        with self._lock:
            if self._closed:
                raise RuntimeError("the thread pool is closed")
            self._queued += 1
            if self._queued > self._idle and self._workers < self.max_workers:
                if self._workers == 0 or self.spawn_after_s <= 0 or self._all_slow():
                    self._spawn()
                else:
                    relieve = True
            self._queue.put(call)  # under the lock, so `close` sees every queued call
        if relieve and call.loop not in self._relief:
            relief = self._relief
            for closed in [loop for loop in list(relief) if loop.is_closed()]:
                relief.pop(closed, None)  # their timers never fire: let go of them here
            loop = call.loop
            relief[loop] = loop.call_later(self.spawn_after_s, self._relieve, loop)

    def _all_slow(self) -> bool:
        """Under the lock: whether every running call has run ``spawn_after_s`` or longer
        (blocked, or hung: a new thread lets waiting calls go on)."""
        running = self._running
        if not running:
            return False  # the threads are about to take the waiting calls
        started = time.monotonic() - self.spawn_after_s
        return all(call.started_at <= started for call in running)

    def _relieve(self, loop: asyncio.AbstractEventLoop) -> None:
        """On ``loop``, ``spawn_after_s`` after calls waited for a thread: a new thread if
        they still wait and every running call is slow; look again while they wait."""
        with self._lock:
            waiting = self._queued > self._idle and self._workers < self.max_workers
            if waiting and self._all_slow():
                self._spawn()
                waiting = self._queued > self._idle and self._workers < self.max_workers
        if waiting and not self._closed:
            self._relief[loop] = loop.call_later(self.spawn_after_s, self._relieve, loop)
        else:
            self._relief.pop(loop, None)

    def _spawn(self) -> None:
        """Start a thread (under the lock) if the pool has room for one."""
        if self._workers >= self.max_workers:
            return
        self._workers += 1
        self._idle += 1
        name = f"{self._prefix}-{next(self._names)}"
        threading.Thread(target=self._work, name=name, daemon=True).start()

    def _work(self) -> None:
        if self.batch_scheduling:
            use_batch_scheduling()
        take = self._queue.get
        lock = self._lock
        finished = self._finished
        took = self._took
        while True:
            call = take()
            with lock:
                if call is None:  # closing
                    self._idle -= 1
                    self._workers -= 1
                    return
                self._queued -= 1
                if call.state is not _QUEUED:
                    continue  # dropped while it waited; this thread stays idle
                self._idle -= 1
                call.started_at = time.monotonic()
                call.state = _RUNNING
                self._running.add(call)
            result: Any = None
            error: BaseException | None = None
            try:
                result = call.fn()
            except BaseException as exc:  # handed to the caller, whatever it is
                error = exc
            wake: asyncio.AbstractEventLoop | None = None
            with lock:
                call.state = _DONE
                self._running.discard(call)
                key = call.key
                if key is not None:
                    ran = time.monotonic() - call.started_at
                    before = took.get(key, 0.0)
                    took[key] = ran if ran >= before else (before + ran) / 2
                if call.kept:
                    self._kept -= 1
                abandoned = call.abandoned
                if abandoned:  # replaced already: this thread ends, its result is dropped
                    self._abandoned -= 1
                    leave = True
                else:
                    if self._closed:
                        self._workers -= 1
                        leave = True
                    else:  # counted idle now, so `close` sends it its stop signal
                        self._idle += 1
                        leave = False
                    waiter = call.waiter
                    if waiter is not None:  # the loop's thread waits for it right now
                        call.result, call.error = result, error
                        waiter.release()
                    else:
                        # Outcomes wait in one list per loop; only the first of a batch
                        # wakes the loop (one cross-thread wake-up, not one per call).
                        outcomes = finished.get(call.loop)
                        if outcomes is None:
                            finished[call.loop] = [(call, result, error)]
                            wake = call.loop
                        else:
                            outcomes.append((call, result, error))
            if wake is not None:
                self._wake(wake)
            if leave:
                return

    def _wake(self, loop: asyncio.AbstractEventLoop) -> None:
        """Have ``loop`` take its finished calls' outcomes."""
        try:
            loop.call_soon_threadsafe(self._hand_over, loop)
        except RuntimeError:  # the loop is closed: nobody waits for these
            with self._lock:
                self._finished.pop(loop, None)

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            outcomes = self._finished.pop(loop, None)
        if outcomes:
            _settle(outcomes)

    def close(self) -> None:
        """Stop taking calls; idle threads end, busy ones end after their call. Calls
        still waiting for a thread raise `RuntimeError`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            idle = self._idle
            dropped: list[_Call] = []
            while True:
                try:
                    call = self._queue.get_nowait()
                except queue.Empty:
                    break
                if call is not None:
                    self._queued -= 1
                    if call.state is _QUEUED:
                        call.state = _DROPPED
                        dropped.append(call)
        for _ in range(idle):
            self._queue.put(None)
        for call in dropped:
            closed = RuntimeError("the thread pool was closed before the call ran")
            outcomes: list[_Outcome] = [(call, None, closed)]
            with contextlib.suppress(RuntimeError):  # the loop is closed
                call.loop.call_soon_threadsafe(_settle, outcomes)
