"""The standalone agent job of `standalone_job.py`, with one injected failure.

Input number `--fail-at` fails its map once (the marker file `--marker` records that it
did), and the job restarts after `--restart-delay` seconds from its last checkpoint (at
most `--restart-attempts` times). With
a restart delay longer than the cluster's `slot.idle.timeout`, the TaskManager frees the
job's slots and drops its class loader in between: the restart opens the job's Python
operators in a new class loader, as a new job would.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

from e2e_tests.agents import SlowModelAgent
from e2e_tests.standalone_job import ToInput, committed_line_sink, to_line
from flink_agents.runtime.flink import (
    FlinkAgentsExecutionEnvironment,
    create_stream_execution_environment,
)


class FailOnceToInput(ToInput):
    """`ToInput` that raises once, at input `fail_at`, the first time it gets there."""

    def __init__(self, keys: int, interval: float, fail_at: int, marker: str) -> None:
        super().__init__(keys, interval)
        self.fail_at = fail_at
        self.marker = marker

    def __call__(self, i: int) -> dict[str, Any]:
        if i == self.fail_at:
            try:
                Path(self.marker).touch(exist_ok=False)
            except FileExistsError:
                pass  # failed before: go on
            else:
                raise RuntimeError(f"injected failure at input {i}")
        return super().__call__(i)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument(
        "--no-session-check",
        action="store_true",
        help="submit even to a session cluster that loads pemja per job (control tests)",
    )
    parser.add_argument("--marker", required=True)
    parser.add_argument("--records", type=int, default=40)
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--fail-at", type=int, default=20)
    parser.add_argument("--restart-delay", type=float, default=4.0)
    parser.add_argument("--restart-attempts", type=int, default=3)
    args = parser.parse_args()

    env = create_stream_execution_environment(
        {
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": str(args.restart_attempts),
            "restart-strategy.fixed-delay.delay": f"{round(args.restart_delay * 1000)} ms",
        }
    )
    env.set_parallelism(2)
    env.enable_checkpointing(500)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    if args.no_session_check:
        agents_env.get_config().set("session-cluster.check-python-jar", False)

    numbers = env.from_source(
        NumberSequenceSource(0, args.records - 1), WatermarkStrategy.no_watermarks(), "numbers"
    ).set_parallelism(1)
    inputs = numbers.map(
        FailOnceToInput(args.keys, args.interval, args.fail_at, args.marker)
    ).set_parallelism(1)
    outputs = (
        agents_env.from_datastream(inputs, key_selector=lambda r: r["key"])
        .apply(SlowModelAgent(args.latency), name="slow-agent")
        .to_datastream()
    )
    sink = committed_line_sink(args.output)
    outputs.map(to_line, output_type=Types.STRING()).sink_to(sink)
    agents_env.execute("restart-agent-job")


if __name__ == "__main__":
    main()
