"""Python's garbage collector while agent runs are in flight (`gc.tuning`, `gc.freeze`).

A thousand runs waiting on their model calls hold a few hundred thousand container objects
(events, messages, coroutine frames). CPython's cyclic collector walks every tracked object
in a full collection and the young ones every 700 allocations: measured on the local
runner's benchmark (1,000 keys, a 200 ms model), the collector took a fifth of the CPU and
its full collections, 30-60 ms each, delayed every run behind them.

While a runner holds the tuning (the local runner during a stream, the Flink operator from
`open` to `close`):

- `gc.tuning` (on by default): the youngest generation is collected every `YOUNG_THRESHOLD`
  allocations. Undone exactly: the last holder puts back the thresholds it found, unless
  someone else changed them meanwhile (then theirs stay).
- `gc.freeze` (off by default: it cannot be undone exactly): the objects that existed when
  the first freezing holder came (modules, the agent, its resources) are frozen, so full
  collections skip them (`gc.freeze`); the last one unfreezes, which also unfreezes what
  the application froze itself.

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
        self._freezers = 0
        self._saved: tuple[int, ...] | None = None
        self._set: tuple[int, ...] | None = None

    @property
    def holders(self) -> int:
        """Runners holding the tuning now."""
        return self._holders

    def hold(self, *, freeze: bool = False) -> None:
        """Raise the young threshold (the first holder) or count one more holder; with
        `freeze`, also freeze the objects that exist now (the first freezing holder)."""
        with self._lock:
            self._holders += 1
            if freeze:
                self._freezers += 1
                if self._freezers == 1:
                    gc.freeze()
            if self._holders > 1:
                return
            saved = gc.get_threshold()
            self._saved = saved
            self._set = (max(YOUNG_THRESHOLD, saved[0]), *saved[1:])
            gc.set_threshold(*self._set)

    def release(self, *, freeze: bool = False) -> None:
        """One holder fewer (`freeze` as it held); the last one puts the thresholds back
        (unless they changed since), the last freezing one unfreezes."""
        with self._lock:
            if self._holders == 0 or (freeze and self._freezers == 0):
                raise RuntimeError("the collector tuning was released more often than held")
            self._holders -= 1
            if freeze:
                self._freezers -= 1
                if self._freezers == 0:
                    gc.unfreeze()
            if self._holders:
                return
            saved, ours = self._saved, self._set
            self._saved = self._set = None
            if saved is not None and gc.get_threshold() == ours:
                gc.set_threshold(*saved)


tuning = CollectorTuning()
"""The process's one tuning."""
