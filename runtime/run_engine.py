"""The seam between the scheduler and what runs agents.

The `RunScheduler` (both runners) needs a few things from an engine: start a run for an
input, advance it one step at a time on an asyncio loop, and turn runs, per-key state and
inputs into JSON and back (keyed state holds JSON, never pickles). `RunEngine` names
exactly those; `flink_agents.runtime.agent_engine.AgentEngine` implements it, and tests
use small stand-ins.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["RunEngine"]


@runtime_checkable
class RunEngine(Protocol):
    """What the scheduler drives. Run and key-state objects are opaque to it."""

    def new_key_state(self) -> Any:
        """Per-key state for a key never seen before."""
        ...

    def load_key_state(self, data: str) -> Any:
        """Per-key state from `dump_key_state` output."""
        ...

    def dump_key_state(self, key_state: Any) -> str:
        """Per-key state as JSON."""
        ...

    def encode_input(self, value: Any) -> str:
        """An input record as JSON (what a waiting input looks like in keyed state)."""
        ...

    def decode_input(self, data: str) -> Any:
        """The input record `encode_input` wrote."""
        ...

    def start_run(self, key: Any, value: Any, key_state: Any) -> Any:
        """A new run for `value` of the agent key `key` (the key itself, not its text);
        advances the key's input sequence in `key_state`."""
        ...

    async def step(self, run: Any, key_state: Any) -> bool:
        """Process one pending event of `run`; afterwards `run` is a consistent snapshot.
        Returns whether `run` is done now (what `is_done` would say)."""
        ...

    def is_done(self, run: Any) -> bool:
        """Whether `run` has nothing left to process."""
        ...

    def outputs(self, run: Any) -> list[Any]:
        """The outputs `run` produced."""
        ...

    def dump_run(self, run: Any) -> str:
        """A run as JSON, resumable with `load_run` and `step` (maybe in another process)."""
        ...

    def load_run(self, data: str) -> Any:
        """The run `dump_run` wrote."""
        ...

    def is_parked(self, run: Any) -> bool:
        """Whether `run` waits for a person's decisions (no step can make progress)."""
        ...

    def pending_approvals(self, run: Any) -> list[Any]:
        """The approval requests of `run`'s undecided calls."""
        ...

    def decide(self, run: Any | None, key: str, approval: Any) -> bool:
        """Apply a `ToolApproval` to the parked `run` (None: the key has none) of the key
        with text `key`; True when it goes on now. `ApprovalNotPendingError` (and `run`
        unchanged) when it decides no call `run` waits for."""
        ...

    def time_out(self, run: Any, now_ms: int) -> bool:
        """Deny the calls of the parked `run` whose approval timed out by `now_ms` (ms since
        the epoch); True when it goes on now."""
        ...

    def approval_deadline_ms(self, run: Any) -> int | None:
        """When the first undecided call of `run` times out (None: never)."""
        ...

    @property
    def failure_retries(self) -> int | None:
        """None: a failed run fails the task (`input-failure.policy: fail`); else how often a
        failed run is tried again before it is abandoned (`skip`)."""
        ...

    def retry_run(self, run: Any, key_state: Any) -> Any:
        """`run` again from its start (same input and sequence number, the key state as it
        was when it started)."""
        ...

    def finish_calls(self) -> int:
        """The operator is closing: let in-flight external calls finish and be recorded for a
        bounded time, start no new ones; returns how many are still in flight."""
        ...

    def refuse_input(self, key: Any, value: Any, error: BaseException) -> Any:
        """The failure output of an input `encode_input` refused (no run was started)."""
        ...

    def abandon_run(self, run: Any, key_state: Any, error: BaseException, attempts: int) -> Any:
        """Give `run` up; the key state as before it; returns its failure output."""
        ...

    def run_acknowledged(self, key: str, seq: int) -> None:
        """The caller emitted run `seq` of the key with text `key` and keeps nothing of it
        (Flink: in keyed state); durable execution may prune its records later."""
        ...

    def close(self) -> None:
        """Release what the engine holds (threads, logs, stores)."""
        ...
