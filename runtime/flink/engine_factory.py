"""The keyed operator's `RunEngine`, built per subtask in the worker.

`AgentEngineFactory` travels with the job (cloudpickle): the agent, its options, an
optional durable-call-log factory and the job script's classes (`job_script`). In the
worker it builds one `AgentEngine` per subtask with that subtask's metrics and, when
`baseLogDir` is set, an event log file of its own (upstream's
`events-{jobId}-{taskName}-{subtaskId}.log`; `events-<subtask>.jsonl` with
``eventLoggerType: jsonl``). With
`tracing.enabled`, a worker process with no tracer provider gets one from the ``OTEL_*``
variables first (`flink_agents.runtime.tracing.install_sdk_from_env`). Before it reads any
state it sets the worker's process up as every runner does
(`flink_agents.runtime.process_setup`: provider keys redacted, stored-class modules allowed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flink_agents.api._values import register_script_classes
from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentConfigOptions, AgentConfiguration
from flink_agents.api.resource import ResourceType
from flink_agents.plan.agent_plan import ResourceSpec
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.event_log import EventLog
from flink_agents.runtime.flink.durability import job_id_of, open_subtask_durability
from flink_agents.runtime.flink.job_script import script_classes, ship_tool_type_hints
from flink_agents.runtime.flink.operator import SubtaskContext
from flink_agents.runtime.process_setup import set_up_process

__all__ = ["AgentEngineFactory"]


class AgentEngineFactory:
    """Builds an `AgentEngine` for each subtask (picklable with the agent).

    Args:
        agent: the agent to run.
        config: agent options (`AgentConfiguration` or a mapping of option keys).
        call_log_factory: builds the subtask's durable call log (exactly-once external
            calls); without it, ``durable-execution.store`` says which, if any.
        shared_resources: resources of the execution environment, by type and name.
        operator_name: the agent operator's name (part of the default durable pipeline id).
    """

    def __init__(
        self,
        agent: Agent,
        config: AgentConfiguration | Mapping[str, Any] | None = None,
        *,
        call_log_factory: Callable[[SubtaskContext], Any] | None = None,
        shared_resources: Mapping[ResourceType, Mapping[str, ResourceSpec]] | None = None,
        operator_name: str | None = None,
    ) -> None:
        self.agent = agent
        self.operator_name = operator_name
        self.config = (
            config if isinstance(config, AgentConfiguration) else AgentConfiguration(config)
        )
        self.call_log_factory = call_log_factory
        self.shared_resources = {t: dict(v) for t, v in (shared_resources or {}).items()}
        # Built where the job script is `__main__`; used in the workers (see job_script).
        self.script_classes = script_classes()
        ship_tool_type_hints(
            [
                *agent.resources[ResourceType.TOOL].values(),
                *self.shared_resources.get(ResourceType.TOOL, {}).values(),
            ]
        )

    def __call__(self, context: SubtaskContext) -> AgentEngine:
        set_up_process(self.config)  # provider keys redacted, stored-class modules allowed
        if self.config.get(AgentConfigOptions.TRACING_ENABLED):
            # The worker's tracer provider, from the OTEL_* variables (once per process).
            from flink_agents.runtime.tracing import install_sdk_from_env

            install_sdk_from_env()
        register_script_classes(self.script_classes)  # before any state is read
        event_log = EventLog.from_config(
            self.config,
            subtask_index=context.subtask_index,
            job_id=job_id_of(context.runtime_context),
            task_name=context.task_name,
        )
        factory = self.call_log_factory
        call_log = factory(context) if factory is not None else None
        durability = None
        if call_log is None:  # `durable-execution.store` (fails the task if unreachable)
            durability = open_subtask_durability(
                self.config,
                context.task_name,
                context.subtask_index,
                context.runtime_context,
                agent=self.agent,
                operator_name=self.operator_name,
            )
            call_log = durability.call_log if durability is not None else None
        return AgentEngine(
            self.agent,
            self.config,
            call_log=call_log,
            metrics=context.metrics,
            event_log=event_log,
            shared_resources=self.shared_resources,
            acknowledgments=durability,
            # A subtask's threads share the cores with the JVM's: a woken sync call's thread
            # does not preempt the operator thread (more records/s, a little more latency).
            batch_scheduling=True,
        )
