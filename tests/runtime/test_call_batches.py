"""`CallBatcher`: the calls of one group made in one turn of the loop go out as one call;
one item's fault fails only its caller."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from flink_agents.api.errors import ChatModelError
from flink_agents.runtime.call_batches import CallBatcher


class Recorder:
    """A batched call that doubles numbers, fails for a "bad" item (not retryable) and
    remembers every batch it got."""

    def __init__(self, error: Exception | None = None) -> None:
        self.batches: list[list[Any]] = []
        self.error = error

    async def __call__(self, items: list[Any]) -> list[Any]:
        self.batches.append(list(items))
        await asyncio.sleep(0)
        if self.error is not None:
            raise self.error
        if "bad" in items:
            raise ValueError("a bad item")
        return [item * 2 for item in items]


async def _gather(batcher: CallBatcher[Any, Any], call: Recorder, items: list[Any]) -> list[Any]:
    return await asyncio.gather(
        *(batcher.submit("group", item, call) for item in items), return_exceptions=True
    )


def test_calls_of_one_turn_go_out_as_one_batch_each_caller_getting_its_own_result() -> None:
    call = Recorder()
    results = asyncio.run(_gather(CallBatcher(), call, [1, 2, 3]))
    assert results == [2, 4, 6]
    assert call.batches == [[1, 2, 3]]


def test_groups_and_later_turns_are_batched_apart() -> None:
    async def scenario() -> tuple[list[Any], Recorder]:
        batcher: CallBatcher[int, int] = CallBatcher()
        call = Recorder()
        first = await asyncio.gather(
            batcher.submit("a", 1, call), batcher.submit("b", 2, call), batcher.submit("a", 3, call)
        )
        later = await batcher.submit("a", 4, call)
        return [*first, later], call

    results, call = asyncio.run(scenario())
    assert results == [2, 4, 6, 8]
    assert sorted(call.batches) == [[1, 3], [2], [4]]


def test_a_full_batch_goes_at_once() -> None:
    call = Recorder()
    results = asyncio.run(_gather(CallBatcher(max_batch=2), call, [1, 2, 3, 4, 5]))
    assert results == [2, 4, 6, 8, 10]
    assert call.batches == [[1, 2], [3, 4], [5]]


def test_one_bad_item_fails_only_its_own_caller() -> None:
    call = Recorder()
    results = asyncio.run(_gather(CallBatcher(), call, [1, "bad", 3]))
    assert results[0] == 2 and results[2] == 6
    assert isinstance(results[1], ValueError)
    assert call.batches == [[1, "bad", 3], [1], ["bad"], [3]]


def test_a_retryable_failure_fails_every_caller_without_trying_each_alone() -> None:
    down = ChatModelError("connection refused", retryable=True, kind="connection")
    call = Recorder(error=down)
    results = asyncio.run(_gather(CallBatcher(), call, [1, 2, 3]))
    assert all(result is down for result in results)
    assert call.batches == [[1, 2, 3]]


def test_item_fault_says_which_failures_are_tried_alone() -> None:
    call = Recorder(error=ValueError("the store is down"))
    batcher: CallBatcher[int, int] = CallBatcher(item_fault=lambda exc: False)
    results = asyncio.run(_gather(batcher, call, [1, 2]))
    assert all(isinstance(result, ValueError) for result in results)
    assert call.batches == [[1, 2]]


def test_a_cancelled_caller_leaves_the_others_their_results() -> None:
    async def scenario() -> tuple[Any, Any]:
        batcher: CallBatcher[int, int] = CallBatcher()
        call = Recorder()
        gone = asyncio.ensure_future(batcher.submit("group", 1, call))
        kept = asyncio.ensure_future(batcher.submit("group", 2, call))
        await asyncio.sleep(0)
        gone.cancel()
        return await asyncio.gather(gone, kept, return_exceptions=True)

    gone, kept = asyncio.run(scenario())
    assert isinstance(gone, asyncio.CancelledError)
    assert kept == 4


def test_a_batch_must_answer_each_item() -> None:
    async def short(items: list[int]) -> list[int]:
        return items[:1]

    async def scenario() -> list[Any]:
        batcher: CallBatcher[int, int] = CallBatcher(item_fault=lambda exc: False)
        found = await asyncio.gather(
            batcher.submit("g", 1, short), batcher.submit("g", 2, short), return_exceptions=True
        )
        return list(found)

    results = asyncio.run(scenario())
    assert all(isinstance(r, RuntimeError) and "2 items" in str(r) for r in results)


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        CallBatcher(max_batch=0)


def test_calls_made_while_a_batch_is_out_gather_into_the_next_one() -> None:
    # Calls that come one turn after another (records reaching an operator one by one)
    # still share requests: while the group's batch is out, the next one gathers.
    async def scenario() -> tuple[list[Any], list[list[int]]]:
        release = asyncio.Event()
        batches: list[list[int]] = []

        async def call(items: list[int]) -> list[int]:
            batches.append(list(items))
            await release.wait()
            return [item * 2 for item in items]

        batcher: CallBatcher[int, int] = CallBatcher()
        calls = [asyncio.ensure_future(batcher.submit("g", 1, call))]
        for item in (2, 3):
            for _ in range(3):
                await asyncio.sleep(0)  # later turns
            calls.append(asyncio.ensure_future(batcher.submit("g", item, call)))
        for _ in range(3):
            await asyncio.sleep(0)
        assert batches == [[1]]  # 2 and 3 wait for it
        release.set()
        return list(await asyncio.gather(*calls)), batches

    results, batches = asyncio.run(scenario())
    assert results == [2, 4, 6]
    assert batches == [[1], [2, 3]]


def test_max_in_flight_lets_more_batches_out_at_once() -> None:
    async def scenario() -> list[list[int]]:
        release = asyncio.Event()
        batches: list[list[int]] = []

        async def call(items: list[int]) -> list[int]:
            batches.append(list(items))
            await release.wait()
            return items

        batcher: CallBatcher[int, int] = CallBatcher(max_in_flight=2)
        calls = []
        for item in (1, 2, 3):
            calls.append(asyncio.ensure_future(batcher.submit("g", item, call)))
            for _ in range(3):
                await asyncio.sleep(0)
        assert batches == [[1], [2]]
        release.set()
        await asyncio.gather(*calls)
        return batches

    assert asyncio.run(scenario()) == [[1], [2], [3]]


def test_a_batch_out_too_long_no_longer_holds_the_next_one_back() -> None:
    # A hung lookup (a store that never answers it) must not stall the other keys' calls.
    async def scenario() -> tuple[int, list[list[int]]]:
        hung = asyncio.Event()
        batches: list[list[int]] = []

        async def call(items: list[int]) -> list[int]:
            batches.append(list(items))
            if items == [1]:
                await hung.wait()
            return [item * 2 for item in items]

        batcher: CallBatcher[int, int] = CallBatcher(stall_s=0.05)
        first = asyncio.ensure_future(batcher.submit("g", 1, call))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        second = await asyncio.wait_for(batcher.submit("g", 2, call), timeout=10)
        assert not first.done()
        hung.set()
        await first
        return second, batches

    second, batches = asyncio.run(scenario())
    assert second == 4
    assert batches == [[1], [2]]


class ClockLoop(asyncio.SelectorEventLoop):
    """An event loop on a clock the test moves (its timers fire when it passes them)."""

    now = 0.0

    def time(self) -> float:
        return self.now


def _on_clock(scenario: Callable[[ClockLoop], Awaitable[Any]]) -> Any:
    loop = ClockLoop()
    try:
        return loop.run_until_complete(scenario(loop))
    finally:
        loop.close()


async def _turns() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_an_interval_spaces_a_groups_batches_gathering_the_calls_that_come_meanwhile() -> None:
    # Against a fast provider each batch is answered before the next call comes: without
    # an interval every call would go alone.
    async def scenario(loop: ClockLoop) -> tuple[list[Any], list[list[Any]]]:
        call = Recorder()
        batcher: CallBatcher[int, int] = CallBatcher()
        first = await batcher.submit("g", 1, call, interval_s=1.0)  # an idle group: at once
        loop.now = 0.5
        waiting = [asyncio.ensure_future(batcher.submit("g", i, call, 1.0)) for i in (2, 3)]
        await _turns()
        assert call.batches == [[1]]  # too soon after the first: 2 and 3 wait together
        assert not any(future.done() for future in waiting)
        loop.now = 1.0  # the interval has passed: they go
        gathered = await asyncio.gather(*waiting)
        loop.now = 5.0
        later = await batcher.submit("g", 4, call, interval_s=1.0)  # long after: at once
        return [first, *gathered, later], call.batches

    results, batches = _on_clock(scenario)
    assert results == [2, 4, 6, 8]
    assert batches == [[1], [2, 3], [4]]


def test_a_spaced_batch_goes_once_every_recent_caller_is_in() -> None:
    async def scenario(loop: ClockLoop) -> list[list[Any]]:
        call = Recorder()
        batcher: CallBatcher[int, int] = CallBatcher()
        await asyncio.gather(
            batcher.submit("g", 1, call, 5.0, caller="a"),
            batcher.submit("g", 2, call, 5.0, caller="b"),
        )
        loop.now = 0.5
        waiting = asyncio.ensure_future(batcher.submit("g", 3, call, 5.0, caller="a"))
        await _turns()
        assert call.batches == [[1, 2]]  # "b" asked 0.5 s ago and may join
        assert await batcher.submit("g", 4, call, 5.0, caller="b") == 8  # everyone in: it goes
        assert await waiting == 6
        loop.now = 2.0  # "b" has been quiet for longer than CALLERS_SEEN_S
        assert await batcher.submit("g", 5, call, 5.0, caller="a") == 10
        return call.batches

    assert _on_clock(scenario) == [[1, 2], [3, 4], [5]]


def test_a_lone_callers_calls_go_at_once_whatever_the_interval() -> None:
    # A key's calls come one after another: waiting for others that are not there would
    # only slow it down.
    async def scenario(loop: ClockLoop) -> list[list[Any]]:
        call = Recorder()
        batcher: CallBatcher[int, int] = CallBatcher()
        for item in (1, 2, 3):
            assert await batcher.submit("g", item, call, 5.0, caller="a") == item * 2
            loop.now += 0.01
        return call.batches

    assert _on_clock(scenario) == [[1], [2], [3]]
