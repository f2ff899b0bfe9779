"""A fake monotonic clock whose ``sleep`` returns only when the test moves time on."""

from __future__ import annotations

import asyncio
import heapq
import itertools

__all__ = ["FakeClock", "SkippingClock", "settle"]


async def settle() -> None:
    """Let every task that can run, run (until the loop has nothing ready)."""
    for _ in range(50):
        await asyncio.sleep(0)


class FakeClock:
    """``clock()`` is the fake time; ``await clock.sleep(s)`` waits until `advance` passes
    ``now + s``. Cancelled sleeps are dropped."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + max(0.0, seconds), next(self._order), future))
        await future

    @property
    def next_wake(self) -> float | None:
        """When the earliest sleeper wakes (None: nobody sleeps)."""
        self._sleepers = [s for s in self._sleepers if not s[2].done()]
        heapq.heapify(self._sleepers)
        return self._sleepers[0][0] if self._sleepers else None

    async def advance(self, seconds: float) -> None:
        """Move time on by ``seconds``, waking each sleeper at its time, in order."""
        target = self.now + seconds
        await settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            if future.done():
                continue
            self.now = max(self.now, deadline)
            future.set_result(None)
            await settle()
        self.now = target
        await settle()


class SkippingClock:
    """A fake clock whose sleep moves time on at once (for one waiter at a time);
    ``slept`` lists the sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
