"""`ActionContext`: the `RunnerContext` one action execution gets from the engine.

It collects the events the action sends (the engine commits them when the step
ends), gives ids to them deterministically from the run's position (so a replayed
run sends events with the same ids), gives the action its memories as `MemoryObject`s
(`flink_agents.runtime.memory`), adds the memory events when the action finishes, and
numbers the action's durable calls. Its long-term memory is the engine's backend scoped
to the run's key, each operation one of the action's durable calls
(`flink_agents.runtime.memory.long_term`).

Beyond upstream's `RunnerContext`, it has a small part for the runtime's built-in actions
(`flink_agents.runtime.builtin_actions`, `flink_agents.runtime.context_retrieval`), which
take an `ActionContext` (`builtin_action`) and use nothing else of the run or the engine:
`send_own_event`, `chat_loops`, `records_calls`, `next_call_index`,
`forget_durable_calls`, `approval_decisions`, `park`, `tracing`, `tool_threads`,
`tool_metadata`, `reports_executions` and `report_execution_reused`. Its execution
reports (`flink_agents.api.trace.ExecutionReporter`) are upstream's API.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from flink_agents._compat.pydantic import field_values
from flink_agents.api._callables import is_async_callable, is_awaitable
from flink_agents.api._event_ids import COUNTER_BITS, derived_bits, uuid_of
from flink_agents.api._trusted import trusted_instance
from flink_agents.api._values import check_state_value, crossing_value
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.event import Event, OutputEvent, event_class_for
from flink_agents.api.events.memory_event import MemoryEvent
from flink_agents.api.memory.long_term_memory import BaseLongTermMemory
from flink_agents.api.memory_object import MemoryObject, MemoryType
from flink_agents.api.metric_group import MetricGroup
from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.trace import ExecutionLifecycleEvents, ExecutionReporter
from flink_agents.runtime import approvals
from flink_agents.runtime.keys import encode_key
from flink_agents.runtime.memory import (
    MemoryAccess,
    MemoryRecorder,
    MemorySettings,
    StateMemoryObject,
    memory_events,
)

if TYPE_CHECKING:
    from flink_agents.api.agents.agent import ActionFunction
    from flink_agents.api.tools.tool import ToolMetadata
    from flink_agents.plan.agent_plan import ActionSpec
    from flink_agents.runtime.call_threads import CallThreadPool
    from flink_agents.runtime.durable.call_log import DurableCallLog
    from flink_agents.runtime.execution_reports import ExecutionReports
    from flink_agents.runtime.memory.internal_base_long_term_memory import (
        InternalBaseLongTermMemory,
    )
    from flink_agents.runtime.memory.long_term import ActionLongTermMemory
    from flink_agents.runtime.run_state import (
        ApprovalDecision,
        ApprovalWait,
        ChatLoopState,
        KeyState,
        RunState,
    )
    from flink_agents.runtime.tracing import RunTracing

__all__ = ["ActionContext", "builtin_action", "event_id_for", "key_digest", "key_text"]

T = TypeVar("T")
_LOG = logging.getLogger(__name__)
_OUTPUT_TYPE = OutputEvent.EVENT_TYPE


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


_cached_digest = functools.lru_cache(maxsize=16384)(_digest)


def key_digest(key: Any) -> str:
    """A short, stable digest of a key (the same in every process)."""
    # Every event id of a run embeds it: remember recent keys' digests.
    return _cached_digest(repr(key))


_STEP_SHIFT = 80
"""An id's bits 80 to 127 hold its step: clear of the version (76-79) and variant (62-63)
bits, above its ``n`` (below `COUNTER_BITS`)."""
_INPUT_STEP = (1 << 48) - 1
_BEGIN_STEP = (1 << 48) - 2


@functools.lru_cache(maxsize=16384)
def _run_id_base(digest: str, seq: int) -> int:
    # One digest per run (its actions' contexts ask for it again).
    return derived_bits(f"{digest}-{seq}")


def event_id_for(key: Any, seq: int, position: str | int, n: int = 0) -> uuid.UUID:
    """The id of an event of run ``(key, seq)``, the same on every replay: of its input or
    its run-begin event (``position`` ``"input"`` or ``"begin"``), or of the ``n``-th event
    the action of step ``position`` made (`ActionContext.next_event_id`).

    A version-4 UUID: the digest of ``<key digest>-<seq>`` (`derived_bits`), with the step
    and ``n`` put in bits that hold neither the version nor the variant.
    """
    if position == "input":
        step = _INPUT_STEP
    elif position == "begin":
        step = _BEGIN_STEP
    elif isinstance(position, int) and 0 <= position < _BEGIN_STEP:
        step = position
    else:
        raise ValueError(f"an event's position is 'input', 'begin' or a step, got {position!r}")
    if not 0 <= n < 1 << COUNTER_BITS:
        raise ValueError(f"n must be below 2 ** {COUNTER_BITS}, got {n}")
    return uuid_of(_run_id_base(key_digest(key), seq) ^ (step << _STEP_SHIFT) ^ n)


def key_text(key: Any) -> str:
    """The key as the text memory and run-begin events carry (as upstream: a string key is
    itself, any other key its JSON text)."""
    return key if isinstance(key, str) else encode_key(key)


def _sent_copy(event: Event, lineage: dict[str, Any]) -> Event:
    """A shallow copy of ``event`` (its own attributes dict) with ``lineage`` set, made
    without re-validation; the lineage is also written to ``event`` itself."""
    fields = field_values(event)
    fields.update(lineage)
    return trusted_instance(
        type(event),
        {**fields, "attributes": dict(fields["attributes"])},
        set(event.model_fields_set),
    )


_WARNED_BLOCKING: set[str] = set()


def _warn_blocking_call(action: str) -> None:
    """Warn once per action name that its sync durable call holds the event loop."""
    if action not in _WARNED_BLOCKING:
        _WARNED_BLOCKING.add(action)
        _LOG.warning(
            "ctx.durable_execute in the async action %r runs on the event loop: every key's "
            "runs wait while the call runs; use `await ctx.durable_execute_async(...)`",
            action,
        )


class Engine(Protocol):
    """What a context needs from the engine (`AgentEngine`)."""

    config: AgentConfiguration
    metrics: MetricGroup
    call_log: DurableCallLog | None
    memory: MemorySettings
    tracing: RunTracing | None

    @property
    def action_threads(self) -> CallThreadPool: ...

    @property
    def tool_threads(self) -> CallThreadPool: ...

    @property
    def long_term_memory(self) -> InternalBaseLongTermMemory: ...

    def get_resource(self, name: str, type: ResourceType) -> Resource: ...

    def tool_metadata(self, setup_name: str) -> list[ToolMetadata]: ...


def builtin_action(func: Callable[[Event, ActionContext], Awaitable[None]]) -> ActionFunction:
    """``func``, a built-in action taking the runtime's `ActionContext`, as a plan's action
    function (the engine runs every action of a plan with an `ActionContext`)."""
    return cast("ActionFunction", func)


class ActionContext(RunnerContext, ExecutionReporter):
    """The context of one action execution (``step`` is the run's ``action_steps`` when
    the action started).

    Its execution reports (`ExecutionReporter`) go to ``reports``, the action's lifecycle
    records (`flink_agents.runtime.execution_reports`); without them (no event log that
    records executions) they are dropped.
    """

    __slots__ = (
        "_action_group",
        "_call_index",
        "_calls_in_flight",
        "_engine",
        "_id_base",
        "_ids_made",
        "_key_state",
        "_long_term",
        "_reports",
        "_run",
        "_sensory",
        "_sent_ids",
        "_short_term",
        "event",
        "parked",
        "sent",
        "spec",
        "step",
    )

    def __init__(
        self,
        engine: Engine,
        run: RunState,
        key_state: KeyState,
        spec: ActionSpec,
        event: Event,
        step: int,
        reports: ExecutionReports | None = None,
    ) -> None:
        self._engine = engine
        self._reports = reports
        self._action_group: MetricGroup | None = None
        self._run = run
        self._key_state = key_state
        self.spec = spec
        self.event = event
        self.step = step
        self.sent: list[Event] = []
        self.parked: ApprovalWait | None = None
        """The event's wait for approval, when the action parked it (committed with the
        step, as what it sent)."""
        self._call_index = 0
        self._calls_in_flight = 0
        self._id_base: int | None = None
        self._ids_made = 0
        self._sent_ids: set[int] = set()
        self._sensory: StateMemoryObject | None = None
        self._short_term: StateMemoryObject | None = None
        self._long_term: ActionLongTermMemory | None = None

    # ------------------------------------------------------------------ identity

    @property
    def key(self) -> Any:
        return self._run.key

    @property
    def seq(self) -> int:
        """The run's input sequence number within its key."""
        return self._run.seq

    @property
    def action_name(self) -> str:
        """Name of the running action."""
        return self.spec.name

    # ------------------------------------------------------------------ events

    def send_event(self, event: Event) -> None:
        if not isinstance(event, Event):
            raise TypeError(f"send_event takes an Event, got {type(event).__name__}")
        try:  # refused here, the same on every runner (not when a checkpoint writes it)
            check_state_value(event.attributes, "attribute")
            if event.type == _OUTPUT_TYPE:  # it crosses to downstream as JSON (Flink)
                crossing_value(event.attributes.get("output"))
            if type(event) is Event and event_class_for(event.type) is not Event:
                # Event(type="_chat_request_event", ...): its class's view, as after a restore
                event = event_class_for(event.type).from_event(event)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"key {self._run.key!r}: a {event.type} event cannot be sent: {exc}"
            ) from None
        self._append(event)

    def send_own_event(self, event: Event) -> None:
        """Send an event the runtime built itself from values it checked (a built-in
        action's), which nobody else holds: no check at the door, and the run keeps the
        object itself, with its lineage set."""
        vars(event).update(self._lineage(event))
        self.sent.append(event)

    def next_event_id(self) -> uuid.UUID:
        """The id of the next event this action makes (or sends, made elsewhere):
        `event_id_for` of this run, this action's step and ``n`` (the events it made so
        far), the same when the run is replayed."""
        index = self._ids_made
        self._ids_made = index + 1
        base = self._id_base
        if base is None:
            run = self._run
            base = self._id_base = _run_id_base(key_digest(run.key), run.seq) ^ (
                self.step << _STEP_SHIFT
            )
        return uuid_of(base ^ index)

    def _lineage(self, event: Event) -> dict[str, Any]:
        """The id and upstream fields of ``event``, sent now: the id it was made with in
        this action, else (made elsewhere, or sent a second time) the next one."""
        event_id = event.id
        value = event_id.int
        sent_ids = self._sent_ids
        base = self._id_base
        # Made here: ``base ^ n`` for an ``n`` below the count of ids made (`next_event_id`).
        if base is None or value ^ base >= self._ids_made or value in sent_ids:
            event_id = self.next_event_id()
            value = event_id.int
        sent_ids.add(value)
        return {
            "id": event_id,
            "upstream_event_id": self.event.id,
            "upstream_action_name": self.spec.name,
        }

    def _append(self, event: Event) -> None:
        # The sender keeps its object (with the id it was given); the run holds a copy.
        self.sent.append(_sent_copy(event, self._lineage(event)))

    # ------------------------------------------------------------------ resources, memory

    def get_resource(
        self, name: str, type: ResourceType, metric_group: MetricGroup | None = None
    ) -> Resource:
        return self._engine.get_resource(name, type)

    @property
    def action_config(self) -> dict[str, Any]:
        return dict(self.spec.config)

    def get_action_config_value(self, key: str, default: Any = None) -> Any:
        return self.spec.config.get(key, default)

    def _recorder(self, memory_type: MemoryType) -> MemoryRecorder | None:
        if MemoryEvent.is_memory_type(self.event.type):
            return None  # what actions on memory events do makes no more memory events
        return self._engine.memory.recorder(memory_type)

    @property
    def sensory_memory(self) -> MemoryObject:
        memory = self._sensory
        if memory is None:
            access = MemoryAccess(
                root=self._run.sensory_memory,
                memory_type=MemoryType.SENSORY,
                recorder=self._recorder(MemoryType.SENSORY),
            )
            memory = self._sensory = StateMemoryObject(access)
        return memory

    @property
    def short_term_memory(self) -> MemoryObject:
        memory = self._short_term
        if memory is None:
            settings = self._engine.memory
            access = MemoryAccess(
                root=self._key_state.short_term_memory,
                memory_type=MemoryType.SHORT_TERM,
                recorder=self._recorder(MemoryType.SHORT_TERM),
                ttl=settings.ttl,
                touched=self._key_state.memory_touched_ms,
                clock_ms=settings.clock_ms,
            )
            memory = self._short_term = StateMemoryObject(access)
        return memory

    @property
    def long_term_memory(self) -> BaseLongTermMemory:
        memory = self._long_term
        if memory is None:
            from flink_agents.runtime.memory.long_term import ActionLongTermMemory

            memory = self._long_term = ActionLongTermMemory(
                backend=self._engine.long_term_memory,
                key=encode_key(self._run.key),
                execute=self._long_term_call,
            )
        return memory

    def _long_term_call(self, func: Callable[..., T], *args: Any) -> T:
        """One long-term memory operation: a durable call of the action, unless it is made
        inside one (upstream's agents wrap ``memory_set.add`` in ``durable_execute_async``):
        the enclosing call's record then holds its outcome, and a call index taken
        inside it would shift the numbers of the action's later calls on a replay."""
        if self._calls_in_flight:
            return func(*args)
        return self.durable_execute(func, *args)

    # ------------------------------------------------------------------ for built-in actions

    @property
    def chat_loops(self) -> dict[str, ChatLoopState]:
        """The run's open chat loops, by the id of the tool request each waits for
        (`RunState.chat_loops`)."""
        return self._run.chat_loops

    def approval_decisions(self, request_id: uuid.UUID) -> dict[str, ApprovalDecision] | None:
        """The decisions on the calls of tool request ``request_id`` that waited for a
        person, once all are made (None: it never waited, or still does)."""
        return approvals.decisions_for(self._run, request_id)

    def park(self, wait: ApprovalWait) -> None:
        """This event waits for a person's decisions (`flink_agents.runtime.approvals`)."""
        self.parked = wait

    @property
    def tracing(self) -> RunTracing | None:
        """The engine's spans (None when ``tracing.enabled`` is off)."""
        return self._engine.tracing

    @property
    def tool_threads(self) -> CallThreadPool:
        """The engine's threads for sync tools (`AgentEngine.tool_threads`)."""
        return self._engine.tool_threads

    def tool_metadata(self, setup_name: str) -> list[ToolMetadata]:
        """The metadata of the tools of chat model setup ``setup_name``
        (`AgentEngine.tool_metadata`)."""
        return self._engine.tool_metadata(setup_name)

    def finish(self) -> None:
        """The action returned: add its memory events to what it sent."""
        long_term = self._long_term
        if (
            long_term is not None
            and long_term.records
            and not MemoryEvent.is_memory_type(self.event.type)
        ):
            from flink_agents.runtime.memory.long_term import long_term_memory_events

            for event in long_term_memory_events(
                key_text(self._run.key), long_term.records, self._engine.memory.event_types
            ):
                self._append(event)
        short_term, sensory = self._short_term, self._sensory
        if short_term is None and sensory is None:
            return
        recorders = [
            None if memory is None else memory.recorder for memory in (short_term, sensory)
        ]
        if recorders == [None, None]:
            return
        for event in memory_events(key_text(self._run.key), *recorders):
            self._append(event)

    @property
    def config(self) -> AgentConfiguration:
        return self._engine.config

    @property
    def agent_metric_group(self) -> MetricGroup:
        return self._engine.metrics

    @property
    def action_metric_group(self) -> MetricGroup:
        group = self._action_group
        if group is None:  # looked up once per action execution
            group = self._engine.metrics.get_sub_group("action").get_sub_group(self.spec.name)
            self._action_group = group
        return group

    # ------------------------------------------------------------------ execution reports

    @property
    def reports_executions(self) -> bool:
        """Whether this action's execution reports are written anywhere (built-in actions
        build their reports' metadata only then)."""
        return self._reports is not None

    def report_execution_started(
        self,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        reports = self._reports
        if reports is not None:
            reports.started(entity_type, entity_name, entity_metadata)

    def report_execution_succeeded(
        self,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        reports = self._reports
        if reports is not None:
            reports.ended(
                ExecutionLifecycleEvents.EXECUTION_FINISHED_EVENT_TYPE,
                entity_type,
                entity_name,
                entity_metadata,
            )

    def report_execution_failed(
        self,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None,
        error: BaseException,
        problem_category: str | None = None,
    ) -> None:
        reports = self._reports
        if reports is not None:
            reports.ended(
                ExecutionLifecycleEvents.EXECUTION_FAILED_EVENT_TYPE,
                entity_type,
                entity_name,
                entity_metadata,
                error,
                problem_category,
            )

    def report_execution_reused(
        self,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """A call whose recorded outcome the durable call log replayed: it was not made
        again (upstream's ``reused`` status; not an `ExecutionReporter` method)."""
        reports = self._reports
        if reports is not None:
            reports.ended(
                ExecutionLifecycleEvents.EXECUTION_REUSED_EVENT_TYPE,
                entity_type,
                entity_name,
                entity_metadata,
            )

    # ------------------------------------------------------------------ durable calls

    def _call_key(self, call_index: int) -> Any:
        from flink_agents.runtime.durable.records import DurableCallKey

        # The key's typed text: keys 1 and "1" must never share records (None has no text
        # and is refused with TypeError before anything is recorded or run).
        return DurableCallKey(
            agent_key=encode_key(self._run.key),
            seq=self._run.seq,
            step=self.step,
            action=self.spec.name,
            call_index=call_index,
        )

    @property
    def records_calls(self) -> bool:
        """Whether a durable call log records this action's durable calls."""
        return self._engine.call_log is not None

    @property
    def next_call_index(self) -> int:
        """The call index the action's next durable call will get."""
        return self._call_index

    async def forget_durable_calls(self, first_call_index: int) -> None:
        """Drop the records of this action's durable calls from ``first_call_index`` on (and
        every later record of the run): after a restart those calls are made again."""
        log = self._engine.call_log
        if log is not None:
            await log.forget(self._call_key(first_call_index))

    def _take_call_index(self) -> int:
        index = self._call_index
        self._call_index += 1
        return index

    def durable_execute(
        self,
        func: Callable[..., T],
        *args: Any,
        reconciler: Callable[..., T] | None = None,
        **kwargs: Any,
    ) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:  # an async action: run it here, as upstream does, and say what it costs
            _warn_blocking_call(self.spec.name)
        if is_async_callable(func):
            raise TypeError("durable_execute takes a sync function; use durable_execute_async")
        index = self._take_call_index()
        log = self._engine.call_log
        self._calls_in_flight += 1
        try:
            if log is None:
                return func(*args, **kwargs)
            return log.execute_sync(self._call_key(index), func, args, kwargs, reconciler)
        finally:
            self._calls_in_flight -= 1

    def durable_execute_async(
        self,
        func: Callable[..., Any],
        *args: Any,
        reconciler: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> Awaitable[Any]:
        # The index is taken now, not when awaited: calls started in a fixed order keep
        # their numbers however they interleave.
        index = self._take_call_index()
        if self._engine.call_log is None and is_async_callable(func):
            return func(*args, **kwargs)  # nothing to record: the call itself
        return self._counted(self._durable_async(index, func, args, kwargs, reconciler))

    async def _counted(self, call: Awaitable[T]) -> T:
        """``call``, counted in flight while it runs (`_long_term_call`)."""
        self._calls_in_flight += 1
        try:
            return await call
        finally:
            self._calls_in_flight -= 1

    async def _durable_async(
        self,
        index: int,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        reconciler: Callable[..., Any] | None,
    ) -> Any:
        log = self._engine.call_log
        if log is not None:
            return await log.execute(self._call_key(index), func, args, kwargs, reconciler)
        if is_async_callable(func):
            return await func(*args, **kwargs)
        result = await self._engine.action_threads.run(
            functools.partial(func, *args, **kwargs), None
        )
        if is_awaitable(result):
            result = await result
        return result
