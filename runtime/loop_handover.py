"""`LoopHandOver`: outcomes of calls that finished on other threads, handed to their loops.

A thread that finishes a call puts its outcome here; the loop that awaits it sets it on the
call's future. Outcomes that finish while a wake-up of their loop is on its way join it: one
cross-thread wake-up (`call_soon_threadsafe`) per batch, not per call (about 46 calls per
hand-over in the local runner's 0 ms line, docs/benchmarks.md session 10).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

__all__ = ["LoopHandOver"]

_Outcome = tuple["asyncio.Future[Any]", Any, "BaseException | None"]


def _settle(outcomes: list[_Outcome]) -> None:
    """On the loop: set each outcome on its future, unless it is done already (the call
    timed out, or its caller was cancelled: nobody waits for it)."""
    for future, result, error in outcomes:
        if future.done():
            continue
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)


class LoopHandOver:
    """Outcomes waiting for their loops (module doc); any thread may `put`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
        """Per loop, the outcomes it has not taken yet. A loop has an entry exactly while a
        wake-up to take them is on its way."""

    def put(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        result: Any,
        error: BaseException | None = None,
    ) -> None:
        """Have ``loop`` set ``future``'s result (or ``error``) soon. Nothing happens when
        ``loop`` is closed: nobody waits there any more."""
        with self._lock:
            waiting = self._waiting.get(loop)
            if waiting is not None:  # a wake-up is on its way: join it
                waiting.append((future, result, error))
                return
            self._waiting[loop] = [(future, result, error)]
        try:
            loop.call_soon_threadsafe(self._take, loop)
        except RuntimeError:  # the loop is closed
            with self._lock:
                self._waiting.pop(loop, None)

    def _take(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            outcomes = self._waiting.pop(loop, None)
        if outcomes:
            _settle(outcomes)
