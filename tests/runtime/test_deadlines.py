"""`Deadlines`: the calls with a timeout on a loop share one timer, set for the first."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, cast

import pytest

from flink_agents.runtime.deadlines import Deadlines


class Timer:
    def __init__(self, at: float, callback: Callable[..., None], args: tuple[Any, ...]) -> None:
        self.at, self.callback, self.args = at, callback, args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Loop:
    """What `Deadlines` uses of a loop, on a clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0
        self.timers: list[Timer] = []
        self.closed = False

    def time(self) -> float:
        return self.now

    def call_at(self, at: float, callback: Callable[..., None], *args: Any) -> Timer:
        self.timers.append(Timer(at, callback, args))
        return self.timers[-1]

    def is_closed(self) -> bool:
        return self.closed

    def pending(self) -> list[float]:
        return [t.at for t in self.timers if not t.cancelled]

    def fire(self) -> None:
        """Move the clock to the earliest timer and run it."""
        (timer,) = [t for t in self.timers if not t.cancelled]
        self.timers.remove(timer)
        self.now = timer.at
        timer.callback(*timer.args)


def as_loop(loop: Loop) -> asyncio.AbstractEventLoop:
    return cast(asyncio.AbstractEventLoop, loop)


class Calls:
    """Calls by name with a fixed deadline each; ``check`` fails those past it."""

    def __init__(self) -> None:
        self.due: dict[str, float] = {}
        self.failed: list[tuple[str, float]] = []
        self.done: set[str] = set()

    def check(self, name: str, now: float) -> float | None:
        if name in self.done:
            return None
        if now >= self.due[name]:
            self.failed.append((name, now))
            self.done.add(name)  # failed: done, though its caller may not have dropped it
            return None
        return self.due[name] - now


def test_one_timer_for_the_first_that_can_time_out() -> None:
    loop, calls = Loop(), Calls()
    deadlines: Deadlines[str] = Deadlines(calls.check)
    calls.due = {"a": 130.0, "b": 110.0, "c": 150.0}
    watch = deadlines.add(as_loop(loop), "a", 30.0)
    assert loop.pending() == [130.0]
    deadlines.add(as_loop(loop), "b", 10.0)  # sooner: the timer moves
    deadlines.add(as_loop(loop), "c", 50.0)  # later: it stays
    assert loop.pending() == [110.0] and len(loop.timers) == 2
    loop.fire()
    assert calls.failed == [("b", 110.0)]
    assert loop.pending() == [130.0]  # set again for the first of the others
    calls.done.add("a")  # done, but its caller has not dropped it yet
    loop.fire()
    assert calls.failed == [("b", 110.0)] and loop.pending() == [150.0]
    for name in ("a", "b", "c"):
        Deadlines.drop(watch, name)
    assert loop.pending() == []  # no timer outlives the calls it watches


def test_a_call_that_is_not_due_yet_is_looked_at_again_when_it_says() -> None:
    loop, calls = Loop(), Calls()
    deadlines: Deadlines[str] = Deadlines(calls.check)
    calls.due = {"queued": 125.0}  # its deadline moved after it was added (it waited)
    deadlines.add(as_loop(loop), "queued", 10.0)
    loop.fire()
    assert calls.failed == [] and loop.pending() == [125.0]
    loop.fire()
    assert calls.failed == [("queued", 125.0)] and loop.pending() == []


def test_each_loop_has_its_own_timer_and_closed_loops_are_let_go_of() -> None:
    first, second, calls = Loop(), Loop(), Calls()
    deadlines: Deadlines[str] = Deadlines(calls.check)
    calls.due = {"a": 110.0, "b": 120.0}
    deadlines.add(as_loop(first), "a", 10.0)
    deadlines.add(as_loop(second), "b", 20.0)
    assert first.pending() == [110.0] and second.pending() == [120.0]
    first.closed = True
    third = Loop()
    deadlines.add(as_loop(third), "c", 5.0)
    assert list(deadlines._loops) == [second, third]  # pyright: ignore[reportPrivateUsage]


def test_a_check_that_fails_leaves_the_others_watched(caplog: pytest.LogCaptureFixture) -> None:
    loop, calls = Loop(), Calls()

    def check(name: str, now: float) -> float | None:
        if name == "broken":
            raise RuntimeError("a bug")
        return calls.check(name, now)

    deadlines: Deadlines[str] = Deadlines(check)
    calls.due = {"a": 120.0}
    deadlines.add(as_loop(loop), "broken", 10.0)
    deadlines.add(as_loop(loop), "a", 20.0)
    with caplog.at_level(logging.ERROR, logger="flink_agents.runtime.deadlines"):
        loop.fire()
    assert "looking at a call's timeout failed" in caplog.text
    assert loop.pending() == [120.0]
    loop.fire()
    assert calls.failed == [("a", 120.0)]
