"""The agent job the standalone-cluster test submits with `flink run`.

Numbers trickle from a checkpointed source (one every `--interval` seconds), become
`{"key", "n"}` inputs for a `SlowModelAgent`, and the outputs go to a checkpointed
FileSink as JSON lines. Checkpoints every 500 ms; the cluster restarts the job.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.serialization import Encoder
from pyflink.datastream.connectors.file_system import FileSink, RollingPolicy
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

from e2e_tests.agents import SlowModelAgent
from flink_agents.runtime.flink import (
    FlinkAgentsExecutionEnvironment,
    create_stream_execution_environment,
)


class ToInput:
    def __init__(self, keys: int, interval: float) -> None:
        self.keys = keys
        self.interval = interval

    def __call__(self, i: int) -> dict[str, Any]:
        time.sleep(self.interval)
        return {"key": f"k{i % self.keys}", "n": i // self.keys}


def committed_line_sink(path: str) -> Any:
    """A FileSink of text lines whose part files roll, and are committed, at each checkpoint."""
    return (
        FileSink.for_row_format(path, Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )


def to_line(output: dict[str, Any]) -> str:
    key, _, n = str(output["answer"]).removeprefix("echo ").partition("/")
    return json.dumps({"key": key, "n": int(n), "done_at": output["done_at"]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument(
        "--no-session-check",
        action="store_true",
        help="submit even to a session cluster that loads pemja per job (control tests)",
    )
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--interval", type=float, default=0.01)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()

    env = create_stream_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(500)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    if args.no_session_check:
        agents_env.get_config().set("session-cluster.check-python-jar", False)

    run_keyed_file_job(
        env,
        agents_env,
        SlowModelAgent(args.latency),
        args,
        agent_name="slow-agent",
        to_line=to_line,
    )
    agents_env.execute("standalone-agent-job")


def run_keyed_file_job(
    env: Any,
    agents_env: Any,
    agent: Any,
    args: argparse.Namespace,
    *,
    agent_name: str,
    to_line: Callable[[Any], str],
) -> None:
    """Wire the standalone jobs' shape: a trickling keyed source (``args.records`` records
    over ``args.keys`` keys, ``args.interval`` s apart) -> the agent -> a checkpointed
    FileSink of lines in ``args.output`` (part files roll at each checkpoint)."""
    numbers = env.from_source(
        NumberSequenceSource(0, args.records - 1), WatermarkStrategy.no_watermarks(), "numbers"
    ).set_parallelism(1)
    inputs = numbers.map(ToInput(args.keys, args.interval)).set_parallelism(1)
    outputs = (
        agents_env.from_datastream(inputs, key_selector=lambda r: r["key"])
        .apply(agent, name=agent_name)
        .to_datastream()
    )
    sink = committed_line_sink(args.output)
    outputs.map(to_line, output_type=Types.STRING()).sink_to(sink)


if __name__ == "__main__":
    main()
