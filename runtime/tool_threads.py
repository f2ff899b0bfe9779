"""`ToolThreadPool`: the threads synchronous tools run on, apart from synchronous actions.

A plain ``def`` tool blocks a thread while it runs. If it hangs, it holds that thread;
on a pool shared with other work, a few hung tools would leave none for the tools of
other keys. This pool is bounded (``max_workers`` threads run calls at once) and lets go
of a thread whose call timed out: `run` writes it off, so it no longer counts against
``max_workers`` and a new thread takes its place; the written-off thread ends when (if
ever) its call returns, and its result is dropped. At most ``max_abandoned`` threads
(4 x ``max_workers`` by default) are written off at a time; past that a timed-out call
keeps its thread (the pool runs with one thread less until the call returns). Each
write-off logs a WARNING.

A call's timeout counts from when it starts on a thread, not while it waits for one:
waiting is bounded because running calls end or are written off within the timeout.
Only when every thread holds a timed-out call that could not be written off (the limit
was reached) does a call that has waited a whole timeout for a thread time out without
having run.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from enum import Enum
from typing import Any

from flink_agents.runtime.errors import ToolCallTimeoutError

__all__ = ["ToolThreadPool"]

logger = logging.getLogger(__name__)


class _State(Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    DROPPED = "dropped"
    """Taken off the queue before it ran (timed out, cancelled, or the pool closed)."""


class _Call:
    """One submitted call; its fields other than ``fn`` and ``future`` change under the
    pool's lock."""

    __slots__ = ("abandoned", "fn", "future", "kept", "loop", "started_at", "state")

    def __init__(
        self, fn: Callable[[], Any], loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any]
    ) -> None:
        self.fn = fn
        self.loop = loop
        self.future = future
        self.state = _State.QUEUED
        self.started_at = 0.0
        self.abandoned = False
        self.kept = False


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # timed out, or the caller was cancelled: nobody waits for it
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class ToolThreadPool:
    """Threads for synchronous tool calls; see the module doc.

    >>> pool = ToolThreadPool(4)
    >>> result = await pool.run(functools.partial(lookup, order_id="A1"), timeout=300.0)
    """

    def __init__(
        self,
        max_workers: int,
        *,
        max_abandoned: int | None = None,
        thread_name_prefix: str = "agent-tool",
    ) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        """Calls that run at once (threads that count against the pool)."""
        self.max_abandoned = 4 * max_workers if max_abandoned is None else max(0, max_abandoned)
        """Threads written off (still running a timed-out call) at most at a time."""
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
            f"ToolThreadPool(max_workers={self.max_workers}, workers={self._workers}, "
            f"abandoned={self._abandoned})"
        )

    # ------------------------------------------------------------------ calls

    async def run(self, fn: Callable[[], Any], timeout: float) -> Any:
        """``fn()`` on a pool thread; its result or exception.

        Raises `ToolCallTimeoutError` when it runs longer than ``timeout`` seconds (its
        thread is then written off, see the module doc), or when the pool is at its
        written-off limit and no thread became free within ``timeout``.
        """
        loop = asyncio.get_running_loop()
        call = _Call(fn, loop, loop.create_future())
        self._submit(call)
        try:
            return await self._wait(call, timeout)
        finally:
            if not call.future.done():  # timed out or cancelled: drop a late result
                call.future.cancel()
            if call.state is _State.QUEUED:
                with self._lock:
                    if call.state is _State.QUEUED:
                        call.state = _State.DROPPED  # a thread that takes it skips it

    async def _wait(self, call: _Call, timeout: float) -> Any:
        future = call.future
        while True:
            state, started_at = call.state, call.started_at
            if state is _State.QUEUED:
                wait = timeout
            elif state is _State.RUNNING:
                wait = started_at + timeout - time.monotonic()
            else:
                wait = None  # done: its result is on its way to the loop
            if wait is None or wait > 0:
                await asyncio.wait((future,), timeout=wait)
                if future.done():
                    return future.result()
            with self._lock:
                state = call.state
                if state is _State.QUEUED and self._kept >= self.max_workers:
                    # Every thread holds a timed-out call it could not be written off
                    # from: none may become free.
                    call.state = _State.DROPPED
                    raise ToolCallTimeoutError(timeout, started=False)
                if state is _State.RUNNING and time.monotonic() - call.started_at >= timeout:
                    self._write_off(call, timeout)
                    raise ToolCallTimeoutError(timeout)

    def _write_off(self, call: _Call, timeout: float) -> None:
        """Let go of the thread running ``call`` (under the lock), if the limit allows."""
        if self._abandoned >= self.max_abandoned:
            logger.warning(
                "a sync tool call has run %s s and timed out; its thread is not written off "
                "(%d written-off threads already, the most allowed): the tool pool has one "
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
        logger.warning(
            "a sync tool call has run %s s and timed out; its thread is written off and "
            "replaced (%d written-off threads still running)",
            timeout,
            self._abandoned,
        )
        if self._queued > self._idle:
            self._spawn()

    def _submit(self, call: _Call) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the tool thread pool is closed")
            self._queued += 1
            if self._queued > self._idle:
                self._spawn()
            self._queue.put(call)  # under the lock, so `close` sees every queued call

    def _spawn(self) -> None:
        """Start a thread (under the lock) if the pool has room for one."""
        if self._workers >= self.max_workers:
            return
        self._workers += 1
        self._idle += 1
        name = f"{self._prefix}-{next(self._names)}"
        threading.Thread(target=self._work, name=name, daemon=True).start()

    def _work(self) -> None:
        take = self._queue.get
        lock = self._lock
        while True:
            call = take()
            with lock:
                if call is None:  # closing
                    self._idle -= 1
                    self._workers -= 1
                    return
                self._queued -= 1
                if call.state is not _State.QUEUED:
                    continue  # dropped while it waited; this thread stays idle
                self._idle -= 1
                call.started_at = time.monotonic()
                call.state = _State.RUNNING
            result: Any = None
            error: BaseException | None = None
            try:
                result = call.fn()
            except BaseException as exc:  # handed to the caller, whatever it is
                error = exc
            with lock:
                call.state = _State.DONE
                if call.kept:
                    self._kept -= 1
                abandoned = call.abandoned
                if abandoned:  # replaced already: this thread ends
                    self._abandoned -= 1
                    leave = True
                elif self._closed:
                    self._workers -= 1
                    leave = True
                else:  # counted idle now, so `close` sends it its stop signal
                    self._idle += 1
                    leave = False
            if not abandoned:
                with contextlib.suppress(RuntimeError):  # the loop is closed
                    call.loop.call_soon_threadsafe(_settle, call.future, result, error)
            if leave:
                return

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
                    if call.state is _State.QUEUED:
                        call.state = _State.DROPPED
                        dropped.append(call)
        for _ in range(idle):
            self._queue.put(None)
        for call in dropped:
            closed = RuntimeError("the tool thread pool was closed before the call ran")
            with contextlib.suppress(RuntimeError):  # the loop is closed
                call.loop.call_soon_threadsafe(_settle, call.future, None, closed)
