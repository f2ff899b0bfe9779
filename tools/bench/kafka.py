"""Kafka to Kafka throughput on the mini-cluster: the agent against a trivial keyed function.

One job shape per line, on a topic of `--records` JSON records over `--keys` keys written
before the job starts: a bounded `KafkaSource` -> parse -> the keyed function -> JSON ->
`KafkaSink` with `DeliveryGuarantee.EXACTLY_ONCE` (checkpoints every `--checkpoint-ms`),
thread mode, parallelism 1. The functions (from `flink_runtime.py`):

- `trivial`: a KeyedProcessFunction with one ValueState read and one write per record;
- `agent`: the keyed agent operator with a 0 ms model (input -> chat request -> model ->
  chat response -> output), the target line of `flink_runtime.py` (a).

Throughput is records over the time between the first and the last answer the broker
appended (the output topics stamp records with `LogAppendTime`: Kafka's clock, not the
job's), read back with `isolation.level=read_committed`, which also checks every record was
answered exactly once. The lines take turns (`--runs` each); each line's best run counts, and
the ratio agent / trivial is printed.

    export FLINK_AGENTS_TEST_KAFKA_BOOTSTRAP=$(bash tools/kafka/start.sh)
    python tools/bench/kafka.py --records 20000 --keys 100 --runs 2 --lock /tmp/flink.lock
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]  # the other benches; e2e_tests (Kafka helpers)

import cloudpickle  # noqa: E402
import flink_runtime  # noqa: E402
from flink_runtime import BUFFER_TIMEOUT_MS, bench_agent, flink_lock, trivial_function  # noqa: E402

from e2e_tests.kafka import connector_jars, produce  # noqa: E402

# The agent's functions go with the job (Flink's Python workers do not have tools/bench on
# their path).
cloudpickle.register_pickle_by_value(flink_runtime)

LINES = ("trivial", "agent")


def _create_topics(bootstrap: str, names: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # pyright: ignore[reportPrivateImportUsage]

    stamped = {"message.timestamp.type": "LogAppendTime"}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [
            NewTopic(t, num_partitions=1, config={} if n == "in" else stamped)
            for n, t in names.items()
        ]
    )
    for future in futures.values():
        future.result(30)


def _parse(value: str) -> Any:
    return json.loads(value)


def _dumps(value: Any) -> str:
    return json.dumps(value)


def exactly_once_sink(bootstrap: str, topic_out: str) -> Any:
    """A transactional `KafkaSink` of strings to `topic_out` (the benches' output)."""
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.datastream.connectors.base import DeliveryGuarantee
    from pyflink.datastream.connectors.kafka import KafkaRecordSerializationSchema, KafkaSink

    return (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic_out)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(topic_out)
        .set_property("transaction.timeout.ms", "600000")
        .build()
    )


def run_job(line: str, bootstrap: str, topic_in: str, topic_out: str, checkpoint_ms: int) -> None:
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource

    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    env = create_stream_execution_environment({"restart-strategy.type": "none"})  # fail, not loop
    env.add_jars(*connector_jars())
    env.set_parallelism(1)
    env.set_buffer_timeout(BUFFER_TIMEOUT_MS)
    env.enable_checkpointing(checkpoint_ms)
    agents_env = FlinkAgentsExecutionEnvironment(env)  # same worker options for both lines
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic_in)
        .set_group_id(f"bench-{topic_out}")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    records = env.from_source(source, WatermarkStrategy.no_watermarks(), "in").map(
        _parse, output_type=Types.PICKLED_BYTE_ARRAY()
    )
    if line == "trivial":
        out: Any = records.key_by(lambda r: r["key"], key_type=Types.STRING()).process(
            trivial_function()
        )
    else:
        out = (
            agents_env.from_datastream(records, key_selector=lambda r: r["key"])
            .apply(bench_agent(0.0), name="bench-agent")
            .to_datastream()
        )
    out.map(_dumps, output_type=Types.STRING()).sink_to(exactly_once_sink(bootstrap, topic_out))
    env.execute(f"bench-kafka-{line}")


def appended_times(bootstrap: str, topic: str, expected: int, timeout_s: float = 120) -> list[int]:
    """The broker's append times (ms) of the committed records, after checking that every
    input was answered once."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-read-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    stamps: list[int] = []
    answered: set[tuple[str, int]] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(stamps) < expected and time.monotonic() < deadline:
            messages: Any = consumer.consume(1000, 0.5)
            for message in messages:
                if message.error():
                    continue
                record = json.loads(message.value())
                answered.add((record["key"], record["n"]))
                stamps.append(message.timestamp()[1])
    finally:
        consumer.close()
    if len(stamps) != expected or len(answered) != expected:
        raise SystemExit(f"{topic}: {len(stamps)} answers for {expected} inputs")
    return stamps


def main() -> None:
    parser = argparse.ArgumentParser(description="Kafka to Kafka: agent vs trivial function.")
    parser.add_argument("--bootstrap", default=os.environ.get("FLINK_AGENTS_TEST_KAFKA_BOOTSTRAP"))
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--checkpoint-ms", type=int, default=1000)
    parser.add_argument("--lock", default=None, help="flock this file while Flink runs")
    parser.add_argument("--lines", default=",".join(LINES), help="which lines, comma-separated")
    args = parser.parse_args()
    if not args.bootstrap:
        parser.error("--bootstrap HOST:PORT (bash tools/kafka/start.sh prints one)")

    run = uuid.uuid4().hex[:8]
    topic_in = f"bench-in-{run}"
    lines = args.lines.split(",")
    outs = {f"{line}-{i}": f"bench-{line}-{i}-{run}" for i in range(args.runs) for line in lines}
    _create_topics(args.bootstrap, {"in": topic_in, **outs})
    produce(
        args.bootstrap,
        topic_in,
        [
            (f"k{i % args.keys}", json.dumps({"key": f"k{i % args.keys}", "n": i // args.keys}))
            for i in range(args.records)
        ],
    )
    best: dict[str, float] = {}
    for i in range(args.runs):
        for line in lines:
            topic_out = outs[f"{line}-{i}"]
            print(f"run {i + 1} {line}: waiting for the lock", file=sys.stderr, flush=True)
            with flink_lock(args.lock):
                started = time.monotonic()
                run_job(line, args.bootstrap, topic_in, topic_out, args.checkpoint_ms)
                wall = time.monotonic() - started
            stamps = sorted(appended_times(args.bootstrap, topic_out, args.records))
            rate = (len(stamps) - 1) / max((stamps[-1] - stamps[0]) / 1000, 1e-3)
            best[line] = max(best.get(line, 0.0), rate)
            print(f"run {i + 1} {line:8s} {rate:9.0f} records/s  (job {wall:.1f} s wall)")
    if set(LINES) <= set(best):
        print(
            f"Kafka to Kafka, {args.records} records, {args.keys} keys, exactly once: "
            f"trivial {best['trivial']:.0f}/s, agent (0 ms model) {best['agent']:.0f}/s, "
            f"ratio {best['agent'] / best['trivial']:.2f}"
        )


if __name__ == "__main__":
    main()
