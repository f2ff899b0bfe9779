"""One scheduler for both runners: per-key order, bounded runs in flight, snapshots.

The local runner and the keyed Flink operator hand every accepted input to a
`RunScheduler`. Per key, inputs run strictly in the order they were accepted, one run at a
time (a `KeyQueue`); runs of different keys overlap while the memory they are counted for
(`run_bytes`: a waiting run's fixed cost plus its data's JSON) stays within
`max_in_flight_bytes` (and their number within `max_in_flight`, when set), the rest waiting
in the order they asked; one run always goes on, however large. A failed run is tried again
or abandoned under `input-failure.policy: skip` (the engine's `failure_retries`), or fails
the scheduler.

The scheduler never touches Flink or the caller's output: as runs go on it publishes, per
key, JSON snapshots (`RunEngine.dump_run`, `dump_key_state`) and the outputs runs sent;
the caller `take`s them (`KeyProgress`) and emits, writes keyed state or yields. Both
runners so go through the same JSON at the same points: a value that cannot be kept
fails a local run as it fails a Flink job.

Threads: runs go on on one asyncio loop. The local runner calls in from that loop; the
Flink operator calls in from its own thread while a `flink.loop_thread.LoopThread` runs
the loop, and passes that thread's `launch` so new runs start on the loop. Everything a
caller reads is published under the scheduler's lock; `KeyQueue.run` and `key_state` are
live objects only code on the loop touches.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.runtime.input_failure import refusal
from flink_agents.runtime.run_engine import RunEngine

__all__ = [
    "RUN_BYTES",
    "RUN_BYTES_PER_JSON_CHAR",
    "KeyProgress",
    "KeyQueue",
    "Launch",
    "RunScheduler",
    "RunSchedulerStats",
    "admit",
    "run_bytes",
    "runs_within",
]

Launch = Callable[[Callable[[], None]], None]
"""Runs a callback on the scheduler's loop (with that loop set as the running one)."""

_WAITED_S = 0.001
"""A run that took at least this long waited for something (runs that need no waiting
take microseconds)."""


RUN_BYTES = 16 * 1024
"""Memory a run in progress holds besides its data: measured at 15-17 KB for a run waiting
on a model call (the suspended frames from the scheduler down to the call, its context, its
events and messages; `tools/bench/scale.py`'s probe, docs/benchmarks.md)."""

RUN_BYTES_PER_JSON_CHAR = 4
"""Memory a run's data takes per character of its JSON (its input, then its snapshot).
Measured with tracemalloc on runs waiting on a model call: 1.0 byte per character for an
input that is one long text (the run's events and messages share the string), 5.6 for
an input of many small objects (a list of 2,500 small dicts); 4 sits between."""

_DEFAULT_MAX_BYTES: int = AgentExecutionOptions.MAX_IN_FLIGHT_RUNS_BYTES.default


def run_bytes(json_chars: int) -> int:
    """The memory a run is counted for: `RUN_BYTES` plus `RUN_BYTES_PER_JSON_CHAR` per
    character of its data's JSON (its input when it starts, its latest snapshot later)."""
    return RUN_BYTES + RUN_BYTES_PER_JSON_CHAR * json_chars


def runs_within(max_bytes: int, max_runs: int | None = None) -> int:
    """How many runs of the smallest size the bounds let go on at once (at least 1)."""
    by_bytes = max(1, max_bytes // RUN_BYTES)
    return by_bytes if max_runs is None else max(1, min(by_bytes, max_runs))


def admit(engine: RunEngine, key: str, value: Any) -> tuple[str, Any]:
    """An input's JSON (what keyed state keeps) and the value runs see: decoded from that
    JSON, so a run restored from state sees the same input. `InputRefusedError` naming
    `key` (the key's text): refused at the door, whatever made the value unkeepable (a type
    JSON cannot hold, a lone surrogate, an integer past the digit limit, nesting past the
    recursion limit, a method of the value that raised)."""
    try:
        encoded = engine.encode_input(value)
        return encoded, engine.decode_input(encoded)
    except Exception as exc:
        raise refusal(key, exc) from None


@dataclass(slots=True)
class KeyProgress:
    """What a caller takes from a key's queue: new outputs and the latest snapshots."""

    finished: list[list[Any]]
    """Per run finished since the last take, in input order: its outputs not taken yet."""
    sent: list[Any]
    """Outputs the run in progress sent since the last take."""
    run_json: str | None
    """Snapshot of the run in progress (None: no run in progress or none published)."""
    key_state_json: str | None
    """Key state consistent with `finished` and `run_json` (None: never changed)."""
    snapshot_changed: bool
    """Whether `run_json` or `key_state_json` changed since the last take."""
    taken: int
    """Outputs of the run in progress taken so far, these included."""
    idle: bool
    """Nothing queued or running (as of this take)."""
    published_at: float = 0.0
    """When (`time.monotonic`) the run in progress published `run_json`: the step it went
    on to, usually another wait, began then (0.0: no run in progress or none published)."""


@dataclass
class RunSchedulerStats:
    """Counters kept on the loop; callers copy them to metrics."""

    runs_started: int = 0
    runs_resumed: int = 0
    runs_finished: int = 0
    steps: int = 0
    runs_parked: int = 0
    """Runs waiting for a person's decisions now (`flink_agents.runtime.approvals`)."""


@dataclass(eq=False)
class KeyQueue:
    """One key's runs: the inputs waiting, the run in progress, what was published."""

    key: str
    """The key's text (`flink_agents.runtime.keys.encode_key`)."""
    agent_key: Any
    """The key itself, as runs see it."""
    key_state: Any
    waiting: deque[tuple[Any, int]] = field(default_factory=deque)
    """Accepted inputs whose run has not started, each with its JSON's length."""
    run: Any | None = None
    run_json: str | None = None
    run_outputs: list[Any] = field(default_factory=list)
    """Outputs of the run in progress as of `run_json` (replaced, never changed in place)."""
    key_state_json: str | None = None
    version: int = 0
    taken_version: int = 0
    finished: list[list[Any]] = field(default_factory=list)
    taken: int = 0
    """Outputs of the oldest run not taken in full that were taken already."""
    busy: bool = False
    """Inputs waiting or a run in progress (a task drives them)."""
    parked: bool = False
    """The run in progress waits for a person's decisions: no task drives it, the inputs
    waiting behind it wait (and are not counted in `buffered`), `decide` or `time_out`
    lets it go on."""
    run_bytes: int = 0
    """The memory the run in progress is counted for (`run_bytes`; 0: none)."""
    published_at: float = 0.0
    """When (`time.monotonic`) the run in progress last published `run_json` (`_publish`)."""


class RunScheduler:
    """Schedules agent runs per key on an asyncio loop (see the module doc).

    Args:
        engine: what starts and steps runs.
        max_in_flight: runs in progress at once (across keys), on top of the memory bound
            (None: no count).
        max_in_flight_bytes: the memory the runs in progress are counted for at most
            (`run_bytes`); a run that would go past it waits, unless nothing runs.
        max_buffered: accepted inputs not yet finished before `wait_for_capacity` blocks.
        snapshot_after_s: seconds a run must have been going before its intermediate
            states are published (fast runs only publish their end; outputs a run sends
            are published at once).
        launch: how a new key's task is started on the loop from another thread
            (`LoopThread.launch`); None: callers are on the loop.
        on_progress: called on the loop after a key published something to take.
    """

    def __init__(
        self,
        engine: RunEngine,
        *,
        max_in_flight: int | None = None,
        max_in_flight_bytes: int = _DEFAULT_MAX_BYTES,
        max_buffered: int = 10000,
        snapshot_after_s: float = 0.005,
        launch: Launch | None = None,
        on_progress: Callable[[KeyQueue], None] | None = None,
    ) -> None:
        if (max_in_flight is not None and max_in_flight < 1) or max_buffered < 1:
            raise ValueError("max_in_flight and max_buffered must be at least 1")
        if max_in_flight_bytes < 1:
            raise ValueError("max_in_flight_bytes must be at least 1")
        self._engine = engine
        self._max_in_flight = max_in_flight
        self._max_in_flight_bytes = max_in_flight_bytes
        self._max_buffered = max_buffered
        self._snapshot_after_s = snapshot_after_s
        self._launch = launch
        self._on_progress = on_progress
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queues: dict[str, KeyQueue] = {}
        self._buffered = 0
        self._running = 0
        self._running_bytes = 0
        self._failure: BaseException | None = None
        self._closed = False
        self._slot_waiters: deque[tuple[asyncio.Future[None], int]] = deque()
        """Runs waiting to go on, in the order they asked, with the bytes they need."""
        self._blocked_threads = 0
        """Threads blocked in `wait_for_capacity`, `wait_idle` or `wait_for_news` (notified
        only then)."""
        self._news: dict[KeyQueue, None] | None = None
        """Once `watch_news` was called: the keys that published something not taken yet,
        in the order they first did (what `wait_for_news` returns)."""
        self._tasks: set[asyncio.Task[None]] = set()
        """The task driving each busy key's runs."""
        self.stats = RunSchedulerStats()
        self.typical_wait_s = 0.0
        """A low estimate of how long runs that wait (for a model, a tool) take, from the
        recent ones (0: no such run yet). It follows shorter runs quickly and longer ones
        slowly, so it stays near the short end of a mix."""

    # ------------------------------------------------------------------ state

    @property
    def failure(self) -> BaseException | None:
        """The first exception a run raised under `input-failure.policy: fail`, if any."""
        return self._failure

    @property
    def buffered(self) -> int:
        """Accepted inputs whose run has not finished."""
        return self._buffered

    @property
    def running(self) -> int:
        """Runs in progress."""
        return self._running

    @property
    def running_bytes(self) -> int:
        """The memory the runs in progress are counted for (`run_bytes`)."""
        return self._running_bytes

    @property
    def queues(self) -> dict[str, KeyQueue]:
        """The keys held in memory, by key text (do not change)."""
        return self._queues

    def get(self, key: str) -> KeyQueue | None:
        """The queue of `key`, if it is in memory."""
        return self._queues.get(key)

    # ------------------------------------------------------------------ callers

    def create(
        self,
        key: str,
        agent_key: Any,
        *,
        key_state_json: str | None = None,
        run_json: str | None = None,
        inputs: Iterable[tuple[Any, int]] = (),
        taken: int = 0,
    ) -> KeyQueue:
        """Hold `key` in memory from what state holds.

        `inputs` are the decoded inputs waiting in state with their JSON's length, in
        order, including the one `run_json` is a run of (the first): a stored run is
        resumed, the rest wait behind it; `taken` of its outputs were taken before.
        """
        engine = self._engine
        key_state = (
            engine.load_key_state(key_state_json)
            if key_state_json is not None
            else engine.new_key_state()
        )
        queue = KeyQueue(
            key=key, agent_key=agent_key, key_state=key_state, key_state_json=key_state_json
        )
        waiting = deque(inputs)
        if run_json is not None:
            if not waiting:
                raise ValueError(f"key {key}: a stored run without its input")
            waiting.popleft()
            queue.run = engine.load_run(run_json)
            queue.run_json = run_json
            queue.run_outputs = list(engine.outputs(queue.run))
            queue.taken = taken
        queue.waiting = waiting
        count = len(waiting) + (1 if queue.run is not None else 0)
        if queue.run is not None and engine.is_parked(queue.run):
            queue.parked = True  # it waits as it did: no task, not counted
            count = 0
            self.stats.runs_parked += 1
        with self._lock:
            if key in self._queues:
                raise ValueError(f"key {key} is already held")
            self._queues[key] = queue
            if count:
                self._buffered += count
                queue.busy = True
        if count:
            self._start(queue)
        return queue

    def submit(self, queue: KeyQueue, value: Any, json_chars: int = 0) -> None:
        """Queue an input (as `admit` decoded it; `json_chars`: the length of its JSON)
        behind the key's earlier inputs. A run that needs no waiting may finish before this
        returns."""
        with self._lock:
            if self._queues.get(queue.key) is not queue:
                raise ValueError(f"key {queue.key}: its queue is no longer held")
            queue.waiting.append((value, json_chars))
            if queue.parked:  # behind the parked run, until it goes on
                return
            self._buffered += 1
            start = not queue.busy
            queue.busy = True
        if start:
            self._start(queue)

    def decide(self, queue: KeyQueue | None, key: str, approval: Any) -> bool:
        """Apply a `ToolApproval` (an input of the key with text `key`) to the key's parked
        run; True when the run goes on now. `ApprovalNotPendingError` when it decides
        nothing the run waits for: no run of the key is parked, or no such call waits
        (nothing changes then). The decision is in the snapshot `take` gives next."""
        engine = self._engine
        with self._lock:
            run = queue.run if queue is not None and queue.parked else None
            resumed = engine.decide(run, key, approval)  # raises when nothing waits
            assert queue is not None
            self._decided(queue, resumed)
        self._after_decision(queue, resumed)
        return resumed

    def time_out(self, queue: KeyQueue, now_ms: int) -> bool:
        """Deny the calls of the key's parked run whose approval timed out at `now_ms`;
        True when the run goes on now."""
        with self._lock:
            run = queue.run
            if not queue.parked or run is None:
                return False
            deadline = self._engine.approval_deadline_ms(run)
            if deadline is None or deadline > now_ms:
                return False
            resumed = self._engine.time_out(run, now_ms)
            self._decided(queue, resumed)
        self._after_decision(queue, resumed)
        return resumed

    def approval_deadline_ms(self, queue: KeyQueue) -> int | None:
        """When the key's parked run has a call time out (None: not parked, or never)."""
        with self._lock:
            if not queue.parked or queue.run is None:
                return None
            return self._engine.approval_deadline_ms(queue.run)

    def pending_approvals(self) -> list[Any]:
        """The `ApprovalRequest`s of every parked run's undecided calls."""
        with self._lock:
            parked = [q.run for q in self._queues.values() if q.parked and q.run is not None]
            return [r for run in parked for r in self._engine.pending_approvals(run)]

    def _decided(self, queue: KeyQueue, resumed: bool) -> None:
        """Under the lock: a parked run changed; publish it, and let it go on if `resumed`."""
        queue.run_json = self._engine.dump_run(queue.run)
        queue.version += 1
        if self._news is not None:
            self._news[queue] = None
        if resumed:
            queue.parked = False
            queue.busy = True
            self._buffered += 1 + len(queue.waiting)
            self.stats.runs_parked -= 1

    def _after_decision(self, queue: KeyQueue, resumed: bool) -> None:
        self._notify(queue)
        if resumed:
            self._start(queue)

    def take(self, queue: KeyQueue) -> KeyProgress:
        """Take the outputs published since the last take and the latest snapshots."""
        with self._lock:
            # Never the queue's own list: a run finishing after the lock is released
            # appends to that list, which this take would then give out as well.
            finished, queue.finished = queue.finished, []
            taken = queue.taken
            if finished and taken:
                finished[0] = finished[0][taken:]
                taken = 0
            sent: list[Any] = []
            run_outputs = queue.run_outputs
            if queue.run_json is not None and len(run_outputs) > taken:
                sent = run_outputs[taken:]
                taken = len(run_outputs)
            queue.taken = taken
            if self._news is not None:
                self._news.pop(queue, None)
            changed = queue.version != queue.taken_version
            queue.taken_version = queue.version
            return KeyProgress(
                finished=finished,
                sent=sent,
                run_json=queue.run_json,
                key_state_json=queue.key_state_json,
                snapshot_changed=changed,
                taken=taken,
                idle=not queue.busy,
                published_at=queue.published_at if queue.run_json is not None else 0.0,
            )

    def has_news(self, queue: KeyQueue) -> bool:
        """Whether `take` would return outputs or changed snapshots (no lock: a hint)."""
        return bool(queue.finished) or queue.version != queue.taken_version

    def has_outputs(self, queue: KeyQueue) -> bool:
        """Whether `take` would return outputs (no lock: a hint)."""
        return bool(queue.finished) or (
            queue.run_json is not None and len(queue.run_outputs) > queue.taken
        )

    def is_idle(self, queue: KeyQueue) -> bool:
        """Nothing waiting or running for the key (outputs may wait for `take`)."""
        return not queue.busy

    def settled(self, queue: KeyQueue) -> bool:
        """Idle, and every finished run taken."""
        with self._lock:
            return not queue.busy and not queue.finished

    def release(self, queue: KeyQueue) -> bool:
        """Forget an idle key; False (and kept) while busy or with outputs not taken (or a
        parked run's snapshot not taken: it is kept in state only once taken)."""
        with self._lock:
            if queue.busy or queue.finished or (queue.parked and self.has_news(queue)):
                return False
            if self._queues.get(queue.key) is queue:
                del self._queues[queue.key]
            return True

    def wait_idle(self, queue: KeyQueue, poll_s: float = 0.05) -> None:
        """Block (a thread other than the loop's) until the key has nothing waiting or
        running, a run failed or the scheduler was closed."""
        with self._changed:
            self._blocked_threads += 1
            try:
                while queue.busy and self._failure is None and not self._closed:
                    self._changed.wait(poll_s)
            finally:
                self._blocked_threads -= 1

    def watch_news(self) -> None:
        """From now on note the keys that publish something, for `wait_for_news` (keys
        with news from before: `has_news`)."""
        with self._lock:
            if self._news is None:
                self._news = {}

    def wait_for_news(self, poll_s: float = 0.05) -> list[KeyQueue]:
        """Block (a thread other than the loop's) until a key published something to take
        since `watch_news`, no run is left to wait for, a run failed or the scheduler was
        closed; the keys with news, in the order they first published (empty: none left).
        """
        with self._changed:
            news = self._news
            if news is None:
                raise RuntimeError("wait_for_news before watch_news")
            self._blocked_threads += 1
            try:
                while not news and self._buffered and self._failure is None and not self._closed:
                    self._changed.wait(poll_s)
            finally:
                self._blocked_threads -= 1
            queues = list(news)
            news.clear()
            return queues

    def wait_for_capacity(self, poll_s: float = 0.1) -> bool:
        """Block (a thread other than the loop's) while `max_buffered` inputs are waiting
        or running (backpressure); True when it waited."""
        if self._buffered < self._max_buffered:  # no lock: the common case
            return False
        waited = False
        with self._changed:
            self._blocked_threads += 1
            try:
                while (
                    self._buffered >= self._max_buffered
                    and self._failure is None
                    and not self._closed
                ):
                    waited = True
                    self._changed.wait(poll_s)
            finally:
                self._blocked_threads -= 1
        return waited

    def has_capacity(self) -> bool:
        """Fewer than `max_buffered` inputs are waiting or running."""
        return self._buffered < self._max_buffered

    def cancel(self) -> None:
        """On the loop: cancel every run; blocked threads return."""
        for task in list(self._tasks):
            task.cancel()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    # ------------------------------------------------------------------ the loop

    def _start(self, queue: KeyQueue) -> None:
        launch = self._launch
        if launch is None:
            self._start_task(queue)
        else:
            launch(lambda: self._start_task(queue))

    def _start_task(self, queue: KeyQueue) -> None:
        task = asyncio.get_running_loop().create_task(self._drive(queue))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _notify(self, queue: KeyQueue) -> None:
        """After publishing (under no lock): wake blocked threads and the caller."""
        if self._blocked_threads:
            with self._changed:
                self._changed.notify_all()
        on_progress = self._on_progress
        if on_progress is not None:
            on_progress(queue)

    def _fail(self, queue: KeyQueue, exc: BaseException) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = exc
        self._notify(queue)

    def _publish(self, queue: KeyQueue, run: Any, outputs: list[Any]) -> None:
        """Publish a snapshot of the run in progress with the outputs it sent so far."""
        engine = self._engine
        run_json = engine.dump_run(run)
        key_state_json = engine.dump_key_state(queue.key_state)
        self._recount(queue, run_bytes(len(run_json)))
        published_at = time.monotonic()
        with self._lock:
            queue.run_json = run_json
            queue.run_outputs = outputs
            queue.key_state_json = key_state_json
            queue.published_at = published_at
            queue.version += 1
            if self._news is not None:
                self._news[queue] = None
        self._notify(queue)

    def _fits(self, size: int) -> bool:
        """Whether a run counted for `size` bytes may go on beside those in progress."""
        running = self._running
        if running == 0:
            return True  # one run always goes on, however large
        limit = self._max_in_flight
        if limit is not None and running >= limit:
            return False
        return self._running_bytes + size <= self._max_in_flight_bytes

    def _take_free_slot(self, size: int) -> bool:
        """Go on at once if the run fits and nobody waits before it."""
        if not self._slot_waiters and self._fits(size):
            self._running += 1
            self._running_bytes += size
            return True
        return False

    async def _wait_for_slot(self, size: int) -> None:
        """Wait in order until the run fits (`_let_waiting_runs_on` counts it in)."""
        waiter = asyncio.get_running_loop().create_future()
        self._slot_waiters.append((waiter, size))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._give_back(size)  # counted in just before the cancel
            raise

    def _let_waiting_runs_on(self) -> None:
        """Count in the waiting runs that fit now, in the order they asked."""
        waiters = self._slot_waiters
        while waiters:
            waiter, size = waiters[0]
            if waiter.done():  # cancelled while it waited
                waiters.popleft()
                continue
            if not self._fits(size):
                return
            waiters.popleft()
            self._running += 1
            self._running_bytes += size
            waiter.set_result(None)

    def _give_back(self, size: int) -> None:
        """A run counted for `size` bytes ended: let waiting ones on."""
        self._running -= 1
        self._running_bytes -= size
        self._let_waiting_runs_on()

    def _recount(self, queue: KeyQueue, size: int) -> None:
        """The run in progress of `queue` is now counted for `size` bytes."""
        before = queue.run_bytes
        queue.run_bytes = size
        self._running_bytes += size - before
        if size < before:
            self._let_waiting_runs_on()

    async def _drive(self, queue: KeyQueue) -> None:
        """Run the key's inputs one after the other until none waits."""
        lock = self._lock
        try:
            while True:
                with lock:
                    if queue.parked or (queue.run is None and not queue.waiting):
                        queue.busy = False
                        break
                    resumed = queue.run is not None
                    if resumed:
                        value, json_chars = None, len(queue.run_json or "")
                    else:
                        value, json_chars = queue.waiting.popleft()
                size = run_bytes(json_chars)
                if not self._take_free_slot(size):
                    await self._wait_for_slot(size)
                queue.run_bytes = size
                try:
                    parked = await self._execute(queue, value, resumed)
                finally:
                    size, queue.run_bytes = queue.run_bytes, 0
                    self._give_back(size)
                if parked:
                    # Let go: from `_park` on, a decision may start the key's next task.
                    return
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self._fail(queue, exc)
            return
        self._notify(queue)

    def _observe_wait(self, seconds: float) -> None:
        typical = self.typical_wait_s
        if typical == 0.0:
            typical = seconds
        elif seconds < typical:
            typical += 0.3 * (seconds - typical)
        else:
            typical += 0.05 * (seconds - typical)
        self.typical_wait_s = typical

    async def _execute(self, queue: KeyQueue, value: Any, resumed: bool) -> bool:
        """One input's run to its end (tried again or abandoned under the skip policy), or
        until it parks (True)."""
        engine = self._engine
        stats = self.stats
        key_state = queue.key_state
        if resumed:
            run = queue.run
            stats.runs_resumed += 1
        else:
            run = queue.run = engine.start_run(queue.agent_key, value, key_state)
            stats.runs_started += 1
        started = time.monotonic()
        attempts = 1
        while True:
            try:
                await self._steps(queue, run, started)
                if engine.is_parked(run):
                    self._park(queue, run)
                    return True
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
                    run = queue.run = engine.retry_run(run, key_state)
                    continue
                # Abandoned: what it published before (maybe taken already), its failure.
                failure = engine.abandon_run(run, key_state, exc, attempts)
                outputs = [*queue.run_outputs, failure]
                break
        took = time.monotonic() - started
        if took >= _WAITED_S:
            self._observe_wait(took)
        key_state_json = engine.dump_key_state(key_state)
        with self._lock:
            queue.run = None
            queue.run_json = None
            queue.run_outputs = []
            queue.key_state_json = key_state_json
            queue.finished.append(outputs)
            queue.version += 1
            self._buffered -= 1
            stats.runs_finished += 1
            if self._news is not None:
                self._news[queue] = None
        self._notify(queue)
        return False

    def _park(self, queue: KeyQueue, run: Any) -> None:
        """`run` waits for decisions: published with its outputs (its approval requests),
        and let go of (`KeyQueue.parked`)."""
        engine = self._engine
        run_json = engine.dump_run(run)
        key_state_json = engine.dump_key_state(queue.key_state)
        with self._lock:
            queue.run_json = run_json
            queue.run_outputs = list(engine.outputs(run))
            queue.key_state_json = key_state_json
            queue.version += 1
            queue.parked = True
            queue.busy = False  # no task drives it from here (`_drive` returns)
            self._buffered -= 1 + len(queue.waiting)
            self.stats.runs_parked += 1
            if self._news is not None:
                self._news[queue] = None
        self._notify(queue)

    async def _steps(self, queue: KeyQueue, run: Any, started: float) -> None:
        """Step `run` to its end, or until it parks, publishing snapshots on the way."""
        engine = self._engine
        stats = self.stats
        key_state = queue.key_state
        is_done, step, run_outputs = engine.is_done, engine.step, engine.outputs
        is_parked, pending_approvals = engine.is_parked, engine.pending_approvals
        if is_done(run) or is_parked(run):
            return
        publish_from = started + self._snapshot_after_s
        published = len(run_outputs(run))  # a resumed run's earlier outputs were published
        while True:
            done = await step(run, key_state)
            stats.steps += 1
            if done or is_parked(run):
                break
            if pending_approvals(run):
                # Approval requests go out only once the run is parked: a decision never
                # finds its run still going.
                continue
            outputs = run_outputs(run)
            if len(outputs) > published or time.monotonic() >= publish_from:
                self._publish(queue, run, list(outputs))
                published = len(outputs)
