"""The agent runner as the scheduler's `RunEngine` (both runners drive it).

Values and run state go through the same JSON on both runners: inputs as the value codec
writes them, runs as `RunState` JSON, key state as `KeyState` JSON.
"""

from __future__ import annotations

from types import CoroutineType
from typing import Any, Protocol

from pydantic_core import from_json, to_json

from flink_agents.api.core_options import AgentConfigOptions, AgentExecutionOptions
from flink_agents.api.events._codec import check_state_value, decode_value, encode_value
from flink_agents.runtime.agent_runner import AgentRunner
from flink_agents.runtime.durable import DurableCallLog
from flink_agents.runtime.input_failure import FailedInput
from flink_agents.runtime.run_state import KeyState, RunState

__all__ = ["AgentRunnerEngine", "Durability"]


class Durability(Protocol):
    """What durable execution needs to hear from a runner beyond its call log (Flink:
    `flink.durability.SubtaskDurability`, which prunes acknowledged runs' records)."""

    def run_acknowledged(self, key: str, seq: int) -> None: ...

    def close(self) -> None: ...


class AgentRunnerEngine:
    """`RunEngine` over an `AgentRunner` (its `RunState` / `KeyState` JSON)."""

    def __init__(self, runner: AgentRunner, durability: Durability | None = None) -> None:
        self.runner = runner
        self.durability = durability
        skip = runner.keeps_run_start
        self._failure_retries = (
            runner.config.get(AgentExecutionOptions.INPUT_FAILURE_RETRIES) if skip else None
        )

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

    def start_run(self, key: Any, value: Any, key_state: KeyState) -> RunState:
        return self.runner.start_run(key, value, key_state)

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

    def refuse_input(self, key: Any, value: Any, error: BaseException) -> FailedInput:
        return self.runner.refuse_input(key, value, error)

    def abandon_run(
        self, run: RunState, key_state: KeyState, error: BaseException, attempts: int
    ) -> FailedInput:
        return self.runner.abandon_run(run, key_state, error, attempts)

    def run_acknowledged(self, key: str, seq: int) -> None:
        if self.durability is not None:
            self.durability.run_acknowledged(key, seq)

    def close(self) -> None:
        self.runner.close()
        if self.durability is not None:
            self.durability.close()
