"""Python's garbage collector while agent runs are in flight (`gc.tuning`).

A thousand runs waiting on their model calls hold a few hundred thousand container objects
(events, messages, coroutine frames). CPython's cyclic collector walks every tracked object
in a full collection and the young ones every 700 allocations: measured on the local
runner's benchmark (1,000 keys, a 200 ms model), the collector took a fifth of the CPU and
its full collections, 30-60 ms each, delayed every run behind them.

While a runner holds the tuning (the local runner during a stream, the Flink operator from
`open` to `close`), the objects that existed when the first holder came (modules, the agent,
its resources) are frozen: full collections skip them (`gc.freeze`). The youngest
generation is collected every `YOUNG_THRESHOLD` allocations. The last holder to leave
restores the thresholds and unfreezes, so garbage made before is collected again.
Holders are counted: runners in one process (several local runners, several subtasks in one
Python worker) share one tuning.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["YOUNG_THRESHOLD", "CollectorTuning", "tuning"]

YOUNG_THRESHOLD = 20_000
"""Allocations between two collections of the youngest generation while runs are in
flight (Python's default is 700)."""


class CollectorTuning:
    """Counted holds on the process's collector settings."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._saved: tuple[int, ...] | None = None

    @property
    def holders(self) -> int:
        """Runners holding the tuning now."""
        return self._holders

    def hold(self) -> None:
        """Tune the collector (the first holder) or count one more holder."""
        with self._lock:
            self._holders += 1
            if self._holders > 1:
                return
            saved = gc.get_threshold()
            self._saved = saved
            gc.freeze()
            gc.set_threshold(max(YOUNG_THRESHOLD, saved[0]), *saved[1:])

    def release(self) -> None:
        """One holder fewer; the last one puts the settings back."""
        with self._lock:
            if self._holders == 0:
                raise RuntimeError("the collector tuning was released more often than held")
            self._holders -= 1
            if self._holders:
                return
            saved = self._saved
            self._saved = None
            if saved is not None:
                gc.set_threshold(*saved)
            gc.unfreeze()


tuning = CollectorTuning()
"""The process's one tuning."""
