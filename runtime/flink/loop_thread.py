"""The asyncio loop agent runs go on beside Flink's operator thread.

A background thread runs the loop. The operator thread starts work on it with `launch`:
by default it takes the loop itself while the loop thread waits for I/O or a timer, runs
the callback and then the loop's ready callbacks until nothing is ready (a run that needs
no real waiting, a fast model or a replayed call, finishes inside the Flink callback that
accepted its input, with no thread switch); a run that waits is left to the loop thread.
The operator thread never waits on the selector, so it never blocks on a model call.

The loop is shared by two threads, one at a time: an ownership lock that the loop thread
releases around the selector's wait. Running the ready callbacks uses asyncio's
internals, behind `flink_agents.runtime.compat.asyncio` (`inline=False` turns it off: every
launch is a cross-thread wake-up; see docs/benchmarks.md for what the inline path is worth;
a Python whose asyncio lacks them gets that too, with a warning).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import selectors
import threading
import time
from collections.abc import Callable
from typing import Any

from flink_agents._compat import IncompatibleDependencyError
from flink_agents.runtime.brief_wait import brief_waits
from flink_agents.runtime.compat.asyncio import check_loop, run_ready, running_loop, wakes_before

__all__ = ["LoopThread"]

_LOG = logging.getLogger(__name__)

_INLINE_BUDGET_S = 0.002
"""How long the operator thread runs ready loop callbacks in one `launch` at most."""
_OWNER_WAIT_S = 0.02
"""How long `launch` waits for the loop thread to give up the loop before it posts the
callback instead."""


def _noop() -> None:
    pass


class _SharedSelector(selectors.BaseSelector):
    """The loop's selector: the loop thread gives up loop ownership while it waits in it;
    on any other thread `select` returns no events at once."""

    def __init__(self, inner: selectors.BaseSelector, owner: threading.Lock) -> None:
        self._inner = inner
        self._owner = owner
        self.loop_thread: int | None = None
        self.deadline = float("inf")
        """Monotonic time until which the loop thread sleeps (inf: until woken)."""

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if threading.get_ident() != self.loop_thread:
            return []
        if timeout is not None and timeout <= 0:
            return self._inner.select(timeout)
        self.deadline = float("inf") if timeout is None else time.monotonic() + timeout
        self._owner.release()
        try:
            return self._inner.select(timeout)
        finally:
            self._owner.acquire()
            self.deadline = 0.0

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.get_key(fileobj)

    def get_map(self) -> Any:
        return self._inner.get_map()

    def close(self) -> None:
        self._inner.close()


class LoopThread:
    """An asyncio loop on a thread of its own, shared with the operator thread."""

    def __init__(self, name: str = "flink-agents-runs", *, inline: bool = True) -> None:
        self._name = name
        self._inline = inline
        self._owner = threading.Lock()
        self._selector: _SharedSelector | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._posted: list[Callable[[], None]] = []
        self._wakeup_pending = False

    def start(self) -> None:
        """Start the thread (idempotent)."""
        if self._thread is not None:
            return
        ready = threading.Event()
        owner = self._owner
        selector = _SharedSelector(selectors.DefaultSelector(), owner)
        self._selector = selector

        def run_loop() -> None:
            owner.acquire()
            selector.loop_thread = threading.get_ident()
            loop = asyncio.SelectorEventLoop(selector)
            asyncio.set_event_loop(loop)
            if self._inline:
                try:
                    check_loop(loop)
                except IncompatibleDependencyError as exc:
                    _LOG.warning("runs start on the loop thread only (no inline runs): %s", exc)
                    self._inline = False
            self._loop = loop
            ready.set()
            try:
                loop.run_forever()
            finally:
                for task in asyncio.all_tasks(loop):
                    task.cancel()
                with contextlib.suppress(Exception):
                    loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()
                owner.release()

        self._thread = threading.Thread(target=run_loop, name=self._name, daemon=True)
        self._thread.start()
        ready.wait()

    def on_loop_thread(self) -> bool:
        """Whether the calling thread is the loop's own (it must not wait for runs)."""
        thread = self._thread
        return thread is not None and thread.ident == threading.get_ident()

    def close(self, before_stop: Callable[[], None] | None = None, timeout_s: float = 5.0) -> None:
        """Run `before_stop` on the loop (cancel the runs), stop it, join the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        def stop() -> None:
            if before_stop is not None:
                before_stop()
            loop.call_soon(loop.stop)

        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(stop)
        thread.join(timeout_s)
        self._thread = None
        self._loop = None

    def launch(self, callback: Callable[[], None]) -> None:
        """Run `callback` on the loop: here and now when the loop is free (with the ready
        callbacks it makes), else on the loop thread soon."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the loop thread is not started")
        if self._inline and running_loop() is None and self._owner.acquire(timeout=_OWNER_WAIT_S):
            try:
                self._run_inline(loop, callback)
            finally:
                self._owner.release()
            return
        # Wake the loop once per batch: every wake-up is a socket write, and a thread
        # switch fought over the GIL with the operator thread.
        with self._lock:
            self._posted.append(callback)
            if self._wakeup_pending:
                return
            self._wakeup_pending = True
        loop.call_soon_threadsafe(self._run_posted)

    def _run_posted(self) -> None:
        with self._lock:
            callbacks, self._posted = self._posted, []
            self._wakeup_pending = False
        for callback in callbacks:
            callback()

    def _run_inline(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        """Owning the loop on this thread: run `callback`, then ready callbacks until the
        loop has to wait or the budget is spent; wake the loop thread if it must look
        again sooner than it would."""
        selector = self._selector
        assert selector is not None
        with brief_waits:  # a run suspended here would move to the loop thread
            run_ready(loop, callback, _INLINE_BUDGET_S)
        if wakes_before(loop, selector.deadline):
            loop.call_soon_threadsafe(_noop)
