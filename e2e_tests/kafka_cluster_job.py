"""The Kafka job of `e2e_tests/test_kafka_cluster.py`, submitted with `flink run`:
`ToolChatAgent` (`durable_job.py`: two model turns and a tool call per input, against the
mock model server) between a bounded KafkaSource and an exactly-once KafkaSink, with a
durable store, checkpoints every 500 ms; the cluster's restart strategy restarts it."""

from __future__ import annotations

import argparse
import json
from typing import Any

from e2e_tests.durable_job import ToolChatAgent, to_line
from e2e_tests.kafka import agent_between_topics
from flink_agents.runtime.flink import (
    FlinkAgentsExecutionEnvironment,
    create_stream_execution_environment,
)


def key_of(record: Any) -> str:
    return str(record["key"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topics", required=True, help="JSON: {in, out, errors}")
    parser.add_argument("--jars", required=True, help="file:// URLs of the connector, by ;")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--store", required=True)
    args = parser.parse_args()

    env = create_stream_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(500)
    env.add_jars(*args.jars.split(";"))
    agents_env = FlinkAgentsExecutionEnvironment(env)
    config = agents_env.get_config()
    config.set("durable-execution.store", args.store)
    config.set("durable-execution.prune.interval-s", "0.5")
    config.set("durable-execution.prune.clock-skew-s", "0.5")
    agent_between_topics(
        env,
        agents_env,
        ToolChatAgent(args.base_url),
        bootstrap=args.bootstrap,
        topics=json.loads(args.topics),
        key_selector=key_of,
        parse=json.loads,
        to_text=to_line,
    )
    agents_env.execute("kafka-cluster-job")


if __name__ == "__main__":
    main()
