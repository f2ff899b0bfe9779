"""Python work over TaskManagers: one TaskManager with two slots against two with one.

In thread mode a TaskManager runs the Python of all its slots in one interpreter (one
process), so two subtasks in one TaskManager share one interpreter lock; two TaskManagers
have an interpreter each. This bench runs the same job at parallelism 2 on a standalone
cluster (`tools/flink_cluster/standalone.py`, on this machine) laid out both ways:

- ``1x2``: one TaskManager with two slots;
- ``2x1``: two TaskManagers with one slot each.

Lines (the jobs of `flink_runtime.py` part (a), at parallelism 2 from the source on):
``trivial`` (a keyed function doing one state read and write per record) and ``sync-tool``
(the agent with a 0 ms model where half of the inputs call a plain ``def`` tool once).
Each job is submitted with ``flink run`` and collects its outputs; records/s from the
outputs' time stamps. The lines take turns within a layout; the best run of each counts.

    python tools/bench/taskmanagers.py
    python tools/bench/taskmanagers.py --records 40000 --runs 3 --lock /tmp/flink.lock
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LAYOUTS = {"1x2": (1, 2), "2x1": (2, 1)}
"""Layout name -> (TaskManagers, slots each)."""
LINES = ("trivial", "sync-tool")
_UNDER_FLINK_RUN = "BENCH_TASKMANAGERS_JOB"
"""Set for `flink run`: the script then only builds its job (it never starts clusters)."""


# ------------------------------------------------------------------ the job (under flink run)


def job(line: str, records: int, keys: int, out: str) -> None:
    """Build and run one line's job at parallelism 2; write its throughput to `out`."""
    sys.path.insert(0, str(HERE))
    from flink_runtime import (
        BUFFER_TIMEOUT_MS,
        source,
        stamp,
        sync_tool_agent,
        throughput,
        trivial_function,
    )
    from pyflink.common import Types

    from flink_agents.api.core_options import AgentExecutionOptions
    from flink_agents.runtime.flink import (
        AgentOperatorOptions,
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    env = create_stream_execution_environment()
    env.set_parallelism(2)
    env.set_buffer_timeout(BUFFER_TIMEOUT_MS)
    agents_env = FlinkAgentsExecutionEnvironment(
        env, operator_options=AgentOperatorOptions(max_in_flight=1000)
    )
    inputs = source(env, records, keys, 0)
    if line == "trivial":
        keyed = inputs.key_by(lambda r: r["key"], key_type=Types.STRING())
        result: Any = keyed.process(trivial_function()).map(stamp)
    else:
        agents_env.get_config().set(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS, 1000)
        result = (
            agents_env.from_datastream(inputs, key_selector=lambda r: r["key"])
            .apply(sync_tool_agent(), name="bench-agent")
            .to_datastream()
            .map(stamp)
        )
    with result.execute_and_collect(f"bench-{line}") as collected:
        outputs = list(collected)
    Path(out).write_text(json.dumps({"outputs": len(outputs), "rate": throughput(outputs)}))


# ------------------------------------------------------------------ the driver


def run_job(cluster: Any, line: str, records: int, keys: int, folder: Path) -> float:
    """`flink run` (attached) of one line's job; its records per second."""
    out = folder / f"{line}.json"
    out.unlink(missing_ok=True)
    command = [
        "bash",
        str(cluster.home / "bin" / "flink"),
        "run",
        "-m",
        cluster.address,
        "-py",
        str(Path(__file__).resolve()),
        "-pyexec",
        sys.executable,
        "-pyclientexec",
        sys.executable,
        "--run-line",
        line,
        "--records",
        str(records),
        "--keys",
        str(keys),
        "--out",
        str(out),
    ]
    environment = {**cluster.environment(), _UNDER_FLINK_RUN: "1"}
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"{line}: flink run failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    result = json.loads(out.read_text())
    if result["outputs"] != records:
        raise RuntimeError(f"{line}: {result['outputs']} outputs for {records} records")
    return float(result["rate"])


def measure(layout: str, records: int, keys: int, runs: int) -> dict[str, list[float]]:
    sys.path.insert(0, str(ROOT))
    from tools.flink_cluster.standalone import StandaloneCluster

    taskmanagers, slots = LAYOUTS[layout]
    rates: dict[str, list[float]] = {line: [] for line in LINES}
    with tempfile.TemporaryDirectory(prefix=f"bench-tm-{layout}-") as folder:
        python_path = os.pathsep.join([str(HERE), str(ROOT)])
        cluster = StandaloneCluster(folder, slots=slots, env={"PYTHONPATH": python_path})
        with cluster:
            cluster.start(taskmanagers=taskmanagers)
            run_job(cluster, "trivial", min(records, 2000), keys, Path(folder))  # warm-up
            for _ in range(runs):
                for line in LINES:  # the lines take turns
                    rates[line].append(run_job(cluster, line, records, keys, Path(folder)))
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Python work over TaskManagers.")
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--layouts", default="1x2,2x1")
    parser.add_argument("--lock", help="hold this file's lock while clusters run")
    parser.add_argument("--run-line", choices=LINES, help=argparse.SUPPRESS)  # under flink run
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_line:
        job(args.run_line, args.records, args.keys, args.out)
        return 0
    if os.environ.get(_UNDER_FLINK_RUN):
        parser.error("under flink run without --run-line: the job's arguments did not arrive")
    layouts = args.layouts.split(",")
    print(
        f"{args.records} records over {args.keys} keys, parallelism 2, thread mode, standalone "
        f"cluster on {os.cpu_count()} CPUs; {args.runs} runs per line, taking turns, best kept"
    )
    results: dict[str, dict[str, list[float]]] = {}
    from flink_runtime import flink_lock  # this folder: first on the path of a script

    with flink_lock(args.lock):
        for layout in layouts:
            results[layout] = measure(layout, args.records, args.keys, args.runs)
    for line in LINES:
        best = {layout: max(results[layout][line]) for layout in layouts}
        cells = "  ".join(
            f"{layout}: {rate:7.0f} records/s (runs: "
            + " / ".join(f"{r:.0f}" for r in results[layout][line])
            + ")"
            for layout, rate in best.items()
        )
        print(f"    {line:10s} {cells}")
        if "1x2" in best and "2x1" in best:
            print(f"    {'':10s} 2x1 against 1x2: {best['2x1'] / best['1x2']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
