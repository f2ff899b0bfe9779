"""`use_batch_scheduling`: a thread that, woken, does not preempt the thread that woke it.

A sync call's thread (`call_threads.CallThreadPool`) is woken by the thread that holds the
GIL (a Flink subtask's operator thread, or the loop). Preempting it, the woken thread could
only wait for the GIL and switch back: two context switches per hand-over for nothing. Under
Linux's ``SCHED_BATCH`` policy a woken thread runs when a CPU is free or the running
thread's slice ends; its share of the CPU stays as it was. A call's outcome may come back a
little later: more throughput, a little more latency.

Why it stays, on Flink subtasks only (docs/benchmarks.md, session 9 and issue 36): on the
mini-cluster the sync-tool and `def`-action lines ran higher in six of eight pairs, by up
to 38%, for 0.4-2.5 ms more added latency at the median; in issue 36 the `def`-action line
ran 1,556 and 1,702 records/s without it against 2,045 and 1,960 with it (two pairs taking
turns; the sync-tool line within the noise). The local runner leaves it off:
its 200 ms line lost 0.02 of its ratio to the ideal in five pairs of five.
"""

from __future__ import annotations

import os

__all__ = ["use_batch_scheduling"]


def use_batch_scheduling() -> bool:
    """Put the calling thread under ``SCHED_BATCH`` (module doc). False where that is not
    available (not Linux, or not allowed: a container's seccomp profile, say)."""
    set_policy = getattr(os, "sched_setscheduler", None)
    batch = getattr(os, "SCHED_BATCH", None)
    if set_policy is None or batch is None:
        return False
    try:
        set_policy(0, batch, os.sched_param(0))  # 0: this thread
    except OSError:
        return False
    return True
