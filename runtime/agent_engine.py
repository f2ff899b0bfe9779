"""`AgentEngine`: runs an agent's runs step by step; the `RunEngine` the scheduler drives
on both runners.

One engine per process (or operator subtask) holds the plan, builds resources on first use
and shares them across keys. A run advances one event per `step`; between steps its
`RunState` is a consistent snapshot (see `flink_agents.runtime.run_state`). Inputs, runs
and key state go to and from JSON here (the value codec, `RunState` and `KeyState` JSON),
the same on both runners. The engine never decides ordering across inputs: the scheduler
runs one run per key at a time, in input order.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic_core import from_json, to_json

from flink_agents._compat.pydantic import field_values
from flink_agents.api._trusted import trusted_instance
from flink_agents.api._values import check_state_value, decode_value, encode_value
from flink_agents.api.agents.agent import Agent
from flink_agents.api.approvals import ApprovalRequest, ToolApproval
from flink_agents.api.core_options import (
    AgentConfigOptions,
    AgentConfiguration,
    AgentExecutionOptions,
    ConditionEvaluationFailureStrategy,
    InputFailurePolicy,
)
from flink_agents.api.events.event import (
    Event,
    InputEvent,
    OutputEvent,
    bind_event_ids,
    release_event_ids,
)
from flink_agents.api.events.run_event import AGENT_RUN_BEGIN_ACTION, AgentRunBeginEvent
from flink_agents.api.metric_group import Counter, Histogram, MetricGroup
from flink_agents.api.redaction import redact
from flink_agents.api.resource import (
    Resource,
    ResourceDescriptor,
    ResourceType,
    bind_resource_metric_group,
    release_resource_metric_group,
)
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.tools.tool import BaseTool, ToolMetadata
from flink_agents.plan.agent_plan import ActionSpec, AgentPlan, ConditionErrorHandler, ResourceSpec
from flink_agents.plan.trigger_condition import TriggerCondition
from flink_agents.runtime import approvals
from flink_agents.runtime.action_context import ActionContext, event_id_for, key_text
from flink_agents.runtime.approvals import is_parked, settle
from flink_agents.runtime.builtin_actions import builtin_action_specs
from flink_agents.runtime.call_threads import TOOL_EXTRA_AFTER_S, CallThreadPool
from flink_agents.runtime.durable import DurableCallLog
from flink_agents.runtime.errors import (
    ActionExecutionError,
    TriggerConditionFailedError,
    UnhandledEventError,
)
from flink_agents.runtime.event_log import EventLog
from flink_agents.runtime.execution_reports import execution_reports
from flink_agents.runtime.input_failure import FailedInput, failure_record, log_failure
from flink_agents.runtime.memory import MemorySettings, purge_expired, run_begin_snapshot
from flink_agents.runtime.metrics import InMemoryMetricGroup
from flink_agents.runtime.request_gate import gate_requests
from flink_agents.runtime.run_state import (
    ApprovalWait,
    KeyState,
    RunStart,
    RunState,
    trusted_model,
)
from flink_agents.runtime.skill.tools import add_skill_tools

if TYPE_CHECKING:
    from flink_agents.runtime.memory.internal_base_long_term_memory import (
        InternalBaseLongTermMemory,
    )
    from flink_agents.runtime.tracing import RunTracing

__all__ = ["AgentEngine", "ResourceSource", "RunAcknowledgments"]

_LOG = logging.getLogger(__name__)

_OUTPUT_TYPE = OutputEvent.EVENT_TYPE


class RunAcknowledgments(Protocol):
    """Hears which runs were acknowledged (emitted and out of keyed state, so their
    durable records may go) and closes with the engine (Flink:
    `flink.durability.SubtaskDurability`, which prunes those records and closes the
    subtask's call log)."""

    def run_acknowledged(self, key: str, seq: int) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class ResourceSource(Protocol):
    """A resource that offers others by name: an MCP server
    (`flink_agents.integrations.mcp.MCPServer`) offers its tools and prompts. A tool or
    prompt name the agent does not declare is looked up in its MCP servers."""

    def offered_resource(self, name: str, resource_type: ResourceType) -> Resource | None:
        """The resource of that name and type, or None when this source has none."""
        ...


_OFFERED_TYPES = (ResourceType.TOOL, ResourceType.PROMPT)
"""The types a name of which may come from a `ResourceSource`."""


def _no_conditions(spec: ActionSpec, condition: TriggerCondition, exc: Exception) -> None:
    """The condition handler of a plan without conditions (never called)."""
    raise AssertionError("a plan without trigger conditions evaluated one") from exc


class AgentEngine:
    """Runs agent runs step by step; see the module doc.

    An `Agent` is compiled into a plan with the built-in chat and tool actions
    (`flink_agents.runtime.builtin_actions`); an `AgentPlan` runs as given.

    Picklable (cloudpickle for agents defined in scripts) before and after use: built
    resources, the thread pool and the event log are recreated where it is unpickled.
    ``call_log`` is the durable call log (`DurableCallLog`, `flink_agents.runtime.durable`)
    that records model and tool calls; ``metrics`` a `MetricGroup` (in memory by default);
    ``event_log`` defaults to the one the options ask for (``baseLogDir``,
    ``eventLoggerType``, ``event-log.level``); ``acknowledgments`` hears of acknowledged
    runs and closes with the engine.
    """

    def __init__(
        self,
        agent: Agent | AgentPlan,
        config: AgentConfiguration | Mapping[str, Any] | None = None,
        *,
        call_log: DurableCallLog | None = None,
        metrics: MetricGroup | None = None,
        event_log: EventLog | None = None,
        shared_resources: Mapping[ResourceType, Mapping[str, ResourceSpec]] | None = None,
        acknowledgments: RunAcknowledgments | None = None,
        batch_scheduling: bool = False,
    ) -> None:
        self.agent_name: str | None = None if isinstance(agent, AgentPlan) else type(agent).__name__
        """The agent's class name (None for a plan): ``gen_ai.agent.name`` of its spans."""
        if isinstance(agent, AgentPlan):
            self.plan = agent
        else:
            self.plan = AgentPlan.from_agent(
                agent, shared_resources=shared_resources, runtime_actions=builtin_action_specs()
            )
        add_skill_tools(self.plan)
        if isinstance(config, AgentConfiguration):
            self.config = config
        else:
            self.config = AgentConfiguration(config)
        self.call_log = call_log
        """Records the durable calls of the runs (None: calls are made, not recorded)."""
        self.acknowledgments = acknowledgments
        self.batch_scheduling = batch_scheduling
        """Whether the threads of sync actions and tools run under ``SCHED_BATCH`` (a woken
        one does not preempt the thread holding the GIL; see `CallThreadPool`)."""
        self.condition_failure: ConditionEvaluationFailureStrategy = self.config.get(
            AgentConfigOptions.CONDITION_EVALUATION_FAILURE_STRATEGY
        )
        """What a trigger condition that cannot be evaluated does."""
        self.keeps_run_start = (
            self.config.get(AgentExecutionOptions.INPUT_FAILURE_POLICY) is InputFailurePolicy.SKIP
        )
        """Runs keep their input and the key's memory at their start (to be tried again or
        abandoned cleanly under `input-failure.policy: skip`)."""
        self.failure_retries: int | None = (
            self.config.get(AgentExecutionOptions.INPUT_FAILURE_RETRIES)
            if self.keeps_run_start
            else None
        )
        """None: a failed run fails the job (`input-failure.policy: fail`); else how often it
        is tried again before it is abandoned."""
        logged = event_log is not None or EventLog.configured_kind(self.config) is not None
        self.memory = MemorySettings.from_config(self.config, self.plan.may_trigger, logged=logged)
        """Memory TTL, memory and run-begin events (`flink_agents.runtime.memory`)."""
        self._logged_only = frozenset(
            t for t in self.memory.event_types if not self.plan.may_trigger(t)
        )
        """Memory event types made for the event log alone: logged, never queued."""
        self.metrics: MetricGroup = metrics if metrics is not None else InMemoryMetricGroup()
        self._event_log = event_log
        self._event_log_ready = event_log is not None
        self._init_runtime()

    def _init_runtime(self) -> None:
        self._resources: dict[tuple[ResourceType, str], Resource] = {}
        self._lock = threading.RLock()
        self._action_threads: CallThreadPool | None = None
        self._tool_threads: CallThreadPool | None = None
        self._action_metrics: dict[str, tuple[Counter, Histogram, Counter]] = {}
        self._no_output_counter: Counter | None = None
        self._warned: set[tuple[str, str]] = set()
        self._long_term_memory: InternalBaseLongTermMemory | None = None
        self._tool_metadata: dict[str, list[ToolMetadata]] = {}
        self.tracing: RunTracing | None = self._open_tracing()
        """The runs' OpenTelemetry spans (`tracing.enabled`), or None (off: nothing of
        OpenTelemetry is imported)."""

    def _open_tracing(self) -> RunTracing | None:
        if not self.config.get(AgentConfigOptions.TRACING_ENABLED):
            return None
        from flink_agents.runtime.tracing import RunTracing

        return RunTracing(
            self.agent_name,
            record_content=self.config.get(AgentConfigOptions.TRACING_RECORD_CONTENT),
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in (
            "_resources",
            "_lock",
            "_action_threads",
            "_tool_threads",
            "_action_metrics",
            "_no_output_counter",
            "_warned",
            "_long_term_memory",
            "_tool_metadata",
            "tracing",
        ):
            state.pop(name, None)
        if state.get("_event_log") is not None:
            # An open stream does not travel: rebuild from the options where unpickled.
            state["_event_log"] = None
            state["_event_log_ready"] = False
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_runtime()

    # ------------------------------------------------------------------ services

    @property
    def event_log(self) -> EventLog | None:
        """The event log in use (opened from the options on first use), or None."""
        if not self._event_log_ready:
            with self._lock:
                if not self._event_log_ready:
                    self._event_log = EventLog.from_config(self.config)
                    self._event_log_ready = True
        return self._event_log

    @event_log.setter
    def event_log(self, value: EventLog | None) -> None:
        self._event_log = value
        self._event_log_ready = True

    @property
    def action_threads(self) -> CallThreadPool:
        """The threads sync actions and sync durable calls run on (not sync tools: they
        have `tool_threads`): as many as ``num-async-threads``, without a timeout."""
        if self._action_threads is None:
            with self._lock:
                if self._action_threads is None:
                    self._action_threads = CallThreadPool(
                        self.config.get(AgentExecutionOptions.NUM_ASYNC_THREADS),
                        thread_name_prefix="agent-action",
                        batch_scheduling=self.batch_scheduling,
                    )
        return self._action_threads

    @property
    def tool_threads(self) -> CallThreadPool:
        """The threads sync tools run on: as many as ``num-async-threads``, apart from the
        sync actions' `action_threads`, so hung tools cannot take the threads actions need.
        When every one has been blocked `TOOL_EXTRA_AFTER_S` while calls wait, extra threads
        start for those, and a timed-out call's thread is written off and replaced: up to
        ``tool-call.max-abandoned-threads`` threads beyond them (see `CallThreadPool`)."""
        if self._tool_threads is None:
            with self._lock:
                if self._tool_threads is None:
                    self._tool_threads = CallThreadPool(
                        self.config.get(AgentExecutionOptions.NUM_ASYNC_THREADS),
                        max_abandoned=self.config.get(
                            AgentExecutionOptions.TOOL_CALL_MAX_ABANDONED_THREADS
                        ),
                        thread_name_prefix="agent-tool",
                        batch_scheduling=self.batch_scheduling,
                        extra_after_s=TOOL_EXTRA_AFTER_S,
                    )
        return self._tool_threads

    def get_resource(self, name: str, type: ResourceType) -> Resource:
        """The named resource, built on first use and shared by all runs. A tool or
        prompt the agent does not declare comes from its MCP servers (`ResourceSource`);
        `KeyError` when none has it either."""
        cached = self._resources.get((type, name))
        if cached is not None:
            return cached
        with self._lock:
            cached = self._resources.get((type, name))
            if cached is None:
                cached = self._resolve_resource(name, type)
                cached.open()
                gate_requests(cached)
                self._resources[(type, name)] = cached
        return cached

    def _resolve_resource(self, name: str, type: ResourceType) -> Resource:
        try:
            spec = self.plan.resource_spec(name, type)
        except KeyError as undeclared:
            sources = list(self.plan.resources.get(ResourceType.MCP_SERVER, {}))
            if type not in _OFFERED_TYPES or not sources:
                raise
            offered = self._offered_resource(name, type, sources)
            if offered is None:
                message = f"{undeclared.args[0]}, and no MCP server ({sources}) offers it"
                raise KeyError(message) from None
            return offered
        return self._build_resource(spec, name, type)

    def _offered_resource(
        self, name: str, type: ResourceType, sources: list[str]
    ) -> Resource | None:
        """The tool or prompt ``name`` of the agent's MCP servers (each lists what it has
        on first use: a server that cannot be reached raises); `ValueError` when two
        offer it."""
        found: dict[str, Resource] = {}
        for source_name in sources:
            source = self.get_resource(source_name, ResourceType.MCP_SERVER)
            if isinstance(source, ResourceSource):
                offered = source.offered_resource(name, type)
                if offered is not None:
                    found[source_name] = offered
        if len(found) > 1:
            raise ValueError(
                f"the {type.value} {name!r} is offered by more than one MCP server "
                f"({sorted(found)}): declare it yourself, or keep one of the servers"
            )
        if not found:
            return None
        [resource] = found.values()
        if resource.get_resource is None:
            resource.get_resource = self.get_resource
        return resource

    def _build_resource(self, spec: ResourceSpec, name: str, type: ResourceType) -> Resource:
        if isinstance(spec, ResourceDescriptor):
            resource = spec.build(self.get_resource)
        elif isinstance(spec, Resource):
            resource = spec
            if resource.get_resource is None:
                resource.get_resource = self.get_resource
        elif callable(spec) and type is ResourceType.TOOL:
            resource = FunctionTool.from_function(spec, name=name)
            resource.get_resource = self.get_resource
        else:
            raise TypeError(f"{type.value} {name!r}: cannot build a resource from {spec!r}")
        if resource.resource_type() is not type:
            raise TypeError(
                f"resource {name!r} is a {resource.resource_type().value}, not a {type.value}"
            )
        return resource

    def tool_metadata(self, setup_name: str) -> list[ToolMetadata]:
        """The metadata of the tools chat model setup ``setup_name`` names, in order (for
        its model calls' durable digests): looked up once, kept as long as the resources."""
        tools = self._tool_metadata.get(setup_name)
        if tools is None:
            setup = self.get_resource(setup_name, ResourceType.CHAT_MODEL)
            names: list[str] = getattr(setup, "tools", [])
            tools = []
            for name in names:
                tool = self.get_resource(name, ResourceType.TOOL)
                if not isinstance(tool, BaseTool):
                    raise TypeError(f"tool {name!r} is a {type(tool).__name__}, not a tool")
                tools.append(tool.metadata)
            self._tool_metadata[setup_name] = tools
        return tools

    @property
    def long_term_memory(self) -> InternalBaseLongTermMemory:
        """The long-term memory backend the options set up (built on first use, shared by
        all runs; `LongTermMemoryError` when none is set up). Its items are scoped by the
        agent's class name, each action's view by the key (`ActionLongTermMemory`)."""
        backend = self._long_term_memory
        if backend is None:
            with self._lock:
                backend = self._long_term_memory
                if backend is None:
                    from flink_agents.runtime.memory.long_term import open_backend

                    backend = open_backend(self.config, self, self.agent_name or "agent")
                    self._long_term_memory = backend
        return backend

    def close(self) -> None:
        """Stop the thread pools, close the resources it built (`Resource.close`: an MCP
        server's session ends with the last engine of the process that uses it), the event
        log and the acknowledgments' receiver."""
        with self._lock:
            action_threads, self._action_threads = self._action_threads, None
            tool_threads, self._tool_threads = self._tool_threads, None
            resources, self._resources = self._resources, {}
            self._tool_metadata = {}
            long_term, self._long_term_memory = self._long_term_memory, None
            log = self._event_log if self._event_log_ready else None
            acknowledgments, self.acknowledgments = self.acknowledgments, None
            tracing = self.tracing
        for first in (long_term, action_threads, tool_threads):
            if first is not None:
                first.close()
        for (resource_type, name), resource in resources.items():
            try:
                resource.close()
            except Exception as exc:  # one resource that fails to close keeps no other open
                _LOG.warning(
                    "closing %s %r failed: %s", resource_type.value, name, redact(str(exc))
                )
        for last in (log, acknowledgments, tracing):
            if last is not None:
                last.close()

    def finish_calls(self) -> int:
        """Stopping: let in-flight model and tool calls finish and be recorded for
        `durable-execution.stop-grace-s`, start no new ones; how many are still in flight."""
        call_log = self.call_log
        if not isinstance(call_log, DurableCallLog):
            return 0  # nothing records the calls: finishing them would not spare a repeat
        grace = self.config.get(AgentConfigOptions.DURABLE_EXECUTION_STOP_GRACE)
        return call_log.finish_calls(grace)

    def run_acknowledged(self, key: str, seq: int) -> None:
        """Run `seq` of the key with text `key` was emitted and is no longer in state."""
        acknowledgments = self.acknowledgments
        if acknowledgments is not None:
            acknowledgments.run_acknowledged(key, seq)

    # ------------------------------------------------------------------ JSON

    def new_key_state(self) -> KeyState:
        """The state of a key never seen before."""
        fields = {"short_term_memory": {}, "next_seq": 0, "memory_touched_ms": {}}
        return trusted_instance(KeyState, fields, set())  # as KeyState(), unvalidated

    def load_key_state(self, data: str) -> KeyState:
        return KeyState.from_json(data)

    def dump_key_state(self, key_state: KeyState) -> str:
        return key_state.to_json()

    def encode_input(self, value: Any) -> str:
        """An input as JSON (a dataclass instance as the dict of its fields: upstream's
        events carry it as JSON, so its agents get that dict); `TypeError` for a value
        agent state cannot keep."""
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        check_state_value(value, "input")
        return to_json(encode_value(value)).decode("utf-8")

    def decode_input(self, data: str) -> Any:
        return decode_value(from_json(data))

    def dump_run(self, run: RunState) -> str:
        return run.to_json()

    def is_done(self, run: RunState) -> bool:
        return run.done

    def outputs(self, run: RunState) -> list[Any]:
        return run.outputs

    # ------------------------------------------------------------------ approvals

    def is_parked(self, run: RunState) -> bool:
        """Whether `run` waits for a person's decision (`flink_agents.runtime.approvals`)."""
        return bool(run.approvals) and is_parked(run)

    def decide(self, run: RunState | None, key: str, approval: ToolApproval) -> bool:
        """Apply a `ToolApproval` to the parked run of the key with text `key`; True when
        the run goes on now (`ApprovalNotPendingError`: it decides no waiting call)."""
        resumed = approvals.decide(run, key, approval)
        assert run is not None
        for wait in run.approvals.values():
            decision = wait.decisions.get(approval.call_id)
            if decision is not None:
                latency = max(0, decision.decided_at_ms - wait.requested_at_ms)
                self.metrics.get_histogram("approvalLatencyMs").update(float(latency))
        if resumed:
            self._approval_spans(run)
        return resumed

    def time_out(self, run: RunState, now_ms: int) -> bool:
        """Deny the calls of `run` whose approval timed out; True when the run goes on."""
        count, resumed = approvals.time_out(run, now_ms)
        if count:
            self.metrics.get_counter("approvalTimeouts").inc(count)
        if resumed:
            self._approval_spans(run)
        return resumed

    def approval_deadline_ms(self, run: RunState) -> int | None:
        """When the first undecided call of `run` times out (None: never)."""
        return approvals.next_deadline_ms(run) if run.approvals else None

    def pending_approvals(self, run: RunState) -> list[ApprovalRequest]:
        """The requests of `run`'s calls still undecided."""
        return approvals.pending_requests(run) if run.approvals else []

    def _approval_spans(self, run: RunState) -> None:
        tracing = self.tracing
        if tracing is not None:
            for wait in run.approvals.values():
                tracing.approval_wait(run, wait)

    # ------------------------------------------------------------------ runs

    def start_run(self, key: Any, value: Any, key_state: KeyState) -> RunState:
        """A new run for ``value``: its `InputEvent` pending, its seq taken from (and
        advanced in) ``key_state``."""
        seq = key_state.next_seq
        key_state.next_seq = seq + 1
        event = trusted_instance(  # as InputEvent(input=value, id=...), on every run
            InputEvent,
            {
                "type": InputEvent.EVENT_TYPE,
                "attributes": {"input": value},
                "id": event_id_for(key, seq, "input"),
                "upstream_event_id": None,
                "upstream_action_name": None,
            },
            {"type", "attributes", "id"},
        )
        pending: list[Event] = [event]
        memory = self.memory
        if memory.ttl is not None or key_state.memory_touched_ms:
            now = memory.clock_ms()
            purge_expired(key_state.short_term_memory, key_state.memory_touched_ms, memory.ttl, now)
        begin = self._run_begin_event(key, seq, event, key_state) if memory.run_begin else None
        if begin is not None and self.plan.may_trigger(begin.type):
            pending.insert(0, begin)  # its actions run first, as upstream
        start = None
        if self.keeps_run_start:
            start = trusted_model(RunStart, input=value, memory_json=key_state.memory_json())
        run = trusted_model(
            RunState,
            key=key,
            seq=seq,
            pending_events=pending,
            sensory_memory={},
            chat_loops={},
            outputs=[],
            done=False,
            action_steps=0,
            start=start,
            restored_events=0,
            path=[],
            trace_parent=None,
            trace_span=None,
            approvals={},
        )
        log = self.event_log
        if log is not None:
            # The InputEvent, then its run-begin event (as upstream's log has them).
            log.log_event(key, seq, event)
            if begin is not None:
                log.log_event(key, seq, begin)
        return run

    def _run_begin_event(
        self, key: Any, seq: int, input_event: InputEvent, key_state: KeyState
    ) -> AgentRunBeginEvent:
        """The run's `AgentRunBeginEvent` (processed before its `InputEvent`, as upstream)."""
        snapshot = run_begin_snapshot(
            key_state.short_term_memory,
            key_state.memory_touched_ms,
            self.memory.ttl,
            self.memory.clock_ms(),
        )
        return AgentRunBeginEvent(
            key=key_text(key),
            value=snapshot,
            id=event_id_for(key, seq, "begin"),
            upstream_event_id=input_event.id,
            upstream_action_name=AGENT_RUN_BEGIN_ACTION,
        )

    def _rewind(self, run: RunState, key_state: KeyState) -> RunStart:
        """Put the key's memory back as it was when `run` started."""
        start = run.start
        if start is None:
            raise RuntimeError(
                "this run kept no start (input-failure.policy is not skip): it cannot be "
                "tried again or abandoned"
            )
        key_state.restore_memory(start.memory_json)
        return start

    def retry_run(self, run: RunState, key_state: KeyState) -> RunState:
        """`run` again from its start: the same input and sequence number, the key's memory
        as it was then (its durable calls replay from the store)."""
        start = self._rewind(run, key_state)
        key_state.next_seq = run.seq
        retry = self.start_run(run.key, start.input, key_state)
        if self.tracing is not None:
            self.tracing.retried(retry, run)
        return retry

    def refuse_input(self, key: Any, value: Any, error: BaseException) -> FailedInput:
        """The failure record of an input refused before any run started (attempts 0)."""
        record = failure_record(key, value, error, 0)
        log_failure(record)
        return FailedInput(record)

    def abandon_run(
        self, run: RunState, key_state: KeyState, error: BaseException, attempts: int
    ) -> FailedInput:
        """Give `run` up: the key's memory as before it, its failure record as its output."""
        start = self._rewind(run, key_state)
        record = failure_record(run.key, start.input, error, attempts)
        log_failure(record)
        return FailedInput(record)

    async def step(self, run: RunState, key_state: KeyState) -> bool:
        """Process the first pending event: run every action it triggers, then commit
        what they sent (events to ``pending_events``, outputs to ``outputs``). Returns
        whether the run is done.

        If an action raises, `ActionExecutionError` is raised and the run's events,
        outputs and step count are left as they were before the step.
        """
        if not run.pending_events:
            if run.approvals and is_parked(run):
                return False  # parked: a decision puts the waiting events back
            run.done = True
            return True
        event = run.pending_events[0]
        tracing = self.tracing
        try:
            specs = self.plan.actions_for_event(event, self._condition_failed_handler(run))
        except TriggerConditionFailedError as error:
            if tracing is not None:
                tracing.end_run(run, error)
            raise
        restored = run.restored_events
        if restored:
            run.restored_events = restored - 1
            if not self.plan.may_trigger(event.type):
                error = UnhandledEventError(event.type, run.key, run.seq)
                if tracing is not None:
                    tracing.end_run(run, error)
                raise error
        elif not specs and not self.plan.conditioned:
            self._warn_once(
                ("event", event.type),
                "no action handles %r events: one was dropped (key %r, seq %d)",
                event.type,
                run.key,
                run.seq,
            )
        sent: list[Event] = []
        parked: ApprovalWait | None = None
        log = self._event_log if self._event_log_ready else self.event_log
        for offset, spec in enumerate(specs):
            reports = (
                None
                if log is None or not log.records_executions
                else execution_reports(log, run, spec.name)
            )
            ctx = ActionContext(
                self, run, key_state, spec, event, run.action_steps + offset, reports
            )
            started = time.perf_counter()
            if reports is not None:
                reports.action_started()
            try:
                # Events the action makes take their ids from its context and resources
                # read its metric group (`Resource.metric_group`); a sync action's thread
                # runs in a copy of this context. Bound without context managers: this is
                # every action's path.
                ids = bind_event_ids(ctx.next_event_id)
                group = bind_resource_metric_group(lambda ctx=ctx: ctx.action_metric_group)
                try:
                    if tracing is None:
                        await self._execute(spec, event, ctx)
                    else:  # the same, inside an action span
                        with tracing.action(run, spec, event):
                            await self._execute(spec, event, ctx)
                finally:
                    release_resource_metric_group(group)
                    release_event_ids(ids)
            except Exception as exc:
                if reports is not None:
                    reports.action_ended(exc)
                self._action_finished(run, spec.name, event, started, ctx.sent, log, exc)
                error = ActionExecutionError(spec.name, event.type, run.key, run.seq, exc)
                if tracing is not None:
                    tracing.end_run(run, error)
                raise error from exc
            ctx.finish()  # adds the action's memory events
            if reports is not None:
                reports.action_ended(None)
            self._action_finished(run, spec.name, event, started, ctx.sent, log, None)
            run.path.append(spec.name)
            sent.extend(ctx.sent)
            if ctx.parked is not None:
                parked = ctx.parked
        pending = run.pending_events
        pending.pop(0)
        if run.approvals:  # a wait whose decisions the event's actions have now used
            settle(run, event.id)
        if parked is not None:
            run.approvals[str(event.id)] = parked
        logged_only = self._logged_only
        for out in sent:
            if out.type == _OUTPUT_TYPE:
                run.outputs.append(out.attributes.get("output"))
            elif out.type not in logged_only:
                pending.append(out)
            if log is not None:
                log.log_event(run.key, run.seq, out)
        # Written straight to the run's fields: pydantic's assignment checks nothing here
        # (no validate_assignment) and costs more than the rest of these lines.
        fields = field_values(run)
        fields["action_steps"] = run.action_steps + len(specs)
        fields["done"] = done = not pending and not (run.approvals and is_parked(run))
        if done:
            if not run.outputs:
                self._ended_without_output(run)
            if tracing is not None:
                tracing.end_run(run, None)
        return done

    def _execute(self, spec: ActionSpec, event: Event, ctx: ActionContext) -> Awaitable[Any]:
        """One action's run, to be awaited: an ``async def`` on the loop, a sync function on
        an action thread, in a copy of this context (the event ids, an open span). Not a
        coroutine itself: an async action's coroutine is awaited directly."""
        if spec.is_async:
            return spec.func(event, ctx)  # type: ignore[return-value]
        context = contextvars.copy_context()
        call = functools.partial(context.run, spec.func, event, ctx)
        return self.action_threads.run(call, None, spec.name)  # pyright: ignore[reportArgumentType]

    def _ended_without_output(self, run: RunState) -> None:
        """Count it (metric `runsWithoutOutput`); warn once per action path."""
        counter = self._no_output_counter
        if counter is None:
            counter = self._no_output_counter = self.metrics.get_counter("runsWithoutOutput")
        counter.inc()
        path = " -> ".join(run.path) or "(no action)"
        self._warn_once(
            ("path", path),
            "a run ended without an OutputEvent (key %r, seq %d; actions: %s); "
            "further runs along this path are only counted (runsWithoutOutput)",
            run.key,
            run.seq,
            path,
        )

    def _condition_failed_handler(self, run: RunState) -> ConditionErrorHandler:
        """What a trigger condition that cannot be evaluated does
        (``action.trigger-condition.evaluate-failure-strategy``): fail the run, or a
        warning (once per action and expression) and the condition counts as false. A plan
        without conditions never calls it: no handler is built for its every step."""
        if not self.plan.conditioned:
            return _no_conditions

        def failed(spec: ActionSpec, condition: TriggerCondition, exc: Exception) -> None:
            event_type = run.pending_events[0].type
            if self.condition_failure == ConditionEvaluationFailureStrategy.FAIL:
                raise TriggerConditionFailedError(
                    spec.name, condition.source, event_type, run.key, run.seq, exc
                ) from exc
            self._warn_once(
                ("condition", f"{spec.name}\0{condition.source}"),
                "trigger condition %r of action %r could not be evaluated on a %r event "
                "(%s); it counts as false (action.trigger-condition.evaluate-failure-"
                "strategy: WARN_AND_SKIP); this warning is not repeated",
                condition.source,
                spec.name,
                event_type,
                redact(f"{type(exc).__name__}: {exc}"),
            )

        return failed

    def _warn_once(self, what: tuple[str, str], message: str, *args: Any) -> None:
        if what not in self._warned:
            self._warned.add(what)
            _LOG.warning(message, *args)

    def load_run(self, data: str | bytes) -> RunState:
        """A run `RunState.to_json` wrote, to be stepped on by this agent: its pending events
        are checked against this agent's actions as they come up (`UnhandledEventError`)."""
        run = RunState.from_json(data)
        run.restored_events = len(run.pending_events)
        return run

    def _action_finished(
        self,
        run: RunState,
        action: str,
        event: Event,
        started: float,
        sent: list[Event],
        log: EventLog | None,
        error: BaseException | None,
    ) -> None:
        elapsed = time.perf_counter() - started
        metrics = self._action_metrics.get(action)
        if metrics is None:
            group = self.metrics.get_sub_group("action").get_sub_group(action)
            metrics = (
                group.get_counter("executions"),
                group.get_histogram("durationMs"),
                group.get_counter("failures"),
            )
            self._action_metrics[action] = metrics
        executions, duration, failures = metrics
        executions.inc()
        duration.update(elapsed * 1000.0)
        if error is not None:
            failures.inc()
        if log is not None:
            log.log_action(
                run.key,
                run.seq,
                action,
                str(event.id),
                elapsed,
                [str(e.id) for e in sent],
                None if error is None else f"{type(error).__name__}: {error}",
            )

    async def run(self, run: RunState, key_state: KeyState) -> list[Any]:
        """Step until the run is done; its outputs."""
        while not run.done:
            await self.step(run, key_state)
        return run.outputs

    def __repr__(self) -> str:
        return f"AgentEngine({self.plan!r})"
