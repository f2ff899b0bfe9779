"""`CallThreadPool`: the threads synchronous calls run on, away from the event loop.

The engine has two: one for sync tools (``tool_threads``), one for sync actions and sync
durable calls (``action_threads``), so hung tools cannot take the threads actions need.

A plain ``def`` tool or action blocks a thread while it runs, and holds it if it hangs. The
pool runs up to ``max_workers`` calls at once, starting a thread when a call waits and none
is idle. Two ways past that, up to ``max_abandoned`` threads more at a time (4 x
``max_workers`` by default; the tool threads: ``tool-call.max-abandoned-threads``), keep
hung calls from stalling the calls of other keys:

- Written off: a call that timed out (a tool's ``tool-call.timeout-s``; actions have none)
  lets go of its thread, which no longer counts against ``max_workers``: a new thread
  takes its place. The written-off thread ends when (if ever) its call returns; its result
  is dropped. Each write-off logs a WARNING.
- Extra threads (``extra_after_s``; the tool threads: 10 ms): while calls wait and every
  thread's call has run ``extra_after_s`` or longer (blocked, perhaps hung), a thread
  starts for each waiting call, runs that one call and ends. Looked at every
  ``extra_after_s`` while calls wait (a timer on the caller's loop).

At the limit, a timed-out call keeps its thread (one thread less until it returns, or until
a thread beyond the limit returns and it can be written off). When every thread holds such
a call, none may become free: waiting and new calls fail at once with
`ToolThreadsExhaustedError`, not run.

A call's timeout counts from its start on a thread, not while it waits for one (the wait is
bounded by the rules above); a call that never ran is never reported as timed out. Calls
with a timeout share one timer per loop (`flink_agents.runtime.deadlines`).

Outcomes go back to the loop in batches (`loop_handover`). On the Flink operator thread
(inside `brief_wait.brief_waits`) a call that has been fast is waited for briefly instead
(`brief_wait`); with ``batch_scheduling`` (Flink subtasks) the threads run under
``SCHED_BATCH`` (`batch_scheduling`). Each of those modules cites the measurement that
keeps it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Hashable
from enum import Enum
from typing import Any

from flink_agents.runtime.batch_scheduling import use_batch_scheduling
from flink_agents.runtime.brief_wait import KeySpeeds, brief_waits
from flink_agents.runtime.deadlines import Deadlines
from flink_agents.runtime.errors import ToolCallTimeoutError, ToolThreadsExhaustedError
from flink_agents.runtime.loop_handover import LoopHandOver

__all__ = ["TOOL_EXTRA_AFTER_S", "CallThreadPool"]

logger = logging.getLogger(__name__)

TOOL_EXTRA_AFTER_S = 0.01
"""Seconds every tool thread's call has blocked it, while other calls wait, before extra
threads start for those (the engine's tool threads; module doc)."""


class _State(Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    DROPPED = "dropped"
    """Taken off the queue before it ran (cancelled, refused, or the pool closed)."""


class _Call:
    """One submitted call. ``state``, ``started_at``, ``abandoned``, ``kept``, ``waiter``,
    ``result`` and ``error`` change under the pool's lock. ``key`` is what its run time is
    counted under (None: not counted; only calls made inside `brief_waits` are)."""

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
        timeout: float | None,
        key: Hashable | None,
    ) -> None:
        self.fn = fn
        self.loop = loop
        self.future: asyncio.Future[Any] = loop.create_future()
        self.timeout = timeout
        self.key = key
        self.state = _State.QUEUED
        self.started_at = 0.0
        self.abandoned = False
        """Its thread no longer counts against ``max_workers`` and ends with it."""
        self.kept = False
        """It timed out but keeps its thread (the limit of threads let go of was reached)."""
        self.waiter: threading.Lock | None = None
        """Held while the caller's thread waits for it (a brief wait); the thread that ran
        it leaves its outcome in ``result`` / ``error`` and releases it."""
        self.result: Any = None
        self.error: BaseException | None = None


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
        extra_after_s: float | None = None,
    ) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        """Calls that run at once (threads that count against the pool)."""
        self.max_abandoned = 4 * max_workers if max_abandoned is None else max(0, max_abandoned)
        """Threads beyond ``max_workers`` at most at a time: extra and written-off ones."""
        self.brief_wait_s = brief_wait_s
        """How long a thread inside `brief_waits` waits for a fast call at most (0: never)."""
        self.batch_scheduling = batch_scheduling
        """Whether the threads run under ``SCHED_BATCH`` (`batch_scheduling`)."""
        self.extra_after_s = extra_after_s
        """When every thread's call has run this long and calls wait, extra threads start
        for them (module doc). None: never."""
        self._speeds = KeySpeeds(fast_s)
        self._handover = LoopHandOver()
        self._deadlines: Deadlines[_Call] = Deadlines(self._check)
        self._prefix = thread_name_prefix
        self._names = itertools.count()
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        """Calls for the threads to take; None tells one thread to end (`close`)."""
        self._workers = 0
        """Threads that count against ``max_workers``."""
        self._idle = 0
        """Threads (of any kind) waiting for a call, or about to."""
        self._queued = 0
        """Entries on the queue that no thread has taken yet."""
        self._abandoned = 0
        """Threads beyond ``max_workers`` (extra or written off) whose call has not returned."""
        self._kept = 0
        """Threads holding a timed-out call that could not be written off."""
        self._running: set[_Call] = set()
        """Calls running on threads that count against ``max_workers``."""
        self._looks: dict[asyncio.AbstractEventLoop, asyncio.TimerHandle] = {}
        """Per loop, the timer that looks whether waiting calls need extra threads."""
        self._closed = False

    @property
    def fast_s(self) -> float:
        """A key whose recent calls ran shorter than this may be waited for briefly."""
        return self._speeds.fast_s

    @fast_s.setter
    def fast_s(self, value: float) -> None:
        self._speeds.fast_s = value

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

    # ------------------------------------------------------------------ the caller's side

    async def run(
        self, fn: Callable[[], Any], timeout: float | None, key: Hashable | None = None
    ) -> Any:
        """``fn()`` on a pool thread; its result or exception. ``key`` names what is
        called (a tool, an action), so a fast one may be waited for briefly (`brief_wait`).

        Raises `ToolCallTimeoutError` when it runs longer than ``timeout`` seconds
        (``None``: never), and `ToolThreadsExhaustedError`, without running it, when no
        thread can take it (module doc).
        """
        loop = asyncio.get_running_loop()
        timed = key is not None and brief_waits.active
        call = _Call(fn, loop, timeout, key if timed else None)
        if (
            timed
            and self.brief_wait_s > 0
            and self._speeds.is_fast(key)
            and (timeout is None or timeout > self.brief_wait_s)
        ):
            if self._brief_wait(call):
                if call.error is not None:
                    raise call.error
                return call.result
        else:
            self._submit(call)
        watch = None if timeout is None else self._deadlines.add(loop, call, timeout)
        try:
            return await call.future
        finally:
            if watch is not None:
                Deadlines.drop(watch, call)
            if call.state is _State.QUEUED:  # cancelled: a thread that takes it skips it
                with self._lock:
                    if call.state is _State.QUEUED:
                        call.state = _State.DROPPED

    def _brief_wait(self, call: _Call) -> bool:
        """Submit ``call`` and block this thread up to ``brief_wait_s`` for it: True when
        it finished (its outcome is on it), False when its outcome will go to its future
        (its key now counts as slow)."""
        waiter = call.waiter = threading.Lock()
        waiter.acquire()
        self._submit(call)
        waiter.acquire(timeout=self.brief_wait_s)
        with self._lock:
            call.waiter = None
            if call.state is _State.DONE:
                return True
            self._speeds.ran(call.key, self.brief_wait_s)
        return False

    def _submit(self, call: _Call) -> None:
        look = False
        with self._lock:
            if self._closed:
                raise RuntimeError("the thread pool is closed")
            if self._kept >= self.max_workers:
                raise ToolThreadsExhaustedError(self._kept, self._abandoned)
            self._queued += 1
            if self._queued > self._idle:
                if self._workers < self.max_workers:
                    self._spawn()
                else:
                    look = self.extra_after_s is not None and call.loop not in self._looks
            self._queue.put(call)  # under the lock, so `close` sees every queued call
        if look:
            self._extras_later(call.loop)

    # ------------------------------------------------------------------ the threads

    def _spawn(self, extra: bool = False) -> None:
        """Under the lock: start a thread, counting against ``max_workers`` or, ``extra``,
        beyond it (it runs one call and ends)."""
        if extra:
            self._abandoned += 1
        else:
            self._workers += 1
        self._idle += 1
        name = f"{self._prefix}-{next(self._names)}"
        threading.Thread(target=self._work, args=(extra,), name=name, daemon=True).start()

    def _work(self, extra: bool) -> None:
        """A thread's loop: take calls and run them (an ``extra`` thread: one call)."""
        if self.batch_scheduling:
            use_batch_scheduling()
        while True:
            call = self._queue.get()
            with self._lock:
                if call is None:  # `close`
                    self._idle -= 1
                    if extra:
                        self._abandoned -= 1
                    else:
                        self._workers -= 1
                    return
                self._queued -= 1
                if call.state is not _State.QUEUED:
                    continue  # dropped while it waited; this thread stays idle
                self._idle -= 1
                call.state = _State.RUNNING
                call.started_at = time.monotonic()
                if extra:
                    call.abandoned = True
                else:
                    self._running.add(call)
            result: Any = None
            error: BaseException | None = None
            try:
                result = call.fn()
            except BaseException as exc:  # handed to the caller, whatever it is
                error = exc
            if self._finish(call, result, error):
                return

    def _finish(self, call: _Call, result: Any, error: BaseException | None) -> bool:
        """Hand ``call``'s outcome to its caller; whether this thread ends now."""
        with self._lock:
            call.state = _State.DONE
            self._running.discard(call)
            if call.key is not None:
                self._speeds.ran(call.key, time.monotonic() - call.started_at)
            if call.kept:
                self._kept -= 1
            if call.abandoned:  # replaced already: this thread ends
                self._abandoned -= 1
                self._write_off_kept()
                ends = True
            elif self._closed:
                self._workers -= 1
                ends = True
            else:
                self._idle += 1  # counted idle now, so `close` sends it its stop signal
                ends = False
            waiter = call.waiter
            if waiter is not None:  # its caller's thread waits for it right now
                call.result, call.error = result, error
                waiter.release()
        if waiter is None:
            self._handover.put(call.loop, call.future, result, error)
        return ends

    # ------------------------------------------------------------------ blocked and hung calls

    def _extras_later(self, loop: asyncio.AbstractEventLoop) -> None:
        """Look in ``extra_after_s`` whether waiting calls need extra threads (`_start_extras`)."""
        looks = self._looks
        for closed in [other for other in list(looks) if other.is_closed()]:
            looks.pop(closed, None)  # their timers never fire: let go of them here
        assert self.extra_after_s is not None
        looks[loop] = loop.call_later(self.extra_after_s, self._start_extras, loop)

    def _start_extras(self, loop: asyncio.AbstractEventLoop) -> None:
        """On ``loop``: while calls wait and every running call has run ``extra_after_s``
        or longer, an extra thread for each waiting one (as many as ``max_abandoned``
        allows); look again while calls wait."""
        after = self.extra_after_s
        assert after is not None
        with self._lock:
            waiting = self._queued - self._idle
            if waiting > 0 and self._running:
                started = time.monotonic() - after
                if all(call.started_at <= started for call in self._running):
                    for _ in range(min(waiting, self.max_abandoned - self._abandoned)):
                        self._spawn(extra=True)
            again = self._queued > self._idle and not self._closed
        if again:
            self._extras_later(loop)
        else:
            self._looks.pop(loop, None)

    def _check(self, call: _Call, now: float) -> float | None:
        """On the loop, when ``call`` may have timed out: fail it and return None, or
        return in how many seconds to look again (None too when it is done)."""
        future = call.future
        if future.done():
            return None
        timeout = call.timeout
        assert timeout is not None  # only calls with a timeout are watched
        refused: list[_Call] = []
        with self._lock:
            if call.state is _State.QUEUED:
                return timeout  # its timeout counts from its start
            if call.state is not _State.RUNNING:
                return None  # done: its outcome is on its way
            left = call.started_at + timeout - time.monotonic()
            if left > 0:
                return left
            written_off = self._write_off(call, timeout)
            if self._kept >= self.max_workers:  # no thread may become free
                refused = self._drain()
            kept, abandoned = self._kept, self._abandoned
        future.set_exception(ToolCallTimeoutError(timeout, written_off=written_off))
        for waiting in refused:
            exhausted = ToolThreadsExhaustedError(kept, abandoned)
            self._handover.put(waiting.loop, waiting.future, None, exhausted)
        return None

    def _write_off(self, call: _Call, timeout: float) -> bool:
        """Under the lock, ``call`` timed out: let go of its thread if the limit allows (an
        extra thread is let go of already); whether it is (else it keeps it)."""
        if call.abandoned:
            outcome = "its thread, one started beyond the pool's size, is written off"
        elif self._abandoned >= self.max_abandoned:
            call.kept = True
            self._kept += 1
            logger.warning(
                "a sync call has run %s s and timed out; its thread is not written off "
                "(%d threads let go of already, the most allowed): the pool has one "
                "thread less until the call returns",
                timeout,
                self._abandoned,
            )
            return False
        else:
            self._let_go(call)
            outcome = "its thread is written off and replaced"
        logger.warning(
            "a sync call has run %s s and timed out; %s (%d threads let go of still running)",
            timeout,
            outcome,
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
        """Under the lock, a thread let go of has returned: write off one thread that holds
        a timed-out call (kept at the limit), if any."""
        if not self._kept:
            return
        call = next((call for call in self._running if call.kept), None)
        if call is None:
            return
        call.kept = False
        self._kept -= 1
        self._let_go(call)
        logger.warning(
            "a timed-out sync call's thread, kept at the limit, is written off now "
            "(%d threads let go of still running)",
            self._abandoned,
        )

    def _drain(self) -> list[_Call]:
        """Under the lock: take the waiting calls off the queue; the ones not dropped yet
        (now dropped) are returned, for their callers to be failed."""
        drained: list[_Call] = []
        while True:
            try:
                call = self._queue.get_nowait()
            except queue.Empty:
                return drained
            if call is None:  # a stop signal of `close`: it goes back for its thread
                self._queue.put(None)
                return drained
            self._queued -= 1
            if call.state is _State.QUEUED:
                call.state = _State.DROPPED
                drained.append(call)

    def close(self) -> None:
        """Stop taking calls; idle threads end, busy ones end after their call. Calls
        still waiting for a thread raise `RuntimeError`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            dropped = self._drain()
            for _ in range(self._idle):
                self._queue.put(None)
        for call in dropped:
            closed = RuntimeError("the thread pool was closed before the call ran")
            self._handover.put(call.loop, call.future, None, closed)
