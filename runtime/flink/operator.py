"""`KeyedAgentOperator`: agent runs as a PyFlink KeyedProcessFunction.

One instance per subtask. `open` builds the run engine (through a picklable factory, so the
agent travels with the job), starts the run loop thread and declares the keyed state; the
callbacks delegate to `KeyedRuns`, over the `RunScheduler` both runners share, on a
`LoopThread`. Keyed state is JSON strings (`Types.STRING()`), and the
waiting inputs a `MapState[LONG, STRING]`.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field
from pyflink.common import Row, Types  # pyright: ignore[reportMissingImports]
from pyflink.datastream import (  # pyright: ignore[reportMissingImports]
    KeyedProcessFunction,
    OutputTag,
    RuntimeContext,
)
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor  # pyright: ignore[reportMissingImports]

from flink_agents.api._values import crossing_value
from flink_agents.api.approvals import ApprovalRequest
from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.runtime.flink.compat.pemja import java_class
from flink_agents.runtime.flink.compat.pyflink import java_runtime_context, keyed_state_backend
from flink_agents.runtime.flink.flink_metrics import FlinkMetricsBridge
from flink_agents.runtime.flink.keyed_runs import END_OF_INPUT_TIMER, KeyedRuns, PollPolicy
from flink_agents.runtime.flink.loop_thread import LoopThread
from flink_agents.runtime.flink.pickled_outputs import (
    hold_reducers,
    pickle_by_value,
    release_reducers,
)
from flink_agents.runtime.flink.session_cluster import warn_if_pemja_per_job
from flink_agents.runtime.flink.timer_outputs import TimerOutputs
from flink_agents.runtime.gc_tuning import tuning as collector_tuning
from flink_agents.runtime.input_failure import FailedInput, refusal
from flink_agents.runtime.keys import refused_key, refused_key_text
from flink_agents.runtime.metrics import InMemoryMetricGroup
from flink_agents.runtime.run_engine import RunEngine
from flink_agents.runtime.scheduler import RunScheduler, RunSchedulerStats

__all__ = [
    "APPROVAL_OUTPUT",
    "ERROR_OUTPUT",
    "AgentOperatorOptions",
    "EngineFactory",
    "KeyedAgentOperator",
    "SubtaskContext",
]

_LOG = logging.getLogger(__name__)

ERROR_OUTPUT = OutputTag("agent-errors", Types.PICKLED_BYTE_ARRAY())
"""The side output of failure records (`input-failure.policy: skip`)."""
APPROVAL_OUTPUT = OutputTag("agent-approval-requests", Types.PICKLED_BYTE_ARRAY())
"""The side output of `ApprovalRequest`s (tool calls waiting for a person)."""


def _unpickled_input(key: str, data: bytes) -> tuple[str, Any]:
    """An input as `environment.keyed_input` sent it: its key text and its value; one that
    cannot be unpickled here (its class not importable in the worker) comes under a refused
    key text, for `KeyedRuns.on_input` to apply the input-failure policy."""
    try:
        return key, pickle.loads(data)
    except Exception as exc:
        if refused_key(key) is not None:
            return key, "<an input that cannot be unpickled>"
        cause = refusal(key, exc)
        text = refused_key_text(key, cause.key, cause.cause_type, cause.cause_message)
        return text, "<an input that cannot be unpickled>"


def _routed(outputs: list[Any]) -> Iterator[Any]:
    """Outputs to the main output in the form upstream's JSON crossing gives them
    (`crossing_value`: a pydantic model as its JSON dict, Rows kept), failure records to
    `ERROR_OUTPUT` as they are (their classes made to pickle by value, see
    `pickled_outputs`), approval requests to `APPROVAL_OUTPUT`."""
    for output in outputs:
        if type(output) is FailedInput:
            pickle_by_value(output.record)
            yield ERROR_OUTPUT, output.record
        elif type(output) is ApprovalRequest:
            yield APPROVAL_OUTPUT, output
        else:
            yield crossing_value(output)  # checked when its OutputEvent was sent


class AgentOperatorOptions(BaseModel):
    """Tuning of the keyed agent operator (per subtask)."""

    max_in_flight_bytes: int = Field(
        default=AgentExecutionOptions.MAX_IN_FLIGHT_RUNS_BYTES.default, ge=1
    )
    """The memory runs in progress are counted for at most (`scheduler.run_bytes`; model
    and tool calls of different keys overlap)."""
    max_in_flight: int | None = Field(default=None, ge=1)
    """Runs in progress at once at most, on top of the memory bound (None: no count)."""
    max_buffered: int = Field(default=10000, ge=1)
    """Accepted inputs not yet finished before the operator stops taking input."""
    poll: PollPolicy = Field(default_factory=PollPolicy)
    """How often a busy key is checked for finished runs."""
    snapshot_after_ms: float = Field(default=5.0, ge=0)
    """A run publishes intermediate snapshots (checkpointed) once it ran this long."""
    metrics_interval_s: float = Field(default=1.0, gt=0)
    """How often agent metrics are copied to Flink's metric group."""
    max_cached_keys: int = Field(default=10000, ge=1)
    """Idle keys kept in memory (their next input reads no state)."""
    gc_tuning: bool = True
    """Tune Python's collector while the subtask is open (`gc.tuning`,
    `flink_agents.runtime.gc_tuning`)."""
    gc_freeze: bool = False
    """With `gc_tuning`, also freeze the objects that exist at `open` (`gc.freeze`)."""
    inline_runs: bool = True
    """Start runs on the operator thread when the loop is free, so runs that need no
    waiting finish inside the Flink callback (`LoopThread`; off: every input is handed to
    the loop thread)."""


@dataclass(frozen=True)
class SubtaskContext:
    """What an engine factory learns about the subtask it builds an engine for."""

    task_name: str
    subtask_index: int
    parallelism: int
    attempt: int
    metrics: InMemoryMetricGroup
    """The agent's metrics of this subtask; copied to Flink's metric group."""
    runtime_context: Any = None
    """PyFlink's RuntimeContext (durable execution reads the job id and REST address)."""


EngineFactory = Callable[[SubtaskContext], RunEngine]
"""Builds the run engine in the worker (must be picklable)."""


def _task_info(runtime_context: RuntimeContext) -> tuple[str, int, int, int]:
    """Task name, subtask index, parallelism, attempt.

    PyFlink 2.3's thread-mode RuntimeContext calls Java getters that Flink 2 moved to
    `getTaskInfo()`, so read them from there when the direct getters fail.
    """
    try:
        return (
            runtime_context.get_task_name(),
            runtime_context.get_index_of_this_subtask(),
            runtime_context.get_number_of_parallel_subtasks(),
            runtime_context.get_attempt_number(),
        )
    except Exception:
        java_context = java_runtime_context(runtime_context)
        if java_context is None:  # process mode: the getters above are PyFlink's own
            raise
        info = java_context.getTaskInfo()
        return (
            str(info.getTaskName()),
            int(info.getIndexOfThisSubtask()),
            int(info.getNumberOfParallelSubtasks()),
            int(info.getAttemptNumber()),
        )


class _FlinkKeyedState:
    """`KeyedState` over PyFlink state objects (valid for the current key)."""

    __slots__ = ("_inputs", "_record", "_run")

    def __init__(self, record: Any, inputs: Any, run: Any) -> None:
        self._record = record
        self._inputs = inputs
        self._run = run

    def read_record(self) -> str | None:
        return self._record.value()

    def write_record(self, data: str) -> None:
        self._record.update(data)

    def get_input(self, position: int) -> str | None:
        return self._inputs.get(position)

    def put_input(self, position: int, data: str) -> None:
        self._inputs.put(position, data)

    def remove_input(self, position: int) -> None:
        self._inputs.remove(position)

    def read_run(self) -> str | None:
        return self._run.value()

    def write_run(self, data: str | None) -> None:
        if data is None:
            self._run.clear()
        else:
            self._run.update(data)


class _FlinkTimers:
    """`KeyTimers` over a PyFlink TimerService (valid during one callback)."""

    __slots__ = ("_service",)

    def __init__(self, service: Any) -> None:
        self._service = service

    def now(self) -> int:
        # Flink's processing time is the wall clock; reading it here saves a call into the
        # JVM (each one is a GIL hand-off in thread mode).
        return int(time.time() * 1000)

    def register_poll(self, timestamp: int) -> None:
        self._service.register_processing_time_timer(timestamp)

    def delete_poll(self, timestamp: int) -> None:
        self._service.delete_processing_time_timer(timestamp)

    def register_end_of_input(self) -> None:
        self._service.register_event_time_timer(END_OF_INPUT_TIMER)


class _CurrentKey:
    """Sets the current key of the subtask's keyed state backend (keyed state and timers
    follow it). The stream is keyed by a one-field row of the key's text (PyFlink's
    `key_by`): a Java `Row` in thread mode, where the backend is Flink's own, a Python
    `Row` in process mode, where it is PyFlink's in the worker."""

    __slots__ = ("_backend", "_java_row")

    def __init__(self, runtime_context: Any) -> None:
        backend, java = keyed_state_backend(runtime_context)
        self._backend: Any = backend
        self._java_row: Any = java_class("org.apache.flink.types.Row") if java else None

    def set(self, key: str) -> None:
        """Make the key with text `key` the current one."""
        java_row = self._java_row
        if java_row is None:
            self._backend.set_current_key(Row(key))
        else:
            row = java_row(1)
            row.setField(0, key)
            self._backend.setCurrentKey(row)


class _OtherKeys:
    """`OtherKeys` for one callback of key `own`: the operator's state and the callback's
    timer service, with another key made current for the `with` block."""

    __slots__ = ("_current", "_own", "_state", "_timers")

    def __init__(
        self, current: _CurrentKey, own: str, state: _FlinkKeyedState, timers: _FlinkTimers
    ) -> None:
        self._current = current
        self._own = own
        self._state = state
        self._timers = timers

    @contextlib.contextmanager
    def at(self, key: str) -> Iterator[tuple[_FlinkKeyedState, _FlinkTimers]]:
        current = self._current
        current.set(key)
        try:
            yield self._state, self._timers
        finally:
            current.set(self._own)


def _stop_runs(
    loop_thread: LoopThread,
    scheduler: RunScheduler,
    engine: RunEngine,
    tuned: bool,
    frozen: bool = False,
    finish_calls: bool = True,
) -> None:
    """Stop a subtask's runs and release its engine (and its holds on the collector tuning
    and the pickled outputs' reducers). With `finish_calls`, in-flight model and tool calls
    first get `durable-execution.stop-grace-s` to finish and record their outcome (a restore
    then replays them instead of calling again)."""
    # Not on the loop's own thread: the loop must go on to finish the calls.
    if finish_calls and not loop_thread.on_loop_thread():
        left = engine.finish_calls()
        if left:
            _LOG.warning(
                "%d model or tool call(s) still in flight when the agent operator "
                "stopped: a restore makes them again (durable-execution.stop-grace-s)",
                left,
            )
    try:
        loop_thread.close(before_stop=scheduler.cancel)
        engine.close()
    finally:
        release_reducers()
        if tuned:
            collector_tuning.release(freeze=frozen)


_LIVE_LOCK = threading.Lock()
_LIVE: dict[tuple[str, int], list[tuple[int, weakref.finalize]]] = {}
"""Per (operator, subtask): the attempt of each open instance here and how to stop its runs.
(PyFlink may open more than one instance per subtask and attempt.)"""


class KeyedAgentOperator(KeyedProcessFunction):
    """Runs an agent per key: one run at a time per key, many keys concurrently. Its
    stream is keyed by the agent key's text (`flink_agents.runtime.keys.encode_key`), as
    `apply` keys it.

    After a failure PyFlink calls `close` on neither the failed nor the cancelled instances,
    while a new attempt of the task may open in the same interpreter (thread mode, or the
    local process mode). So an instance stops its runs when one of its callbacks fails or
    when it is garbage collected, and a new instance of the same operator and subtask stops
    whatever an older one left running.
    """

    def __init__(
        self,
        engine_factory: EngineFactory,
        options: AgentOperatorOptions | None = None,
        state_prefix: str = "agent",
    ) -> None:
        self._operator_id = uuid.uuid4().hex
        self._slot: tuple[str, int] | None = None
        self._stop: weakref.finalize | None = None
        self._engine_factory = engine_factory
        self._options = options or AgentOperatorOptions()
        self._state_prefix = state_prefix
        self._runs: KeyedRuns | None = None
        self._engine: RunEngine | None = None
        self._scheduler: RunScheduler | None = None
        self._state: _FlinkKeyedState | None = None
        self._current_key: _CurrentKey | None = None
        self._metrics: FlinkMetricsBridge | None = None
        self._operator_counters: dict[str, Any] = {}
        self._sent_stats = RunSchedulerStats()
        self._next_flush = 0.0
        self._timer_outputs = TimerOutputs()

    # ------------------------------------------------------------------ lifecycle

    def open(self, runtime_context: RuntimeContext) -> None:
        warn_if_pemja_per_job()  # thread mode on a session cluster: see session_cluster
        task_name, index, parallelism, attempt = _task_info(runtime_context)
        prefix = self._state_prefix
        record = runtime_context.get_state(ValueStateDescriptor(f"{prefix}-key", Types.STRING()))
        inputs = runtime_context.get_map_state(
            MapStateDescriptor(f"{prefix}-inputs", Types.LONG(), Types.STRING())
        )
        run = runtime_context.get_state(ValueStateDescriptor(f"{prefix}-run", Types.STRING()))
        self._state = _FlinkKeyedState(record, inputs, run)
        self._current_key = _CurrentKey(runtime_context)
        self._timer_outputs = TimerOutputs()  # this instance's Java collector

        agent_metrics = InMemoryMetricGroup()
        context = SubtaskContext(
            task_name=task_name,
            subtask_index=index,
            parallelism=parallelism,
            attempt=attempt,
            metrics=agent_metrics,
            runtime_context=runtime_context,
        )
        engine = self._engine_factory(context)
        self._engine = engine
        options = self._options
        loop_thread = LoopThread(
            f"flink-agents-runs-{context.subtask_index}", inline=options.inline_runs
        )
        loop_thread.start()
        self._scheduler = RunScheduler(
            engine,
            max_in_flight=options.max_in_flight,
            max_in_flight_bytes=options.max_in_flight_bytes,
            max_buffered=options.max_buffered,
            snapshot_after_s=options.snapshot_after_ms / 1000.0,
            launch=loop_thread.launch,
        )
        # A cancelled task's instance is dropped without `close`: stop its runs when it goes.
        tuned = options.gc_tuning
        frozen = tuned and options.gc_freeze
        if tuned:
            collector_tuning.hold(freeze=frozen)
        hold_reducers()  # process-wide (copyreg): released with the runs, see pickled_outputs
        self._stop = weakref.finalize(
            self, _stop_runs, loop_thread, self._scheduler, engine, tuned, frozen
        )
        self._take_over(index, attempt)
        self._runs = KeyedRuns(
            engine,
            self._scheduler,
            options.poll,
            max_cached_keys=options.max_cached_keys,
            on_acknowledged=engine.run_acknowledged,
        )

        group: Any = runtime_context.get_metrics_group().add_group("flinkAgents")
        self._metrics = FlinkMetricsBridge(agent_metrics, group.add_group("agent"))
        self._operator_counters = {
            name: group.counter(name)
            for name in ("runsStarted", "runsResumed", "runsFinished", "steps", "parkedRuns")
        }
        self._sent_stats = RunSchedulerStats()
        _LOG.info(
            "keyed agent operator open: subtask %d/%d, attempt %d",
            context.subtask_index,
            context.parallelism,
            context.attempt,
        )

    def _take_over(self, subtask_index: int, attempt: int) -> None:
        """Register as a live instance of this subtask; stop those of earlier attempts."""
        stop = self._stop
        assert stop is not None
        self._slot = (self._operator_id, subtask_index)
        with _LIVE_LOCK:
            live = _LIVE.setdefault(self._slot, [])
            stale = [s for a, s in live if a < attempt]
            live[:] = [(a, s) for a, s in live if a >= attempt and s.alive]
            live.append((attempt, stop))
        for earlier in stale:
            if earlier.alive:
                _LOG.info("stopping the runs of an earlier attempt of subtask %d", subtask_index)
                earlier()

    def close(self) -> None:
        """The task ends (end of input): in-flight model and tool calls get
        `durable-execution.stop-grace-s` to finish and record their outcome first. (On
        stop-with-savepoint PyFlink drops the instance without `close`: its finalizer does
        the same.)"""
        self._shutdown(finish_calls=True)

    def _shutdown(self, *, finish_calls: bool) -> None:
        with _LIVE_LOCK:
            live = _LIVE.get(self._slot) if self._slot is not None else None
            if live is not None:
                live[:] = [(a, s) for a, s in live if s is not self._stop]
                if not live:
                    del _LIVE[self._slot]  # type: ignore[arg-type]
        if self._scheduler is not None:
            with contextlib.suppress(Exception):  # metrics must not mask a failure
                self._flush_metrics(force=True)
        self._scheduler = self._engine = None
        stop = self._stop
        if stop is not None and stop.alive:
            _, _, args, _ = stop.detach()  # type: ignore[misc]
            _stop_runs(*args, finish_calls=finish_calls)

    # ------------------------------------------------------------------ callbacks

    def process_element(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, value: Any, ctx: Any
    ) -> Iterator[Any]:
        runs, state = self._runs, self._state
        assert runs is not None and state is not None
        try:
            key, value = _unpickled_input(ctx.get_current_key(), value)
            outputs = runs.on_input(key, value, state, _FlinkTimers(ctx.timer_service()))
            self._flush_metrics()
        except BaseException:
            self._shutdown(finish_calls=False)  # the task fails: stop its runs now
            raise
        yield from _routed(outputs)

    def on_timer(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, timestamp: int, ctx: Any
    ) -> Iterator[Any]:
        # Only the end-of-input timer has this timestamp (no processing time reaches it).
        if timestamp == END_OF_INPUT_TIMER:
            yield from self._drain(ctx)
            return
        runs, state = self._runs, self._state
        assert runs is not None and state is not None
        try:
            timers = _FlinkTimers(ctx.timer_service())
            outputs = runs.on_poll(ctx.get_current_key(), timestamp, state, timers)
            self._flush_metrics()
        except BaseException:
            self._shutdown(finish_calls=False)  # the task fails: stop its runs now
            raise
        yield from _routed(outputs)

    def _drain(self, ctx: Any) -> Iterator[Any]:
        """The end-of-input timer: every key's outputs leave as its runs finish (the Java
        side emits what this generator yields at once), not when the drain is over, and
        without the timer's end-of-time timestamp (`timer_outputs`)."""
        runs, state, current_key = self._runs, self._state, self._current_key
        assert runs is not None and state is not None and current_key is not None
        try:
            self._timer_outputs.erase_timestamp(ctx)
            key = ctx.get_current_key()
            timers = _FlinkTimers(ctx.timer_service())
            other_keys = _OtherKeys(current_key, key, state, timers)
            drain = runs.on_end_of_input(key, state, timers, other_keys)
        except BaseException:
            self._shutdown(finish_calls=False)
            raise
        while True:
            try:
                outputs = next(drain, None)
                if outputs is None:
                    # Not forced: every key's end-of-input timer comes here, the later ones
                    # with nothing to do (`close` flushes what is left).
                    self._flush_metrics()
                    return
                self._flush_metrics()
            except BaseException:
                self._shutdown(finish_calls=False)  # the task fails: stop its runs now
                raise
            yield from _routed(outputs)

    # ------------------------------------------------------------------ metrics

    def _flush_metrics(self, force: bool = False) -> None:
        bridge, scheduler = self._metrics, self._scheduler
        if bridge is None or scheduler is None:
            return
        now = time.monotonic()
        if not force and now < self._next_flush:
            return
        self._next_flush = now + self._options.metrics_interval_s
        bridge.flush()
        stats, sent = scheduler.stats, self._sent_stats
        for name, field in (
            ("runsStarted", "runs_started"),
            ("runsResumed", "runs_resumed"),
            ("runsFinished", "runs_finished"),
            ("steps", "steps"),
            ("parkedRuns", "runs_parked"),  # goes down as parked runs go on
        ):
            total = getattr(stats, field)
            delta = total - getattr(sent, field)
            if delta:
                self._operator_counters[name].inc(delta)
                setattr(sent, field, total)
