"""`LoopHandOver`: outcomes from other threads reach their futures, one wake-up per batch."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from flink_agents.runtime.loop_handover import LoopHandOver


def test_outcomes_put_while_a_wake_up_is_on_its_way_join_it() -> None:
    handover = LoopHandOver()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        wakeups: list[Any] = []
        original = loop.call_soon_threadsafe

        def counted(callback: Any, *args: Any) -> Any:
            wakeups.append(callback)
            return original(callback, *args)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
        futures = [loop.create_future() for _ in range(3)]

        def finish() -> None:  # another thread, while the loop waits for it
            handover.put(loop, futures[0], "a")
            handover.put(loop, futures[1], None, KeyError("missing"))
            handover.put(loop, futures[2], "c")

        thread = threading.Thread(target=finish)
        thread.start()
        thread.join(5.0)  # the loop is held here, busy, while the three finish
        assert await futures[0] == "a" and await futures[2] == "c"
        with pytest.raises(KeyError, match="missing"):
            await futures[1]
        assert len(wakeups) == 1  # one for the three outcomes
        late = loop.create_future()
        handover.put(loop, late, "next")  # the batch was taken: a new wake-up
        assert await late == "next" and len(wakeups) == 2

    asyncio.run(main())


def test_a_done_future_is_left_as_it_is_and_a_closed_loop_is_no_error() -> None:
    handover = LoopHandOver()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        cancelled = loop.create_future()
        cancelled.cancel()  # its caller is gone: nobody waits for this outcome
        handover.put(loop, cancelled, "dropped")
        after = loop.create_future()
        handover.put(loop, after, "kept")
        assert await after == "kept" and cancelled.cancelled()

    asyncio.run(main())
    closed = asyncio.new_event_loop()
    closed.close()
    handover.put(closed, closed.create_future(), "nobody")  # no error: nobody waits there

    async def later() -> str:
        future = asyncio.get_running_loop().create_future()
        handover.put(asyncio.get_running_loop(), future, "fine")
        return await asyncio.wait_for(future, 5.0)

    assert asyncio.run(later()) == "fine"
