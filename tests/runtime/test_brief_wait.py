"""`brief_wait`: where calls may be waited for, and which keys count as fast."""

from __future__ import annotations

import threading

from flink_agents.runtime.brief_wait import KeySpeeds, brief_waits


def test_brief_waits_is_on_only_inside_it_and_only_on_its_thread() -> None:
    seen: list[bool] = []
    assert not brief_waits.active
    with brief_waits:
        assert brief_waits.active
        other = threading.Thread(target=lambda: seen.append(brief_waits.active))
        other.start()
        other.join(5.0)
    assert seen == [False] and not brief_waits.active


def test_a_slow_call_counts_at_once_and_fast_ones_bring_its_key_back() -> None:
    speeds = KeySpeeds(fast_s=0.001)
    assert speeds.is_fast("lookup")  # a key never timed is fast
    speeds.ran("lookup", 0.0001)
    assert speeds.is_fast("lookup")
    speeds.ran("lookup", 0.004)  # one slow call: slow at once
    assert not speeds.is_fast("lookup") and speeds.is_fast("other")
    speeds.ran("lookup", 0.0)  # each fast one halves the distance: 2 ms, then 1 ms ...
    speeds.ran("lookup", 0.0)
    assert not speeds.is_fast("lookup")
    speeds.ran("lookup", 0.0)  # ... then 0.5 ms: fast again
    assert speeds.is_fast("lookup")
