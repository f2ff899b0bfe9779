"""The durable-call record: run a call once, replay its recorded outcome after a failure.

Matching rules, for the call at a :class:`DurableCallKey` with digest ``d``:

- a record with digest ``d`` and an outcome: return (or raise) the outcome, do not call;
- a record with digest ``d`` and no outcome (begun, then the process died): record it begun
  again (:meth:`ActionStateStore.begin_again`), then call ``reconciler(*args, **kwargs)``
  when given and record what it returns (if it raises, the error propagates and nothing is
  recorded), otherwise run the call again;
- a record with another digest, or none: the code path changed (or this is the first run).
  That record and every later record of the run are dropped, the call is begun and runs live.

A live call's outcome is recorded before ``execute`` returns. A result that cannot be recorded
raises :class:`TypeError` and leaves the call begun without an outcome. An exception (any
:class:`Exception`) is recorded as its type and message and re-raised; cancellation and other
:class:`BaseException` are not recorded.

A call runs only after a begun record of it is written, a call run again included: so a store
that can be read but not written runs no call, and a side effect is made unrecorded at most
once per outage. Store operations that fail with :class:`DurableStoreUnavailableError` are
tried again with backoff (:class:`StoreRetry`); when the store still cannot be reached,
:class:`DurableStoreError` is raised: before the call when its begin cannot be recorded (the
call does not run), after it when its outcome cannot.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from flink_agents.api._callables import is_async_callable, is_awaitable
from flink_agents.runtime.durable.digest import call_digest, function_identity
from flink_agents.runtime.durable.outcome import error_outcome, replay_outcome, value_outcome
from flink_agents.runtime.durable.records import CallOutcome, DurableCallKey
from flink_agents.runtime.durable.retry import StoreRetry
from flink_agents.runtime.durable.store import ActionStateStore

__all__ = ["DurableCallKey", "DurableCallLog"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_Plan = tuple[Literal["replay", "pending", "live"], "CallOutcome | None"]


class DurableCallLog:
    """Runs durable calls through an :class:`ActionStateStore`.

    Safe to share between the event loop and worker threads. In :meth:`execute`, store I/O runs
    on a small private thread pool so the event loop never waits on a disk or network write.
    Picklable (configuration only) when its store is. ``retry`` says how long a store
    operation is tried again through an outage (default: :class:`StoreRetry`'s 60 s).
    """

    def __init__(
        self, store: ActionStateStore, *, io_threads: int = 4, retry: StoreRetry | None = None
    ) -> None:
        if io_threads < 1:
            raise ValueError("io_threads must be at least 1")
        self.store = store
        self.io_threads = io_threads
        self.retry = retry if retry is not None else StoreRetry()
        self._executor_lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._init_calls()

    def _init_calls(self) -> None:
        self._calls = threading.Condition()
        self._in_flight = 0
        """Live calls started and not recorded yet."""
        self._stopping = False
        """No new live call starts (see `finish_calls`)."""

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("_executor_lock", "_executor", "_calls"):
            state[name] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._executor_lock = threading.Lock()
        self._init_calls()

    # -- stopping: in-flight calls finish and are recorded ---------------------------------

    @property
    def in_flight(self) -> int:
        """Calls started whose outcome is not recorded (or replayed) yet."""
        return self._in_flight

    def finish_calls(self, timeout_s: float) -> int:
        """Start no new live call (they wait until cancelled); wait up to `timeout_s` for
        the calls in flight to finish and record their outcome. Returns how many are still
        in flight (0: all recorded, a restore replays them instead of calling again)."""
        with self._calls:
            self._stopping = True
            self._calls.wait_for(lambda: self._in_flight == 0, timeout=max(0.0, timeout_s))
            return self._in_flight

    def _enter_call(self) -> bool:
        """Count a call in (False, not counted: closing, no new call may start)."""
        with self._calls:
            if self._stopping:
                return False
            self._in_flight += 1
            return True

    def _leave_call(self) -> None:
        with self._calls:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._calls.notify_all()

    def __repr__(self) -> str:
        return f"DurableCallLog({self.store!r})"

    # -- the two halves of a call, both plain blocking store I/O ----------------------------

    def _plan(self, key: DurableCallKey, digest: str, function: str) -> _Plan:
        record = self.retry.call("get", lambda: self.store.get(key))
        if record is not None and record.digest == digest:
            if record.outcome is not None:
                return ("replay", record.outcome)
            # Run again only once that is recorded: a store that cannot be written now
            # fails here, instead of making the call again at every restart.
            self.retry.call("begin again", lambda: self.store.begin_again(key, digest))
            return ("pending", None)
        if record is not None:
            logger.warning(
                "durable call %s to %s: digest differs from the recorded call (code path or "
                "arguments changed); dropping it and the later records of the run, running live",
                key,
                function,
            )
        self.retry.call("begin", lambda: self.store.begin(key, digest))
        return ("live", None)

    def _finish(self, key: DurableCallKey, digest: str, outcome: CallOutcome) -> None:
        self.retry.call("record outcome", lambda: self.store.record_outcome(key, digest, outcome))

    @staticmethod
    def _log_pending(key: DurableCallKey, function: str, reconciling: bool) -> None:
        if reconciling:
            logger.warning(
                "durable call %s to %s was begun but has no recorded outcome; reconciling",
                key,
                function,
            )
        else:
            logger.warning(
                "durable call %s to %s was begun but has no recorded outcome and has no "
                "reconciler; running it again",
                key,
                function,
            )

    # -- async ------------------------------------------------------------------------------

    def _io_executor(self) -> ThreadPoolExecutor:
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self.io_threads, thread_name_prefix="durable-store"
                )
            return self._executor

    async def _in_io(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._io_executor(), functools.partial(fn, *args))

    @staticmethod
    async def _call_async(
        fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> Any:
        if is_async_callable(fn):
            return await fn(*args, **kwargs)
        result = await asyncio.to_thread(fn, *args, **kwargs)
        if is_awaitable(result):
            result = await result
        return result

    def _live_target(
        self,
        call_key: DurableCallKey,
        function: str,
        kind: str,
        fn: Callable[..., Any],
        reconciler: Callable[..., Any] | None,
    ) -> tuple[Callable[..., Any], bool]:
        """What to call when nothing is replayed, and whether its errors are recorded.

        A pending call (begun, no outcome) with a reconciler asks the reconciler, whose errors
        propagate unrecorded; otherwise the function runs and its errors are recorded.
        """
        if kind == "pending":
            self._log_pending(call_key, function, reconciler is not None)
            if reconciler is not None:
                return reconciler, False
        return fn, True

    async def execute(
        self,
        call_key: DurableCallKey,
        fn: Callable[..., Any],
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        reconciler: Callable[..., Any] | None = None,
    ) -> Any:
        """Run ``fn(*args, **kwargs)`` at most once per ``call_key`` (see the module doc).

        Async functions are awaited; sync ones run in a worker thread. The same holds for the
        reconciler.
        """
        function = function_identity(fn)
        digest = call_digest(fn, args, kwargs)
        if not self._enter_call():  # the operator is closing: this call waits to be cancelled
            await asyncio.get_running_loop().create_future()
        try:
            kind, recorded = await self._in_io(self._plan, call_key, digest, function)
            if kind == "replay":
                assert recorded is not None
                return replay_outcome(recorded)
            target, record_errors = self._live_target(call_key, function, kind, fn, reconciler)
            try:
                result = await self._call_async(target, args, kwargs)
            except Exception as exc:
                if record_errors:
                    await self._in_io(self._finish, call_key, digest, error_outcome(exc))
                raise
            outcome = value_outcome(result, function=function)
            await self._in_io(self._finish, call_key, digest, outcome)
            return result
        finally:
            self._leave_call()

    # -- sync -------------------------------------------------------------------------------

    def execute_sync(
        self,
        call_key: DurableCallKey,
        fn: Callable[..., Any],
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        reconciler: Callable[..., Any] | None = None,
    ) -> Any:
        """:meth:`execute` for sync functions, in the calling thread."""
        function = function_identity(fn)
        for name, target in (("function", fn), ("reconciler", reconciler)):
            if target is not None and is_async_callable(target):
                raise TypeError(
                    f"durable call to {function}: the {name} is async; use "
                    "durable_execute_async / DurableCallLog.execute"
                )
        digest = call_digest(fn, args, kwargs)
        kind, recorded = self._plan(call_key, digest, function)
        if kind == "replay":
            assert recorded is not None
            return replay_outcome(recorded)
        target, record_errors = self._live_target(call_key, function, kind, fn, reconciler)
        with self._calls:  # counted even while closing: a sync call cannot wait to be cancelled
            self._in_flight += 1
        try:
            try:
                result = _no_awaitable(target(*args, **kwargs), function)
            except Exception as exc:
                if record_errors:
                    self._finish(call_key, digest, error_outcome(exc))
                raise
            self._finish(call_key, digest, value_outcome(result, function=function))
            return result
        finally:
            self._leave_call()

    # -- housekeeping -----------------------------------------------------------------------

    async def forget(self, call_key: DurableCallKey) -> None:
        """Drop the record at ``call_key`` and every later record of its run.

        For an outcome that must not be replayed: a model call whose error failed the run is
        made again after the restart, not answered with the same error forever.
        """
        await self._in_io(self.retry.call, "drop records", lambda: self.store.drop_from(call_key))

    def prune(self, agent_key: str, up_to_seq: int) -> int:
        """Drop every record of the runs of ``agent_key`` with ``seq <= up_to_seq``.

        Call it once a completed checkpoint covers those runs' outputs.
        """
        return self.store.prune(agent_key, up_to_seq)

    def prune_many(self, up_to_seq_by_key: Mapping[str, int]) -> int:
        """:meth:`prune` for many keys at once (one transaction where the store allows)."""
        return self.store.prune_many(up_to_seq_by_key)

    def close(self) -> None:
        """Stop the I/O threads and close the store (both reopen on next use).

        Store operations waiting to be tried again give up at once.
        """
        self.retry.stop()
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        self.store.close()


def _no_awaitable(result: Any, function: str) -> Any:
    if is_awaitable(result):
        if inspect.iscoroutine(result):
            result.close()
        raise TypeError(
            f"durable call to {function} returned an awaitable from execute_sync; "
            "use durable_execute_async / DurableCallLog.execute"
        )
    return result
