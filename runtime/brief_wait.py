"""Brief waits: the Flink operator thread waits up to 2 ms for a sync call that has been fast.

The operator thread runs the loop's ready callbacks itself while the loop is free
(`flink.loop_thread`, inside `brief_waits`). A run that suspends there moves to the loop
thread: its input goes to keyed state and a poll timer finds it later. So there, and only
there, a sync call (a `def` tool or action) whose key ran under ``fast_s`` (0.2 ms) in its
recent calls is waited for: the thread blocks up to ``brief_wait_s`` (2 ms), the GIL
released, while a pool thread runs the call, and the run goes on with its outcome inside the
Flink callback that started it. The call still runs on a pool thread, under its timeout; one
that is not done in time is awaited as any other, and its key counts as slow until its calls
are fast again, so a hung call holds the operator thread once, for ``brief_wait_s``.

Why it stays (docs/benchmarks.md, issue 14 and issue 36): on the mini-cluster the sync-tool
line ran 2,397 records/s without it against 3,241 with it (issue 14), and again 2,010 and
1,832 against 2,924 and 3,113 (issue 36, two pairs taking turns); in-process every sync-tool
run finishes inline with it (41-50% without). The `def`-action line did not gain from it in
those pairs (2,161 and 1,991 without, 1,737 and 1,933 with). Elsewhere (the
loop's own thread) nothing is waited for: there the hand-over is cheaper than the wait's
thread switches (local runner: 0 ms 150 -> 125 us of CPU per input without it), and calls
are not even timed (2.3k instructions per call).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable

__all__ = ["KeySpeeds", "brief_waits"]


class _BriefWaits(threading.local):
    """While entered on a thread, calls made there may be waited for briefly."""

    active = False

    def __enter__(self) -> None:
        self.active = True

    def __exit__(self, *exc: object) -> None:
        self.active = False


brief_waits = _BriefWaits()
"""``with brief_waits:`` on a thread that runs loop callbacks outside the loop's own
thread (module doc)."""


class KeySpeeds:
    """How long the calls of each key (a tool, an action) ran lately: a slow call counts at
    once, a fast one halves the distance. Not locked: the pool reads and writes it under its
    own lock."""

    def __init__(self, fast_s: float) -> None:
        self.fast_s = fast_s
        """A key whose recent calls ran shorter than this is fast."""
        self._took: dict[Hashable, float] = {}

    def is_fast(self, key: Hashable) -> bool:
        return self._took.get(key, 0.0) < self.fast_s

    def ran(self, key: Hashable, seconds: float) -> None:
        """A call of ``key`` ran ``seconds`` (at least: a call not done within a wait is
        counted with the wait)."""
        before = self._took.get(key, 0.0)
        self._took[key] = seconds if seconds >= before else (before + seconds) / 2
