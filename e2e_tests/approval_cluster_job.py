"""The approval job for a standalone cluster (`e2e_tests/test_approvals_cluster.py`):
questions park a run per key, decisions come after `--fillers` records; outputs and
approval requests as JSON lines in a checkpointed FileSink."""

from __future__ import annotations

import argparse

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

from e2e_tests.approval_agent import (
    ApprovalAgent,
    QuestionsThenDecisions,
    key_of,
    output_line,
    present,
    request_line,
)
from e2e_tests.standalone_job import committed_line_sink
from flink_agents.runtime.flink import (
    FlinkAgentsExecutionEnvironment,
    create_stream_execution_environment,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument("--trace-dir", required=True)
    parser.add_argument("--keys", type=int, default=6)
    parser.add_argument("--fillers", type=int, default=300)
    args = parser.parse_args()

    env = create_stream_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(500)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    agents_env.get_config().set("e2e.trace-dir", args.trace_dir)
    records = QuestionsThenDecisions(args.keys, args.fillers)
    pickled = Types.PICKLED_BYTE_ARRAY()
    inputs = (
        env.from_source(
            NumberSequenceSource(0, records.count - 1), WatermarkStrategy.no_watermarks(), "n"
        )
        .set_parallelism(1)
        .map(records, output_type=pickled)
        .set_parallelism(1)
        .filter(present)
        .set_parallelism(1)
    )
    applied = agents_env.from_datastream(inputs, key_selector=key_of).apply(ApprovalAgent())
    lines = (
        applied.to_datastream()
        .map(output_line, output_type=Types.STRING())
        .union(applied.to_approval_request_datastream().map(request_line, Types.STRING()))
    )
    lines.sink_to(committed_line_sink(args.output))
    agents_env.execute("approval-cluster-job")


if __name__ == "__main__":
    main()
