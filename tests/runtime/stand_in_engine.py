"""A tiny `RunEngine` for scheduler and operator tests: runs of a few steps, JSON state."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any


class StandInEngine:
    """Each input is ``{"v": value, "steps": n, "delay": seconds, "fail": bool, "each": bool}``
    (or a plain value: one step, no delay). A run emits ``"<key>:<seq>:<v>"`` after its last
    step, and with ``each`` also ``"<key>:<seq>:<v>:<step>"`` after every earlier step.
    ``delay`` may be a list: one per step. With ``"gate": name`` each step first waits
    for `gate(name)` to be set (tests on one loop control when runs go on); a list of
    names: one per step."""

    def __init__(self, failure_retries: int | None = None) -> None:
        self.failure_retries = failure_retries
        """None: a failing run fails the task; else retries before it is abandoned."""
        self.failures: dict[tuple[str, int], int] = {}
        """Failures so far per (key, seq), for inputs with ``fail_times``."""
        self.lock = threading.Lock()
        self.concurrent = 0
        self.max_concurrent = 0
        self.steps_run: list[tuple[str, int, int]] = []
        self.loaded_runs: list[dict[str, Any]] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.acknowledged: list[tuple[str, int]] = []
        self.closed = False

    def gate(self, name: str) -> asyncio.Event:
        """The event runs with ``"gate": name`` wait for before each step."""
        event = self.gates.get(name)
        if event is None:
            event = self.gates[name] = asyncio.Event()
        return event

    def new_key_state(self) -> dict[str, Any]:
        return {"next_seq": 0, "seen": []}

    def load_key_state(self, data: str) -> dict[str, Any]:
        return json.loads(data)

    def dump_key_state(self, key_state: dict[str, Any]) -> str:
        return json.dumps(key_state)

    def encode_input(self, value: Any) -> str:
        try:
            return json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"input is a value of type {type(value).__name__}") from exc

    def decode_input(self, data: str) -> Any:
        return json.loads(data)

    def start_run(self, key: str, value: Any, key_state: dict[str, Any]) -> dict[str, Any]:
        spec = value if isinstance(value, dict) else {"v": value}
        seq = key_state["next_seq"]
        key_state["next_seq"] = seq + 1
        return {
            "key": key,
            "seq": seq,
            "v": spec.get("v"),
            "steps": int(spec.get("steps", 1)),
            "delay": spec.get("delay", 0.0),
            "fail": bool(spec.get("fail", False)),
            "fail_times": int(spec.get("fail_times", 0)),
            "input": value,
            "each": bool(spec.get("each", False)),
            "gate": spec.get("gate"),
            "done_steps": 0,
            "outputs": [],
            "done": False,
        }

    async def step(self, run: dict[str, Any], key_state: dict[str, Any]) -> bool:
        with self.lock:
            self.concurrent += 1
            self.max_concurrent = max(self.max_concurrent, self.concurrent)
        try:
            gate = run.get("gate")
            if isinstance(gate, list):
                gate = gate[run["done_steps"]]
            if gate is not None:
                await self.gate(gate).wait()
            delay = run["delay"]
            if isinstance(delay, list):
                delay = delay[run["done_steps"]]
            if delay:
                await asyncio.sleep(float(delay))
            at = (run["key"], run["seq"])
            if run["fail"] or self.failures.get(at, 0) < run["fail_times"]:
                with self.lock:
                    self.failures[at] = self.failures.get(at, 0) + 1
                raise ValueError(f"injected failure for {run['key']}:{run['seq']}")
            with self.lock:
                self.steps_run.append((run["key"], run["seq"], run["done_steps"]))
            run["done_steps"] += 1
            if run["each"] and run["done_steps"] < run["steps"]:
                run["outputs"].append(f"{run['key']}:{run['seq']}:{run['v']}:{run['done_steps']}")
            if run["done_steps"] >= run["steps"]:
                run["outputs"].append(f"{run['key']}:{run['seq']}:{run['v']}")
                key_state["seen"].append(run["v"])
                run["done"] = True
            return bool(run["done"])
        finally:
            with self.lock:
                self.concurrent -= 1

    def is_done(self, run: dict[str, Any]) -> bool:
        return bool(run["done"])

    def outputs(self, run: dict[str, Any]) -> list[Any]:
        return list(run["outputs"])

    def is_parked(self, run: dict[str, Any]) -> bool:
        return False  # stand-in runs never wait for approval

    def pending_approvals(self, run: dict[str, Any]) -> list[Any]:
        return []

    def decide(self, run: Any, key: str, approval: Any) -> bool:
        from flink_agents.runtime.errors import ApprovalNotPendingError

        raise ApprovalNotPendingError(key, approval.call_id, "stand-in runs never park")

    def time_out(self, run: dict[str, Any], now_ms: int) -> bool:
        return False

    def approval_deadline_ms(self, run: dict[str, Any]) -> int | None:
        return None

    def dump_run(self, run: dict[str, Any]) -> str:
        return json.dumps(run)

    def load_run(self, data: str) -> dict[str, Any]:
        run = json.loads(data)
        self.loaded_runs.append(dict(run))
        return run

    def finish_calls(self) -> int:
        return 0

    def run_acknowledged(self, key: str, seq: int) -> None:
        self.acknowledged.append((key, seq))

    def close(self) -> None:
        self.closed = True

    def refuse_input(self, key: str, value: Any, error: BaseException) -> dict[str, Any]:
        return {"refused": key, "error": str(error)}

    def retry_run(self, run: dict[str, Any], key_state: dict[str, Any]) -> dict[str, Any]:
        key_state["next_seq"] = run["seq"]
        return self.start_run(run["key"], run["input"], key_state)

    def abandon_run(
        self, run: dict[str, Any], key_state: dict[str, Any], error: BaseException, attempts: int
    ) -> dict[str, Any]:
        return {"failed": f"{run['key']}:{run['seq']}", "error": str(error), "attempts": attempts}
