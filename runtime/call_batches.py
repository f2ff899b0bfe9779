"""`CallBatcher`: calls of one kind made at once by many runs, sent as one batched call.

The context retrieval action makes two calls per request (the query's embedding, the store
lookup). With many runs in flight those calls come in bursts: every run that reached its
retrieval step in one turn of the event loop asks at once. A provider's SDK costs about
the same per request whatever its size, and a store answers several vectors in one query
for little more than one, so each such burst goes out as one call: an embedding request
carrying every query text, a lookup carrying every vector.

How it works: per group (``submit``'s ``group``: the store, the kind of call, what must
be equal within a batch) at most ``max_in_flight`` batches are sent at once. The first
call of a group opens a batch; at the end of the current turn of the loop it is sent if
fewer than ``max_in_flight`` of the group's batches are out, else it keeps gathering the
calls that come until one of them is answered, and goes then. A full batch
(``max_batch`` items) goes at once whatever is out. So a call made while the group is
idle waits for nothing but the end of its turn, and under load the batches grow with the
rate of calls: each caller waits at most for one batch ahead of it, and for no more than
``stall_s`` seconds (a batch out longer, a hung store's, no longer holds the next one
back). A group may also space its batches (``submit``'s ``interval_s``): a batch goes no
sooner than that after the group's previous one went out, gathering the calls that come
meanwhile; a call that comes later goes at once, as above. Against a fast provider the
previous batch is answered before the next call comes, and batches stay of one or two
items, each costing a whole request's CPU; spaced, they grow with the rate of calls
(the context retrieval action's ``rag.batch-interval-s``). Waiting is only worth it while
others may join: a batch that holds a call of every caller the group had in the last
`CALLERS_SEEN_S` (``submit``'s ``caller``: a run's key, whose calls come one after
another) goes at once, so a lone key's calls never wait for the interval. Each
caller awaits its own item's result. Batching changes what is sent, never what a caller
gets or what is recorded: each run's durable call records its own result.

Failures: when a batched call fails with an error one item may cause (a bad input, a
text too long: by default, an error that is not ``retryable``), each of its items is sent
again alone, so one bad item fails only its own caller. Any other failure (timeout,
connection, rate limit: the provider's state, not an item's) fails every caller of the
batch with it, as it would have failed each alone.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

__all__ = [
    "CALLERS_SEEN_S",
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_STALL_S",
    "BatchCall",
    "CallBatcher",
    "not_retryable",
]

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")

DEFAULT_MAX_BATCH = 128
"""Items one batched call carries at most."""
DEFAULT_MAX_IN_FLIGHT = 1
"""Batches of one group out at once (beyond those sent full or out too long)."""
DEFAULT_STALL_S = 1.0
"""Seconds a batch out holds the next one back at most."""
CALLERS_SEEN_S = 1.0
"""Seconds a group counts a caller among those that may still join a batch after its last
call."""

BatchCall = Callable[[list[ItemT]], Awaitable[Sequence[ResultT]]]
"""Sends a batch: one result per item, in order."""


def not_retryable(exc: Exception) -> bool:
    """The default test of an error one item may have caused: it is not ``retryable``."""
    return not getattr(exc, "retryable", False)


class _Group(Generic[ItemT, ResultT]):
    """A group's batch gathering calls, how many of its batches are out, and when the last
    one went."""

    __slots__ = ("callers", "gathering", "in_flight", "interval_s", "last_sent", "timer")

    def __init__(self) -> None:
        self.gathering: _Batch[ItemT, ResultT] | None = None
        self.in_flight = 0
        self.interval_s = 0.0
        """Seconds between two of its batches going out, at least."""
        self.last_sent = float("-inf")
        """Loop time its last batch went out."""
        self.timer: asyncio.TimerHandle | None = None
        """Wakes it when ``interval_s`` has passed since ``last_sent``."""
        self.callers: dict[Hashable, float] = {}
        """Its callers of the last `CALLERS_SEEN_S`: caller -> loop time of its last call,
        the least recent first."""

    def everyone_in(self, batch: _Batch[ItemT, ResultT], now: float) -> bool:
        """Whether ``batch`` holds a call of every recent caller (none may join it)."""
        if batch.anonymous:
            return False
        callers = self.callers
        seen = now - CALLERS_SEEN_S
        while callers:  # forget those gone quiet
            caller = next(iter(callers))
            if callers[caller] >= seen:
                break
            del callers[caller]
        return len(batch.callers) >= len(callers)


class _Batch(Generic[ItemT, ResultT]):
    __slots__ = ("anonymous", "call", "callers", "futures", "items", "spaced")

    def __init__(self, call: BatchCall[ItemT, ResultT]) -> None:
        self.call = call
        self.items: list[ItemT] = []
        self.futures: list[asyncio.Future[ResultT]] = []
        self.callers: set[Hashable] = set()
        self.anonymous = False
        """Whether it holds a call of no given caller."""
        self.spaced = False
        """Whether it waits for the group's interval to pass."""


class CallBatcher(Generic[ItemT, ResultT]):
    """Coalesces the calls of one group (module doc). One instance may serve several
    event loops: a group is per loop."""

    def __init__(
        self,
        max_batch: int = DEFAULT_MAX_BATCH,
        item_fault: Callable[[Exception], bool] = not_retryable,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        stall_s: float = DEFAULT_STALL_S,
    ) -> None:
        """``item_fault``: whether an error of a batched call may be one item's fault
        (its items are then sent again alone)."""
        if max_batch < 1 or max_in_flight < 1:
            raise ValueError("max_batch and max_in_flight must be at least 1")
        self._max_batch = max_batch
        self._max_in_flight = max_in_flight
        self._stall_s = stall_s
        self._item_fault = item_fault
        self._groups: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[Hashable, _Group[ItemT, ResultT]]
        ] = weakref.WeakKeyDictionary()
        self._sending: set[asyncio.Task[None]] = set()

    async def submit(
        self,
        group: Hashable,
        item: ItemT,
        call: BatchCall[ItemT, ResultT],
        interval_s: float = 0.0,
        caller: Hashable | None = None,
    ) -> ResultT:
        """``item``'s result from ``call`` (``call([item, ...])``, shared with the other
        items of ``group`` of its batch; the first's ``call`` is the one made).
        ``interval_s``: the group's batches go at least this far apart unless everyone is
        in (module doc; the last call's value holds); ``caller``: who calls, whose calls
        come one after another (None: unknown)."""
        loop = asyncio.get_running_loop()
        groups = self._groups.get(loop)
        if groups is None:
            groups = self._groups[loop] = {}
        state = groups.get(group)
        if state is None:
            state = groups[group] = _Group()
        state.interval_s = interval_s
        batch = state.gathering
        if batch is None:
            batch = state.gathering = _Batch(call)
            loop.call_soon(self._turn_ended, groups, group, state, batch)
        future: asyncio.Future[ResultT] = loop.create_future()
        batch.items.append(item)
        batch.futures.append(future)
        if caller is None:
            batch.anonymous = True
        else:
            state.callers.pop(caller, None)
            state.callers[caller] = loop.time()
            batch.callers.add(caller)
        if len(batch.items) >= self._max_batch:
            self._send(groups, group, state)
        elif batch.spaced:
            self._next(groups, group, state)  # everyone in yet?
        return await future

    def _turn_ended(
        self,
        groups: dict[Hashable, _Group[ItemT, ResultT]],
        group: Hashable,
        state: _Group[ItemT, ResultT],
        batch: _Batch[ItemT, ResultT],
    ) -> None:
        """The turn ``batch`` was opened in ended: send it unless enough are out (then
        the next answer sends it) or the group's last batch went too recently (then its
        timer does)."""
        if state.gathering is batch:
            self._next(groups, group, state)

    def _next(
        self,
        groups: dict[Hashable, _Group[ItemT, ResultT]],
        group: Hashable,
        state: _Group[ItemT, ResultT],
    ) -> None:
        """What the group does now that a turn ended, a batch came back or its timer
        fired: send what gathers if it may, else forget the group once it is idle."""
        if state.gathering is not None and state.in_flight >= self._max_in_flight:
            return  # the next answer comes back here
        if state.gathering is None and state.in_flight > 0:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        wait = state.last_sent + state.interval_s - now
        gathering = state.gathering
        if wait > 0 and not (gathering is not None and state.everyone_in(gathering, now)):
            # too soon after the last batch (or to forget it)
            if gathering is not None:
                gathering.spaced = True
            if state.timer is None:
                state.timer = loop.call_later(wait, self._woken, groups, group, state)
        elif state.gathering is not None:
            self._send(groups, group, state)
        elif groups.get(group) is state:
            del groups[group]

    def _woken(
        self,
        groups: dict[Hashable, _Group[ItemT, ResultT]],
        group: Hashable,
        state: _Group[ItemT, ResultT],
    ) -> None:
        state.timer = None
        self._next(groups, group, state)

    def _send(
        self,
        groups: dict[Hashable, _Group[ItemT, ResultT]],
        group: Hashable,
        state: _Group[ItemT, ResultT],
    ) -> None:
        """Send the group's gathering batch."""
        batch, state.gathering = state.gathering, None
        if batch is None:
            return
        state.in_flight += 1
        loop = asyncio.get_running_loop()
        state.last_sent = loop.time()
        task = loop.create_task(_send(batch, self._item_fault))
        self._sending.add(task)
        counted = True  # against max_in_flight

        def let_go() -> None:
            """``batch`` is out, answered or for too long: the next one may go."""
            nonlocal counted
            if not counted:
                return
            counted = False
            state.in_flight -= 1
            self._next(groups, group, state)  # send what gathered meanwhile

        stalled = loop.call_later(self._stall_s, let_go)

        def answered(task: asyncio.Task[None]) -> None:
            self._sending.discard(task)
            stalled.cancel()
            let_go()

        task.add_done_callback(answered)


async def _send(batch: _Batch[Any, Any], item_fault: Callable[[Exception], bool]) -> None:
    try:
        results = await batch.call(batch.items)
        if len(results) != len(batch.items):
            raise RuntimeError(
                f"a batched call gave {len(results)} results for {len(batch.items)} items"
            )
    except Exception as exc:
        if len(batch.items) > 1 and item_fault(exc):
            # Maybe one item's fault: each alone, so only that one fails.
            await asyncio.gather(
                *(
                    _send_alone(batch.call, item, future)
                    for item, future in zip(batch.items, batch.futures, strict=True)
                )
            )
        else:
            for future in batch.futures:
                _settle(future, exc=exc)
    except BaseException as exc:  # cancelled (the loop closing): no caller waits for ever
        for future in batch.futures:
            if not future.done():
                future.cancel()
        if not isinstance(exc, asyncio.CancelledError):
            raise
    else:
        for future, result in zip(batch.futures, results, strict=True):
            _settle(future, result=result)


async def _send_alone(call: BatchCall[Any, Any], item: Any, future: asyncio.Future[Any]) -> None:
    if future.done():  # its caller is gone (cancelled)
        return
    try:
        [result] = await call([item])
    except Exception as exc:
        _settle(future, exc=exc)
    else:
        _settle(future, result=result)


def _settle(
    future: asyncio.Future[Any], *, result: Any = None, exc: BaseException | None = None
) -> None:
    if future.done():  # its caller was cancelled
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)
