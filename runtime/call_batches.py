"""`CallBatcher`: calls of one kind made at once by many runs, sent as one batched call.

The context retrieval action makes two calls per request (the query's embedding, the store
lookup). With many runs in flight those calls come in bursts: every run that reached its
retrieval step in one turn of the event loop asks at once. A provider's SDK costs about
the same per request whatever its size, and a store answers several vectors in one query
for little more than one, so each such burst goes out as one call: an embedding request
carrying every query text, a lookup carrying every vector.

How it works: the first call of a group (``submit``'s ``group``: the store, the kind of
call, what must be equal within a batch) opens a batch and schedules its sending for the
end of the current turn of the loop; the calls of the same group made before then join
it (at most ``max_batch``; a full batch goes at once). Each caller awaits its own
item's result. Batching changes what is sent, never what a caller gets or what is
recorded: each run's durable call records its own result.

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

__all__ = ["DEFAULT_MAX_BATCH", "BatchCall", "CallBatcher", "not_retryable"]

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")

DEFAULT_MAX_BATCH = 128
"""Items one batched call carries at most."""

BatchCall = Callable[[list[ItemT]], Awaitable[Sequence[ResultT]]]
"""Sends a batch: one result per item, in order."""


def not_retryable(exc: Exception) -> bool:
    """The default test of an error one item may have caused: it is not ``retryable``."""
    return not getattr(exc, "retryable", False)


class _Batch(Generic[ItemT, ResultT]):
    __slots__ = ("call", "futures", "items")

    def __init__(self, call: BatchCall[ItemT, ResultT]) -> None:
        self.call = call
        self.items: list[ItemT] = []
        self.futures: list[asyncio.Future[ResultT]] = []


class CallBatcher(Generic[ItemT, ResultT]):
    """Coalesces the calls of one group made in the same turn of an event loop (module
    doc). One instance may serve several loops: a group is per loop."""

    def __init__(
        self,
        max_batch: int = DEFAULT_MAX_BATCH,
        item_fault: Callable[[Exception], bool] = not_retryable,
    ) -> None:
        """``item_fault``: whether an error of a batched call may be one item's fault
        (its items are then sent again alone)."""
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._max_batch = max_batch
        self._item_fault = item_fault
        self._open: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[Hashable, _Batch[ItemT, ResultT]]
        ] = weakref.WeakKeyDictionary()
        self._sending: set[asyncio.Task[None]] = set()

    async def submit(
        self, group: Hashable, item: ItemT, call: BatchCall[ItemT, ResultT]
    ) -> ResultT:
        """``item``'s result from ``call`` (``call([item, ...])``, shared with the other
        items of ``group`` submitted in this turn of the loop; the first's ``call`` is
        the one made)."""
        loop = asyncio.get_running_loop()
        batches = self._open.get(loop)
        if batches is None:
            batches = self._open[loop] = {}
        batch = batches.get(group)
        if batch is None:
            batch = batches[group] = _Batch(call)
            loop.call_soon(self._close, batches, group, batch)
        future: asyncio.Future[ResultT] = loop.create_future()
        batch.items.append(item)
        batch.futures.append(future)
        if len(batch.items) >= self._max_batch:
            self._close(batches, group, batch)
        return await future

    def _close(
        self,
        batches: dict[Hashable, _Batch[ItemT, ResultT]],
        group: Hashable,
        batch: _Batch[ItemT, ResultT],
    ) -> None:
        """Stop ``batch`` taking items and send it (once)."""
        if batches.get(group) is not batch:
            return  # already sent (full)
        del batches[group]
        task = asyncio.get_running_loop().create_task(_send(batch, self._item_fault))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)


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
