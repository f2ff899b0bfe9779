"""asyncio internals: running an event loop's ready callbacks on another thread.

The Flink operator thread takes the run loop while the loop thread waits for I/O and runs
what is ready itself (`flink_agents.runtime.flink.loop_thread`): a run that needs no real
waiting finishes inside the Flink callback that accepted its input, with no thread switch
(docs/benchmarks.md: what the inline path is worth). asyncio has no public way to do that.

Reaches (checked on CPython 3.10.13, 3.11.7, 3.12.1 and 3.13.0; `BaseEventLoop` and
`Handle` have had them since Python 3.4):

- `running_loop` / `run_ready`: `asyncio.events._get_running_loop` and
  `_set_running_loop` (the loop `get_running_loop` reports on this thread).
- `run_ready`: `BaseEventLoop._ready` (a deque of the `Handle`s due now), run as the loop
  does in `_run_once`: `Handle._cancelled`, `Handle._run()`.
- `wakes_before`: `BaseEventLoop._scheduled` (a heap of `TimerHandle`s, the next first).

`check_loop` tells whether a loop has them; the loop thread calls it before it runs a
loop inline, and turns inline runs off (with a warning) when it does not.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from flink_agents._compat import Assumption

__all__ = ["ASSUMPTIONS", "READY_QUEUE", "check_loop", "run_ready", "running_loop", "wakes_before"]

CHECKED_ON = "3.10.13, 3.11.7, 3.12.1, 3.13.0"


def _running_loop_accessors() -> bool:
    events: Any = asyncio.events
    return callable(getattr(events, "_get_running_loop", None)) and callable(
        getattr(events, "_set_running_loop", None)
    )


def _has_queues(loop: Any) -> bool:
    return type(getattr(loop, "_ready", None)) is deque and isinstance(
        getattr(loop, "_scheduled", None), list
    )


def _loop_queues() -> bool:
    probe: Any = asyncio.new_event_loop()
    try:
        handle = probe.call_soon(lambda: None)
        timer = probe.call_later(3600, lambda: None)
        return (
            _has_queues(probe)
            and handle in probe._ready
            and timer in probe._scheduled
            and hasattr(handle, "_cancelled")
            and callable(getattr(handle, "_run", None))
        )
    finally:
        probe.close()


RUNNING_LOOP = Assumption(
    "python",
    CHECKED_ON,
    "asyncio.events has _get_running_loop and _set_running_loop",
    _running_loop_accessors,
)
READY_QUEUE = Assumption(
    "python",
    CHECKED_ON,
    "an asyncio event loop keeps the callbacks due now in a deque `_ready` of Handles "
    "(`_cancelled`, `_run()`) and its timers in a heap `_scheduled`",
    _loop_queues,
)
ASSUMPTIONS = (RUNNING_LOOP, READY_QUEUE)


def check_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Raise `IncompatibleDependencyError` unless `run_ready` and `wakes_before` work on
    `loop` (its class and this Python)."""
    RUNNING_LOOP.check()
    READY_QUEUE.check()
    if not _has_queues(loop):
        READY_QUEUE.broken()


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running on this thread, or None (`asyncio.get_running_loop` without the
    error)."""
    return asyncio.events._get_running_loop()  # pyright: ignore[reportPrivateUsage]


def run_ready(
    loop: asyncio.AbstractEventLoop, callback: Callable[[], None], budget_s: float
) -> None:
    """Run `callback` as `loop`'s running loop on this thread, then the callbacks it made
    ready (and those they make) until none is left or `budget_s` is spent. The caller owns
    the loop: its own thread is not running it now (`check_loop` first)."""
    base: Any = loop
    ready: deque[Any] = base._ready
    events: Any = asyncio.events
    events._set_running_loop(loop)
    try:
        callback()
        deadline = time.monotonic() + budget_s
        while ready:
            handle = ready.popleft()
            if not handle._cancelled:
                handle._run()
            if time.monotonic() >= deadline:
                break
    finally:
        events._set_running_loop(None)


def wakes_before(loop: asyncio.AbstractEventLoop, deadline: float) -> bool:
    """Whether `loop` has callbacks ready now, or a timer due before `deadline` (its
    `time()` scale): its own thread, asleep until `deadline`, must look again sooner."""
    base: Any = loop
    scheduled: list[Any] = base._scheduled
    return bool(base._ready) or (bool(scheduled) and scheduled[0].when() < deadline)
