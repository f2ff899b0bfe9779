"""Agent runs on an asyncio loop beside the operator thread.

The keyed operator hands each key's inputs to a `RunScheduler`; a background thread runs an
asyncio loop that drives one run at a time per key, in input order, with at most
`max_in_flight` runs in progress across keys. The loop never touches Flink: it publishes,
at step boundaries, JSON snapshots of the run in progress and of the key state, plus the
outputs of finished runs. The operator thread `take`s those in its own callbacks and writes
them to keyed state.

Thread rules: `KeyWork.run` and `KeyWork.key_state` are live objects only code running on
the loop touches; everything the operator thread reads is published under the scheduler's
lock.

The loop is shared by two threads, one at a time: its own thread runs it while the operator
thread is away, and gives it up whenever it waits for I/O or a timer (an ownership lock
released around the selector's wait). In `submit` the operator thread takes the loop, starts
the key's run there and runs the loop's ready callbacks itself until nothing is ready: a run
that needs no real waiting (a fast model, a cached answer) finishes inside the callback that
accepted its input, with no thread switch, and a run that waits is left to the loop thread.
The operator thread never waits on the selector, so it never blocks on a model call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import selectors
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from flink_agents.api.redaction import redact
from flink_agents.runtime.flink.run_engine import RunEngine

__all__ = ["KeyWork", "Progress", "RunScheduler", "RunSchedulerStats"]

_LOG = logging.getLogger(__name__)

_NO_INPUT = object()


def _noop() -> None:
    pass


_PUMP_BUDGET_S = 0.002
"""How long the operator thread runs ready loop callbacks in one `submit` at most."""
_WAITED_S = 0.001
"""A run that took at least this long waited for something (inline runs take microseconds)."""
_OWNER_WAIT_S = 0.02
"""How long `submit` waits for the loop thread to give up the loop before it hands the
run over instead."""


class _SharedSelector(selectors.BaseSelector):
    """The loop's selector: the loop thread gives up loop ownership while it waits in it;
    on any other thread `select` returns no events at once (the operator thread never
    polls I/O or waits)."""

    def __init__(self, inner: selectors.BaseSelector, owner: threading.Lock) -> None:
        self._inner = inner
        self._owner = owner
        self.loop_thread: int | None = None
        self.deadline = float("inf")
        """Monotonic time until which the loop thread sleeps (inf: until woken)."""

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if threading.get_ident() != self.loop_thread:
            return []
        if timeout is not None and timeout <= 0:
            return self._inner.select(timeout)
        self.deadline = float("inf") if timeout is None else time.monotonic() + timeout
        self._owner.release()
        try:
            return self._inner.select(timeout)
        finally:
            self._owner.acquire()
            self.deadline = 0.0

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.get_key(fileobj)

    def get_map(self) -> Any:
        return self._inner.get_map()

    def close(self) -> None:
        self._inner.close()


@dataclass(slots=True)
class Progress:
    """What the operator thread takes from a key's work in one callback."""

    finished: list[list[Any]]
    """Outputs of each run finished since the last take, in input order."""
    run_json: str | None
    """Snapshot of the run in progress (None: no run started past the acknowledged ones)."""
    run_outputs: list[Any]
    """Outputs the run in progress had sent when `run_json` was taken (all of them, in order;
    empty without a run in progress)."""
    key_state_json: str | None
    """Key state consistent with `finished` and `run_json` (None: never changed)."""
    snapshot_changed: bool
    """Whether `run_json` or `key_state_json` changed since the last take."""
    idle: bool
    """Nothing queued or running (as of this take)."""


@dataclass
class RunSchedulerStats:
    """Counters the loop thread keeps; the operator thread flushes them to metrics."""

    runs_started: int = 0
    runs_resumed: int = 0
    runs_finished: int = 0
    steps: int = 0


@dataclass(eq=False)
class KeyWork:
    """One key's runs: inputs not started yet, the run in progress, published snapshots."""

    key: str
    key_state: Any
    queue: deque[Any] = field(default_factory=deque)
    run: Any | None = None
    run_json: str | None = None
    run_outputs: list[Any] = field(default_factory=list)
    """Outputs of the run in progress as of `run_json` (replaced, never changed in place)."""
    key_state_json: str | None = None
    version: int = 0
    taken_version: int = 0
    finished: list[list[Any]] = field(default_factory=list)
    active: bool = False
    """Inputs queued or a run in progress (a driver is on it)."""


class RunScheduler:
    """Runs agent runs on a private asyncio loop thread.

    Args:
        engine: what starts and steps runs.
        max_in_flight: runs in progress at once (across keys).
        max_buffered: accepted inputs not yet finished before `wait_for_capacity` blocks.
        snapshot_after: seconds a run must have been going before its intermediate states
            are published (fast runs only publish their end).
    """

    def __init__(
        self,
        engine: RunEngine,
        *,
        max_in_flight: int = 1000,
        max_buffered: int = 10000,
        snapshot_after: float = 0.005,
        thread_name: str = "flink-agents-runs",
    ) -> None:
        if max_in_flight < 1 or max_buffered < 1:
            raise ValueError("max_in_flight and max_buffered must be at least 1")
        self._engine = engine
        self._max_in_flight = max_in_flight
        self._max_buffered = max_buffered
        self._snapshot_after = snapshot_after
        self._thread_name = thread_name
        self._lock = threading.Lock()
        self._capacity = threading.Condition(self._lock)
        self._works: dict[str, KeyWork] = {}
        self._buffered = 0
        self._running = 0
        self._failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._slot_waiters: deque[asyncio.Future[None]] = deque()
        self._waiters = 0
        """Threads blocked in `wait_for_capacity` or `wait_idle` (notified only then)."""
        self._drivers: dict[KeyWork, asyncio.Task[None]] = {}
        """The task driving each busy key's runs."""
        self._to_start: list[KeyWork] = []
        self._wakeup_pending = False
        self._owner = threading.Lock()
        self._selector: _SharedSelector | None = None
        self.stats = RunSchedulerStats()
        self.typical_wait_s = 0.0
        """A low estimate of how long runs that wait (for a model, a tool) take, from the
        recent ones; busy keys are first looked at after about this long (0: no such run
        yet). It follows shorter runs quickly and longer ones slowly, so it stays near the
        short end of a mix."""

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the loop thread (idempotent)."""
        if self._thread is not None:
            return
        ready = threading.Event()

        owner = self._owner
        selector = _SharedSelector(selectors.DefaultSelector(), owner)
        self._selector = selector

        def run_loop() -> None:
            owner.acquire()
            selector.loop_thread = threading.get_ident()
            loop = asyncio.SelectorEventLoop(selector)
            asyncio.set_event_loop(loop)
            self._loop = loop
            ready.set()
            try:
                loop.run_forever()
            finally:
                for task in asyncio.all_tasks(loop):
                    task.cancel()
                with contextlib.suppress(Exception):
                    loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()
                owner.release()

        self._thread = threading.Thread(target=run_loop, name=self._thread_name, daemon=True)
        self._thread.start()
        ready.wait()

    def on_loop_thread(self) -> bool:
        """Whether the calling thread is the loop's own (it must not wait for runs)."""
        thread = self._thread
        return thread is not None and thread.ident == threading.get_ident()

    def close(self, timeout: float = 5.0) -> None:
        """Cancel every run and stop the loop thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        def cancel_all() -> None:
            for task in list(self._drivers.values()):
                task.cancel()
            loop.call_soon(loop.stop)

        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(cancel_all)
        thread.join(timeout)
        self._thread = None
        self._loop = None
        with self._capacity:
            self._capacity.notify_all()

    # ------------------------------------------------------------------ failure

    @property
    def failure(self) -> BaseException | None:
        """The first exception a run raised, if any (the job must fail with it)."""
        return self._failure

    def raise_if_failed(self) -> None:
        """Re-raise a run's exception on the calling (operator) thread."""
        failure = self._failure
        if failure is not None:
            message = redact(f"{type(failure).__name__}: {failure}")
            raise RuntimeError(f"an agent run failed: {message}") from failure

    def _fail(self, exc: BaseException) -> None:
        with self._capacity:
            first = self._failure is None
            if first:
                self._failure = exc
            self._capacity.notify_all()
        if first:  # the task fails with it; the log has the story (thread mode too)
            trace = redact("".join(traceback.format_exception(exc)))
            _LOG.error("an agent run failed: %s\n%s", redact(f"{type(exc).__name__}: {exc}"), trace)

    # ------------------------------------------------------------------ operator thread

    @property
    def buffered(self) -> int:
        """Accepted inputs whose run has not finished."""
        return self._buffered

    @property
    def running(self) -> int:
        """Runs in progress."""
        return self._running

    def get(self, key: str) -> KeyWork | None:
        """The in-memory work of `key`, if it has any."""
        return self._works.get(key)

    def create(
        self,
        key: str,
        *,
        key_state_json: str | None = None,
        run_json: str | None = None,
        inputs: Iterable[Any] = (),
    ) -> KeyWork:
        """Register work for `key` from what keyed state holds.

        `inputs` are the decoded inputs waiting in keyed state, in order, including the one
        `run_json` is a run of (the first): a stored run is resumed, the rest queue behind it.
        """
        engine = self._engine
        key_state = (
            engine.load_key_state(key_state_json)
            if key_state_json is not None
            else engine.new_key_state()
        )
        work = KeyWork(key=key, key_state=key_state, key_state_json=key_state_json)
        pending = deque(inputs)
        if run_json is not None:
            if not pending:
                raise ValueError(f"key {key!r}: a stored run without its input")
            pending.popleft()
            work.run = engine.load_run(run_json)
            work.run_json = run_json
            work.run_outputs = list(engine.outputs(work.run))
        work.queue = pending
        count = len(pending) + (1 if work.run is not None else 0)
        with self._lock:
            if key in self._works:
                raise ValueError(f"key {key!r} already has work")
            self._works[key] = work
            if count:
                self._buffered += count
                work.active = True
        if count:
            self._spawn(work)
        return work

    def submit(self, work: KeyWork, value: Any) -> None:
        """Queue an input behind the key's earlier inputs."""
        with self._lock:
            if self._works.get(work.key) is not work:
                raise ValueError(f"key {work.key!r}: work is no longer scheduled")
            work.queue.append(value)
            self._buffered += 1
            spawn = not work.active
            work.active = True
        if spawn:
            self._spawn(work)

    def take(self, work: KeyWork) -> Progress:
        """Take finished outputs and the latest snapshots."""
        with self._lock:
            finished = work.finished
            work.finished = []
            changed = work.version != work.taken_version
            work.taken_version = work.version
            idle = not work.active
            return Progress(
                finished=finished,
                run_json=work.run_json,
                run_outputs=work.run_outputs,
                key_state_json=work.key_state_json,
                snapshot_changed=changed,
                idle=idle,
            )

    def is_idle(self, work: KeyWork) -> bool:
        """Nothing queued or running for the key (finished outputs may wait for `take`)."""
        return not work.active

    def settled(self, work: KeyWork) -> bool:
        """Idle, and every finished output taken."""
        with self._lock:
            return not work.active and not work.finished

    def release(self, work: KeyWork) -> bool:
        """Forget an idle key's work; returns False (and keeps it) if it is busy or has
        outputs not taken yet."""
        with self._lock:
            if work.active or work.finished:
                return False
            if self._works.get(work.key) is work:
                del self._works[work.key]
            return True

    def has_news(self, work: KeyWork) -> bool:
        """Whether `take` would return finished outputs or changed snapshots (no lock: a
        hint)."""
        return bool(work.finished) or work.version != work.taken_version

    def wait_idle(self, work: KeyWork, poll: float = 0.05) -> None:
        """Block until the key has nothing queued or running (or a run failed)."""
        with self._capacity:
            self._waiters += 1
            try:
                while work.active and self._failure is None and self._loop is not None:
                    self._capacity.wait(poll)
            finally:
                self._waiters -= 1
        self.raise_if_failed()

    def wait_for_capacity(self, poll: float = 0.1) -> None:
        """Block while `max_buffered` inputs are waiting or running (backpressure)."""
        if self._buffered < self._max_buffered:  # no lock: the common case
            return
        waited = False
        with self._capacity:
            self._waiters += 1
            try:
                while self._buffered >= self._max_buffered and self._failure is None:
                    if self._loop is None:
                        return
                    waited = True
                    self._capacity.wait(poll)
            finally:
                self._waiters -= 1
        if waited:  # otherwise a failure surfaces in the next callback
            self.raise_if_failed()

    # ------------------------------------------------------------------ loop thread

    def _spawn(self, work: KeyWork) -> None:
        loop = self._loop
        if loop is None:
            raise RuntimeError("the run scheduler is not started")
        if asyncio.events._get_running_loop() is None and self._owner.acquire(
            timeout=_OWNER_WAIT_S
        ):
            # The loop thread is waiting for I/O or a timer (or was running callbacks, which
            # it stops doing within `_OWNER_WAIT_S` normally): start the run here.
            try:
                self._run_here(loop, work)
            finally:
                self._owner.release()
            return
        # Wake the loop once per batch: every wake-up is a socket write, and a thread
        # switch fought over the GIL with the operator thread.
        with self._lock:
            self._to_start.append(work)
            if self._wakeup_pending:
                return
            self._wakeup_pending = True
        loop.call_soon_threadsafe(self._start_drivers)

    def _run_here(self, loop: asyncio.AbstractEventLoop, work: KeyWork) -> None:
        """On the operator thread, owning the loop: start `work`'s driver and run ready
        callbacks until the loop has to wait; wake the loop thread if it must look again.

        Ready callbacks are run directly (timers and I/O are the loop thread's: it is
        woken when one is due before it would look anyway)."""
        selector = self._selector
        assert selector is not None
        base: Any = loop  # asyncio.BaseEventLoop internals: _ready, _scheduled
        ready: deque[asyncio.Handle] = base._ready
        asyncio.events._set_running_loop(loop)
        try:
            self._create_driver(loop, work)
            deadline = time.monotonic() + _PUMP_BUDGET_S
            while ready:
                handle = ready.popleft()
                if not handle._cancelled:  # type: ignore[attr-defined]
                    handle._run()  # type: ignore[attr-defined]
                if time.monotonic() >= deadline:
                    break
        finally:
            asyncio.events._set_running_loop(None)
        scheduled = base._scheduled
        if ready or (scheduled and scheduled[0].when() < selector.deadline):
            loop.call_soon_threadsafe(_noop)

    def _create_driver(self, loop: asyncio.AbstractEventLoop, work: KeyWork) -> None:
        itself: list[asyncio.Task[None]] = []  # the task, for `_drive` to remove itself
        task = loop.create_task(self._drive(work, itself))
        itself.append(task)
        self._drivers[work] = task

    def _start_drivers(self) -> None:
        with self._lock:
            works, self._to_start = self._to_start, []
            self._wakeup_pending = False
        loop = asyncio.get_running_loop()
        for work in works:
            self._create_driver(loop, work)

    def _publish(self, work: KeyWork, run: Any, outputs: list[Any]) -> None:
        """Publish a snapshot of the run in progress with the outputs it has sent so far."""
        engine = self._engine
        run_json = engine.dump_run(run)
        key_state_json = engine.dump_key_state(work.key_state)
        with self._lock:
            work.run_json = run_json
            work.run_outputs = outputs
            work.key_state_json = key_state_json
            work.version += 1

    # --------------------------------------------- runs in flight (loop thread only)

    async def _take_slot(self) -> None:
        """One of the `max_in_flight` run slots; waits in order when all are taken."""
        if self._running < self._max_in_flight and not self._slot_waiters:
            self._running += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._slot_waiters.append(waiter)
        try:
            await waiter  # the releasing run hands its slot over (`_running` unchanged)
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._give_slot()  # handed over just before the cancel: pass it on
            raise

    def _give_slot(self) -> None:
        waiters = self._slot_waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._running -= 1

    async def _drive(self, work: KeyWork, itself: list[asyncio.Task[None]]) -> None:
        lock = self._lock
        try:
            while True:
                with lock:
                    if work.run is None and not work.queue:
                        work.active = False
                        if self._waiters:
                            self._capacity.notify_all()
                        return
                    value = work.queue.popleft() if work.run is None else _NO_INPUT
                await self._take_slot()
                try:
                    await self._execute(work, value)
                finally:
                    self._give_slot()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self._fail(exc)
        finally:
            if itself and self._drivers.get(work) is itself[0]:
                del self._drivers[work]

    def _observe_wait(self, seconds: float) -> None:
        typical = self.typical_wait_s
        if typical == 0.0:
            typical = seconds
        elif seconds < typical:
            typical += 0.3 * (seconds - typical)
        else:
            typical += 0.05 * (seconds - typical)
        self.typical_wait_s = typical

    async def _execute(self, work: KeyWork, value: Any) -> None:
        engine = self._engine
        stats = self.stats
        if value is _NO_INPUT:
            run = work.run
            stats.runs_resumed += 1
        else:
            run = engine.start_run(work.key, value, work.key_state)
            work.run = run
            stats.runs_started += 1
        key_state = work.key_state
        started = time.monotonic()
        attempts = 1
        while True:
            try:
                await self._steps(work, run, key_state, started)
                outputs = list(engine.outputs(run))
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                retries = engine.failure_retries
                if retries is None:  # input-failure.policy: fail
                    raise
                if attempts <= retries:
                    attempts += 1
                    run = work.run = engine.retry_run(run, key_state)
                    continue
                # Abandoned: what it sent before (maybe emitted already), then its failure.
                failure = engine.abandon_run(run, key_state, exc, attempts)
                outputs = [*work.run_outputs, failure]
                break
        took = time.monotonic() - started
        if took >= _WAITED_S:
            self._observe_wait(took)
        key_state_json = engine.dump_key_state(key_state)
        with self._lock:
            work.run = None
            work.run_json = None
            work.run_outputs = []
            work.key_state_json = key_state_json
            work.finished.append(outputs)
            work.version += 1
            self._buffered -= 1
            stats.runs_finished += 1
            if self._waiters:
                self._capacity.notify_all()

    async def _steps(self, work: KeyWork, run: Any, key_state: Any, started: float) -> None:
        """Step `run` to its end, publishing snapshots on the way."""
        engine = self._engine
        stats = self.stats
        is_done, step, run_outputs = engine.is_done, engine.step, engine.outputs
        publish_from = started + self._snapshot_after
        published = len(run_outputs(run))  # a resumed run's earlier outputs were published
        while not is_done(run):
            await step(run, key_state)
            stats.steps += 1
            if is_done(run):
                break
            # Outputs a run sends are published at once (with the snapshot that holds them);
            # other snapshots once the run has gone on for a while.
            outputs = run_outputs(run)
            if len(outputs) > published or time.monotonic() >= publish_from:
                self._publish(work, run, list(outputs))
                published = len(outputs)
