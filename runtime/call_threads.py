"""`CallThreadPool`: the threads synchronous calls run on, away from the event loop.

The engine has two: one for sync tools (``tool_threads``), one for sync actions and sync
durable calls (``action_threads``), so hung tools cannot take the threads actions need.

A plain ``def`` tool or action blocks a thread while it runs. If it hangs, it holds that
thread; on a pool shared with other work, a few hung calls would leave none for the calls
of other keys. This pool runs ``max_workers`` calls at once on threads of its own, and
goes beyond that in two ways, up to ``max_abandoned`` threads more at a time (4 x
``max_workers`` by default; the tool threads: ``tool-call.max-abandoned-threads``):

- Written off: a call that timed out (a tool's `tool-call.timeout-s`; actions have none)
  lets go of its thread, which no longer counts against ``max_workers``: a new thread
  takes its place. The written-off thread ends when (if ever) its call returns, and its
  result is dropped. Each write-off logs a WARNING.
- Extra threads (with ``extra_after_s``, the tool threads: 10 ms): while calls wait and
  every thread's call has run ``extra_after_s`` or longer (blocked, perhaps hung), a thread
  starts for each waiting call; it runs that one call and ends. So no call waits behind
  hung ones for their timeout: a fast tool of another key runs some 10 ms after it is
  called while a hundred calls hang.

At the limit, a timed-out call keeps its thread (the pool runs with one thread less until
it returns, or until a thread beyond the limit returns and it can be written off). When
every thread holds such a call, no thread may become free: the calls waiting for one, and
new calls, fail at once with `ToolThreadsExhaustedError`, not run.

A call's timeout counts from when it starts on a thread, not while it waits for one:
waiting is bounded because running calls end, get extra threads beside them, are written
off, or keep their thread within their timeout (then the waiting calls are refused). A call
that never ran is never reported as timed out.

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
from flink_agents.runtime.errors import ToolCallTimeoutError, ToolThreadsExhaustedError

__all__ = ["TOOL_EXTRA_AFTER_S", "CallThreadPool", "brief_waits", "use_batch_scheduling"]

logger = logging.getLogger(__name__)

TOOL_EXTRA_AFTER_S = 0.01
"""Seconds every tool thread's call has blocked it, while other calls wait, before extra
threads start for those (the engine's tool threads; module doc)."""


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
        extra_after_s: float | None = None,
    ) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        """Calls that run at once (threads that count against the pool)."""
        self.max_abandoned = 4 * max_workers if max_abandoned is None else max(0, max_abandoned)
        """Threads beyond ``max_workers`` at most at a time: extra ones (``extra_after_s``)
        and written-off ones, each still running its call."""
        self.brief_wait_s = brief_wait_s
        """How long the loop's thread waits for a fast call at most (0: never)."""
        self.fast_s = fast_s
        """A key whose recent calls ran shorter than this is waited for briefly."""
        self.batch_scheduling = batch_scheduling
        """Whether the threads run under ``SCHED_BATCH`` (module doc)."""
        self.spawn_after_s = spawn_after_s
        """A call waiting for a thread gets a new one only once every running call has run
        this long (module doc); 0: at once, as in a plain pool."""
        self.extra_after_s = extra_after_s
        """When every thread's call has run this long and calls wait, extra threads start
        for them, beyond ``max_workers`` (module doc). None: never."""
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
        """Threads beyond ``max_workers`` (extra or written off) whose call has not returned."""
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
        """Threads beyond ``max_workers`` (extra or written off) whose call has not returned."""
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
        thread is then written off, see the module doc; ``None``: no timeout), and
        `ToolThreadsExhaustedError`, without running it, when no thread can take it: each
        holds a timed-out call and the pool is at its limit of threads let go of.
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
        refused: list[_Call] = []
        exhausted: ToolThreadsExhaustedError | None = None
        with self._lock:
            state = call.state
            if state is _QUEUED:
                # Its timeout counts from its start. Its wait is bounded: each running
                # call ends, is let go of or is kept within its own timeout, and once
                # every thread is kept the waiting calls are refused (`_refuse_waiting`).
                again = timeout
            elif state is _RUNNING:
                left = call.started_at + timeout - time.monotonic()
                if left > 0:
                    again = left
                else:
                    written_off = self._write_off(call, timeout)
                    error = ToolCallTimeoutError(timeout, written_off=written_off)
                    if self._kept >= self.max_workers:
                        refused = self._refuse_waiting()
                        exhausted = ToolThreadsExhaustedError(self._kept, self._abandoned)
            # else done: its result is on its way to the loop
        if error is not None:
            future.set_exception(error)
        if exhausted is not None:
            self._fail(refused, exhausted)
        return again

    def _refuse_waiting(self) -> list[_Call]:
        """Under the lock, when every thread holds a timed-out call it cannot be let go of
        from: take the waiting calls off the queue (no thread may become free for them);
        their callers are to be failed (`_fail`)."""
        refused: list[_Call] = []
        while True:
            try:
                call = self._queue.get_nowait()
            except queue.Empty:
                break
            if call is None:  # a stop signal of `close`: it goes back for its thread
                self._queue.put(None)
                break
            self._queued -= 1
            if call.state is _QUEUED:
                call.state = _DROPPED
                refused.append(call)
        return refused

    @staticmethod
    def _fail(calls: list[_Call], error: BaseException) -> None:
        """Fail the callers of ``calls`` (taken off the queue) with ``error``, each on its
        loop."""
        for call in calls:
            outcomes: list[_Outcome] = [(call, None, error)]
            with contextlib.suppress(RuntimeError):  # the loop is closed
                call.loop.call_soon_threadsafe(_settle, outcomes)

    def _write_off(self, call: _Call, timeout: float) -> bool:
        """Under the lock, ``call`` timed out: let go of its thread if it was not already
        (an extra one) and the limit allows; whether it is let go of (else it keeps it)."""
        if call.abandoned:
            logger.warning(
                "a sync call has run %s s and timed out; its thread, one started beyond "
                "the pool's size while others blocked, is written off (%d threads let go "
                "of still running)",
                timeout,
                self._abandoned,
            )
            return True
        if self._abandoned >= self.max_abandoned:
            logger.warning(
                "a sync call has run %s s and timed out; its thread is not written off "
                "(%d threads let go of already, the most allowed): the pool has one "
                "thread less until the call returns",
                timeout,
                self._abandoned,
            )
            call.kept = True
            self._kept += 1
            return False
        self._let_go(call)
        logger.warning(
            "a sync call has run %s s and timed out; its thread is written off and "
            "replaced (%d threads let go of still running)",
            timeout,
            self._abandoned,
        )
        return True

    def _let_go(self, call: _Call) -> None:
        """Under the lock: the thread running ``call`` no longer counts against
        ``max_workers`` (it ends when the call returns); a new one takes its place if
        calls wait."""
        call.abandoned = True
        self._abandoned += 1
        self._workers -= 1
        self._running.discard(call)
        if self._queued > self._idle:
            self._spawn()

    def _write_off_kept(self) -> None:
        """Under the lock, when a thread let go of has returned: let go of one thread
        that holds a timed-out call (kept at the limit), so a new one takes its place."""
        for call in self._running:
            if call.kept:
                call.kept = False
                self._kept -= 1
                self._let_go(call)
                logger.warning(
                    "a timed-out sync call's thread, kept at the limit, is written off now "
                    "(%d threads let go of still running)",
                    self._abandoned,
                )
                return

    def _spawn_extras(self) -> None:
        """Under the lock, while calls wait and every thread's call has blocked it
        ``extra_after_s`` or longer: a thread beyond ``max_workers`` for each waiting
        call, as many as the limit of threads let go of allows; each runs one call and
        ends, so no call waits behind blocked (perhaps hung) ones."""
        count = min(self._queued - self._idle, self.max_abandoned - self._abandoned)
        for _ in range(count):
            self._abandoned += 1
            self._idle += 1
            name = f"{self._prefix}-{next(self._names)}"
            threading.Thread(target=self._work, args=(True,), name=name, daemon=True).start()
        if count > 0:
            logger.debug(
                "every sync call thread has been blocked %s s or longer while calls wait: "
                "%d more started (%d beyond the %d, at most %d)",
                self.extra_after_s,
                count,
                self._abandoned,
                self.max_workers,
                self.max_abandoned,
            )

    def _next_look(self) -> float | None:
        """Under the lock: in how many seconds to look again whether waiting calls need a
        new thread (`_relieve`), or None when none wait or looking cannot help."""
        if self._queued <= self._idle:
            return None
        if self._workers < self.max_workers:
            return self.spawn_after_s
        after = self.extra_after_s
        if after is None:
            return None
        if self._abandoned >= self.max_abandoned or not self._running:
            return max(after, self.spawn_after_s)  # a thread let go of may return
        youngest = max(c.started_at for c in self._running)
        return max(self.spawn_after_s, youngest + after - time.monotonic())

    def _submit(self, call: _Call) -> None:
        look: float | None = None
        with self._lock:
            if self._closed:
                raise RuntimeError("the thread pool is closed")
            if self._kept >= self.max_workers:
                raise ToolThreadsExhaustedError(self._kept, self._abandoned)
            self._queued += 1
            if self._queued > self._idle:
                if self._workers < self.max_workers and (
                    self._workers == 0
                    or self.spawn_after_s <= 0
                    or self._all_slow(self.spawn_after_s)
                ):
                    self._spawn()
                elif call.loop not in self._relief:
                    look = self._next_look()
            self._queue.put(call)  # under the lock, so `close` sees every queued call
        if look is not None and call.loop not in self._relief:
            relief = self._relief
            for closed in [loop for loop in list(relief) if loop.is_closed()]:
                relief.pop(closed, None)  # their timers never fire: let go of them here
            loop = call.loop
            relief[loop] = loop.call_later(look, self._relieve, loop)

    def _all_slow(self, after: float) -> bool:
        """Under the lock: whether every running call has run ``after`` seconds or longer
        (blocked, or hung: a new thread lets waiting calls go on)."""
        running = self._running
        if not running:
            return False  # the threads are about to take the waiting calls
        started = time.monotonic() - after
        return all(call.started_at <= started for call in running)

    def _relieve(self, loop: asyncio.AbstractEventLoop) -> None:
        """On ``loop``, ``spawn_after_s`` after calls waited for a thread: a new thread if
        they still wait and every running call is slow; look again while they wait."""
        with self._lock:
            if self._queued > self._idle:
                after = self.extra_after_s
                if self._workers < self.max_workers:
                    if self._all_slow(self.spawn_after_s):
                        self._spawn()
                elif after is not None and self._all_slow(after):
                    self._spawn_extras()
            look = self._next_look()
        if look is not None and not self._closed:
            self._relief[loop] = loop.call_later(look, self._relieve, loop)
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

    def _work(self, extra: bool = False) -> None:
        """A thread's loop: take calls and run them. An ``extra`` thread (beyond
        ``max_workers``, `_spawn_extras`) runs one call and ends."""
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
                    if extra:
                        self._abandoned -= 1
                    else:
                        self._workers -= 1
                    return
                self._queued -= 1
                if call.state is not _QUEUED:
                    continue  # dropped while it waited; this thread stays idle
                self._idle -= 1
                call.started_at = time.monotonic()
                call.state = _RUNNING
                if extra:
                    call.abandoned = True  # this thread ends with it
                else:
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
                if call.abandoned:  # replaced already: this thread ends
                    self._abandoned -= 1
                    leave = True
                    if self._kept:  # room to let go of a thread holding a timed-out call
                        self._write_off_kept()
                elif self._closed:
                    self._workers -= 1
                    leave = True
                else:  # counted idle now, so `close` sends it its stop signal
                    self._idle += 1
                    leave = False
                # The outcome of a call on an extra thread goes to its caller too; a
                # written-off one's is dropped where it is handed over (its caller has
                # its timeout already).
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
