"""The event loop MCP sessions live on: one per process, on a daemon thread.

The MCP SDK holds a session open inside nested async context managers (the transport's
task group, the session's dispatcher), which must be entered and left by one task on one
loop. The runners' loops are not that place: the local runner's loop ends with each
`execute`, and on Flink the loop is shared with the operator thread. So every session of
the process is owned by a task on this loop, and callers on any other loop (or thread)
hand it coroutines: `run_on_mcp_loop` awaits one without blocking the caller's loop (other
keys go on), `run_blocking` waits for one from plain code.

A forked child starts with no loop (it makes its own on first use); at interpreter exit
the sessions are closed (stdio servers are stopped) before the loop stops.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import Any, TypeVar

__all__ = [
    "has_stopped",
    "mcp_loop",
    "on_mcp_loop",
    "run_blocking",
    "run_on_mcp_loop",
    "when_stopping",
]

_T = TypeVar("_T")

_SHUTDOWN_S = 5.0
"""How long interpreter exit waits for the sessions to close."""

_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_lock = threading.Lock()
_stop_hooks: list[Callable[[], Coroutine[Any, Any, None]]] = []
_stopped = False
"""The loop was stopped at interpreter exit (its stop hooks closed every session)."""


def mcp_loop() -> asyncio.AbstractEventLoop:
    """The process's MCP loop, started on first use."""
    global _loop, _thread
    loop = _loop
    if loop is not None and not loop.is_closed():
        return loop
    with _lock:
        if _loop is None or _loop.is_closed():
            new_loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=_run, args=(new_loop,), name="flink-agents-mcp", daemon=True
            )
            thread.start()
            _loop, _thread = new_loop, thread
        return _loop


def _run(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    loop.run_forever()


def on_mcp_loop() -> bool:
    """True on the MCP loop's thread."""
    return _thread is not None and threading.current_thread() is _thread


async def run_on_mcp_loop(coro: Coroutine[Any, Any, _T]) -> _T:
    """``await coro`` on the MCP loop, from any loop: the caller's loop goes on meanwhile,
    and cancelling the caller cancels ``coro``."""
    loop = mcp_loop()
    if on_mcp_loop():
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


def has_stopped() -> bool:
    """True once the loop was stopped at interpreter exit: nothing runs on it any more."""
    return _stopped


def run_blocking(coro: Coroutine[Any, Any, _T], timeout: float | None = None) -> _T:
    """Run ``coro`` on the MCP loop and wait for it (at most ``timeout`` s: then it is
    cancelled and `TimeoutError` raised). Not on the MCP loop's own thread, nor after
    the loop stopped at interpreter exit (`RuntimeError`)."""
    if on_mcp_loop():
        coro.close()
        raise RuntimeError(
            "a blocking MCP call was made on the MCP loop itself; await the async variant"
        )
    if _stopped:
        coro.close()
        raise RuntimeError("the MCP loop has stopped (the interpreter is exiting)")
    future = asyncio.run_coroutine_threadsafe(coro, mcp_loop())
    try:
        return future.result(timeout)
    except FutureTimeoutError:
        future.cancel()
        raise TimeoutError(f"no answer within {timeout} s") from None


def when_stopping(hook: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``hook()`` on the MCP loop at interpreter exit (to close sessions)."""
    _stop_hooks.append(hook)


def _stop() -> None:
    global _stopped
    loop = _loop
    if loop is None or loop.is_closed() or not loop.is_running():
        return
    _stopped = True

    async def stop_all() -> None:
        for hook in _stop_hooks:
            with contextlib.suppress(Exception):  # closing at exit: nobody to tell
                await hook()

    future = asyncio.run_coroutine_threadsafe(stop_all(), loop)
    try:
        future.result(_SHUTDOWN_S)
    except Exception:
        future.cancel()
    loop.call_soon_threadsafe(loop.stop)


def _forget_in_child() -> None:
    # The loop's thread did not come along into the child: start afresh there.
    global _loop, _thread, _lock, _stopped
    _loop, _thread, _lock, _stopped = None, None, threading.Lock(), False


atexit.register(_stop)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
