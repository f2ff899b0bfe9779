"""`use_batch_scheduling`: the calling thread, and only it, runs under ``SCHED_BATCH``."""

from __future__ import annotations

import os
import threading
from typing import Any

from flink_agents.runtime.batch_scheduling import use_batch_scheduling


def test_use_batch_scheduling_changes_the_calling_thread_only() -> None:
    seen: dict[str, Any] = {}

    def in_thread() -> None:
        seen["changed"] = use_batch_scheduling()
        if hasattr(os, "sched_getscheduler"):
            seen["policy"] = os.sched_getscheduler(0)

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(5.0)
    if hasattr(os, "SCHED_BATCH"):
        assert seen == {"changed": True, "policy": os.SCHED_BATCH}
        assert os.sched_getscheduler(0) == os.SCHED_OTHER
    else:  # pragma: no cover - not Linux
        assert seen["changed"] is False
