"""CPU per input on the keyed operator's path, in-process, without Flink.

What `flink_runtime.py` (a) measures inside a job, less Flink itself: each line drives
`KeyedRuns` (keyed state and timers in memory, `tests/runtime/flink/fake_flink.py`) with
the operator's scheduler and loop thread, input after input as Flink's operator thread
would, firing due poll timers between inputs and the end-of-input timers at the end.
Printed per line: process CPU time per input (every thread: operator, loop, tool
threads), the share of inputs whose run finished inside the input's own callback, and
wall time. The lines take turns (`--rounds`); the best round of each counts.

    python tools/bench/operator_path.py
    python tools/bench/operator_path.py --inputs 20000 --keys 1000 --rounds 5

Lines: the operator around a pass-through engine; an agent with one action; a chat round
trip with a 0 ms model; the same where half of the inputs make the model call a plain
``def`` tool once; that one with plain ``def`` actions (upstream's shape). They are the
rows of the budget table in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]  # the other benches; tests/ (fake Flink)

from flink_runtime import (  # noqa: E402
    PassThroughEngine,
    bench_agent,
    one_action_agent,
    sync_tool_agent,
)

from flink_agents.api.agents.agent import Agent  # noqa: E402
from flink_agents.runtime.agent_engine import AgentEngine  # noqa: E402
from flink_agents.runtime.run_engine import RunEngine  # noqa: E402
from tests.runtime.flink.fake_flink import FakeSubtask  # noqa: E402

LINES: dict[str, Callable[[], RunEngine]] = {
    "operator, pass-through engine": lambda: PassThroughEngine(),  # type: ignore[return-value]
    "agent, one action": lambda: _engine(one_action_agent()),
    "agent, 0 ms model": lambda: _engine(bench_agent(0.0)),
    "agent, 0 ms model, sync tool": lambda: _engine(sync_tool_agent()),
    "the same, def actions": lambda: _engine(sync_tool_agent(def_actions=True)),
}


def _engine(agent: Agent) -> AgentEngine:
    return AgentEngine(agent)


def run_line(make: Callable[[], RunEngine], inputs: int, keys: int) -> tuple[float, float, float]:
    """(CPU s, wall s, share of runs finished inline) for one pass."""
    engine = make()
    # The operator's defaults (`AgentOperatorOptions`).
    subtask = FakeSubtask(engine, max_in_flight=1000, snapshot_after=0.005)
    records = [{"key": f"k{i % keys}", "n": i // keys} for i in range(inputs)]
    # A warm-up input per key: resources built, keys held (as in a job that has run).
    for i in range(keys):
        subtask.input(f"k{i}", {"key": f"k{i}", "n": -1})
    subtask.run_until_idle()
    subtask.end_of_input()
    subtask.emitted.clear()
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    inline = 0
    for record in records:
        before = len(subtask.emitted)
        subtask.input(record["key"], record)
        inline += len(subtask.emitted) > before
        if subtask.backend.polls:
            subtask.fire_due_polls()
    subtask.run_until_idle()
    subtask.end_of_input()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    produced = len(subtask.emitted)
    subtask.close()
    engine.close()
    if produced != inputs:
        raise RuntimeError(f"{produced} outputs for {inputs} inputs")
    return cpu, wall, inline / inputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="CPU per input on the operator path.")
    parser.add_argument("--inputs", type=int, default=10000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-pin", action="store_true", help="do not pin to one CPU")
    args = parser.parse_args(argv)
    if not args.no_pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    print(
        f"python {sys.version.split()[0]}, {args.inputs} inputs over {args.keys} keys, "
        f"in-process, best of {args.rounds} rounds"
    )
    best: dict[str, tuple[float, float, float]] = {}
    for _ in range(args.rounds):
        for name, make in LINES.items():
            result = run_line(make, args.inputs, args.keys)
            if name not in best or result[0] < best[name][0]:
                best[name] = result
    for name, (cpu, wall, inline) in best.items():
        print(
            f"    {name:30s} {cpu / args.inputs * 1e6:6.1f} us CPU/input  "
            f"{inline:4.0%} finished inline  wall {wall:.2f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
