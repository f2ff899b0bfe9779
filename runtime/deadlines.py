"""`Deadlines`: calls that may time out on an event loop, looked at by one timer per loop.

A timer per call is an entry in the loop's heap of timers, kept in order by Python-level
comparisons (`asyncio.TimerHandle.__lt__`): with thousands of calls in flight, setting and
cancelling one cost as much as the rest of a sync tool's call, and several times that for
an async tool's `asyncio.wait`. Here the calls with a timeout on one loop share one timer,
set for when the first of them could time out. When it fires, each call is looked at (the
owner's ``check``), and the timer is set again for the next that could.

Only the loop's own thread adds, looks at and drops a loop's calls (the Flink operator
thread runs loop callbacks only while the loop's thread does not).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Deadlines", "LoopDeadlines"]

C = TypeVar("C", bound=Hashable)

_LOG = logging.getLogger(__name__)


class LoopDeadlines(Generic[C]):
    """The calls with a timeout on one loop, and the timer that looks at them."""

    __slots__ = ("at", "calls", "loop", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.calls: dict[C, None] = {}
        """In the order they were added; a call leaves when its caller stops waiting."""
        self.timer: asyncio.TimerHandle | None = None
        self.at = math.inf
        """When ``timer`` fires (loop time); infinite without one."""


class Deadlines(Generic[C]):
    """Per event loop, the calls that may time out there (module doc).

    ``check(call, now)`` is asked at loop time ``now`` when ``call`` may have timed out: it
    fails the call (returns None), or returns in how many seconds to look again (None too
    when the call is done).
    """

    def __init__(self, check: Callable[[C, float], float | None]) -> None:
        self._check = check
        self._loops: dict[asyncio.AbstractEventLoop, LoopDeadlines[C]] = {}

    def add(self, loop: asyncio.AbstractEventLoop, call: C, timeout: float) -> LoopDeadlines[C]:
        """Watch ``call``, which cannot time out in less than ``timeout`` seconds; what it
        returns takes the call back (`drop`)."""
        deadlines = self._loops.get(loop)
        if deadlines is None:
            deadlines = self._new(loop)
        deadlines.calls[call] = None
        at = loop.time() + timeout
        if at < deadlines.at:
            self._set(deadlines, at)
        return deadlines

    @staticmethod
    def drop(deadlines: LoopDeadlines[C], call: C) -> None:
        """Stop watching ``call`` (its caller no longer waits); the timer goes with the
        last call."""
        calls = deadlines.calls
        calls.pop(call, None)
        if not calls and deadlines.timer is not None:
            deadlines.timer.cancel()
            deadlines.timer = None
            deadlines.at = math.inf

    def _new(self, loop: asyncio.AbstractEventLoop) -> LoopDeadlines[C]:
        """A loop's first watch (those of closed loops are let go of here)."""
        for other, _ in list(self._loops.items()):
            if other.is_closed():
                self._loops.pop(other, None)
        deadlines = self._loops[loop] = LoopDeadlines(loop)
        return deadlines

    def _set(self, deadlines: LoopDeadlines[C], at: float) -> None:
        if deadlines.timer is not None:
            deadlines.timer.cancel()
        deadlines.timer = deadlines.loop.call_at(at, self._look, deadlines)
        deadlines.at = at

    def _look(self, deadlines: LoopDeadlines[C]) -> None:
        """The timer fired: look at every call, and set it again for the first of those
        that are left."""
        deadlines.timer = None
        deadlines.at = math.inf
        now = deadlines.loop.time()
        first = math.inf
        check = self._check
        for call in list(deadlines.calls):
            try:
                again = check(call, now)
            except Exception:  # a broken check must not leave the others without a timer
                _LOG.exception("looking at a call's timeout failed")
                continue
            if again is not None and now + again < first:
                first = now + again
        if first < math.inf:
            self._set(deadlines, first)
