"""The agent runner as the keyed operator's `RunEngine`, built per subtask in the worker.

`AgentEngineFactory` travels with the job (cloudpickle): the agent, its options and an
optional durable-call-log factory. In the worker it builds one `AgentRunner` per subtask
with that subtask's metrics and, when `baseLogDir` is set, an event log file of its own
(`events-<subtask>.jsonl`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import CoroutineType
from typing import Any

from pydantic_core import from_json, to_json

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import (
    AgentConfigOptions,
    AgentConfiguration,
    AgentExecutionOptions,
)
from flink_agents.api.events._codec import check_state_value, decode_value, encode_value
from flink_agents.api.resource import ResourceType
from flink_agents.plan.agent_plan import ResourceSpec
from flink_agents.runtime.agent_runner import AgentRunner
from flink_agents.runtime.durable import DurableCallLog
from flink_agents.runtime.event_log import EventLog
from flink_agents.runtime.flink.durability import SubtaskDurability, open_subtask_durability
from flink_agents.runtime.flink.operator import SubtaskContext
from flink_agents.runtime.input_failure import FailedInput
from flink_agents.runtime.keys import decode_key
from flink_agents.runtime.run_state import KeyState, RunState

__all__ = ["AgentEngineFactory", "AgentRunnerEngine"]


class AgentRunnerEngine:
    """`RunEngine` over an `AgentRunner` (its `RunState` / `KeyState` JSON)."""

    def __init__(self, runner: AgentRunner, durability: SubtaskDurability | None = None) -> None:
        self.runner = runner
        self.durability = durability
        skip = runner.keeps_run_start
        self._failure_retries = (
            runner.config.get(AgentExecutionOptions.INPUT_FAILURE_RETRIES) if skip else None
        )
        if durability is not None and durability.pruner is not None:
            # The keyed operator reports acknowledged runs (pruning, see `durability`).
            self.run_acknowledged = durability.run_acknowledged

    def new_key_state(self) -> KeyState:
        return KeyState()

    def load_key_state(self, data: str) -> KeyState:
        return KeyState.from_json(data)

    def dump_key_state(self, key_state: KeyState) -> str:
        return key_state.to_json()

    def encode_input(self, value: Any) -> str:
        check_state_value(value, "input")  # refused at the door, as on the local runner
        return to_json(encode_value(value)).decode("utf-8")

    def decode_input(self, data: str) -> Any:
        return decode_value(from_json(data))

    def start_run(self, key: str, value: Any, key_state: KeyState) -> RunState:
        # The Flink key is the user key's typed text (`encode_key`); runs see the key itself.
        return self.runner.start_run(decode_key(key), value, key_state)

    def step(self, run: RunState, key_state: KeyState) -> CoroutineType[Any, Any, None]:
        # The runner's coroutine itself (no wrapping coroutine per step).
        return self.runner.step(run, key_state)

    def is_done(self, run: RunState) -> bool:
        return run.done

    def outputs(self, run: RunState) -> list[Any]:
        return run.outputs

    def dump_run(self, run: RunState) -> str:
        return run.to_json()

    def load_run(self, data: str) -> RunState:
        return self.runner.load_run(data)

    @property
    def failure_retries(self) -> int | None:
        return self._failure_retries

    def retry_run(self, run: RunState, key_state: KeyState) -> RunState:
        return self.runner.retry_run(run, key_state)

    def finish_calls(self) -> int:
        durable = self.runner.durable
        if not isinstance(durable, DurableCallLog):
            return 0  # nothing records the calls: finishing them would not spare a repeat
        grace = self.runner.config.get(AgentConfigOptions.DURABLE_EXECUTION_STOP_GRACE)
        return durable.finish_calls(grace)

    def refuse_input(self, key: str, value: Any, error: BaseException) -> FailedInput:
        return self.runner.refuse_input(decode_key(key), value, error)

    def abandon_run(
        self, run: RunState, key_state: KeyState, error: BaseException, attempts: int
    ) -> FailedInput:
        return self.runner.abandon_run(run, key_state, error, attempts)

    def close(self) -> None:
        self.runner.close()
        if self.durability is not None:
            self.durability.close()


class AgentEngineFactory:
    """Builds an `AgentRunnerEngine` for each subtask (picklable with the agent).

    Args:
        agent: the agent to run.
        config: agent options (`AgentConfiguration` or a mapping of option keys).
        durable: builds the subtask's durable call log (exactly-once external calls).
        shared_resources: resources of the execution environment, by type and name.
        operator_name: the agent operator's name (part of the default durable pipeline id).
    """

    def __init__(
        self,
        agent: Agent,
        config: AgentConfiguration | Mapping[str, Any] | None = None,
        *,
        durable: Callable[[SubtaskContext], Any] | None = None,
        shared_resources: Mapping[ResourceType, Mapping[str, ResourceSpec]] | None = None,
        operator_name: str | None = None,
    ) -> None:
        self.agent = agent
        self.operator_name = operator_name
        self.config = (
            config if isinstance(config, AgentConfiguration) else AgentConfiguration(config)
        )
        self.durable = durable
        self.shared_resources = {t: dict(v) for t, v in (shared_resources or {}).items()}

    def __call__(self, context: SubtaskContext) -> AgentRunnerEngine:
        event_log = EventLog.from_config(
            self.config, file_name=f"events-{context.subtask_index}.jsonl"
        )
        durable = self.durable(context) if self.durable is not None else None
        durability = None
        if durable is None:  # `durable-execution.store` (fails the task if unreachable)
            durability = open_subtask_durability(
                self.config,
                context.task_name,
                context.subtask_index,
                context.runtime_context,
                agent=self.agent,
                operator_name=self.operator_name,
            )
            durable = durability.call_log if durability is not None else None
        runner = AgentRunner(
            self.agent,
            self.config,
            durable=durable,
            metrics=context.metrics,
            event_log=event_log,
            shared_resources=self.shared_resources,
        )
        return AgentRunnerEngine(runner, durability)
