"""Checkpoints of a Kafka -> agent -> Kafka job while hundreds of runs wait on a slow model.

One job per line, on the mini-cluster: an unbounded `KafkaSource` -> parse -> the agent
(`flink_runtime.bench_agent`: input -> chat request -> model -> chat response -> output) ->
JSON -> `KafkaSink` with `DeliveryGuarantee.EXACTLY_ONCE`, checkpoints every
`--checkpoint-ms`, thread mode, parallelism 1. The input topic holds `--inputs` records for
each of `--keys` keys, written before the job starts. The lines:

- `waiting`: the model answers after `--latency-s` (a `FunctionChatModelConnection` with a
  latency, the benches' fake model): every key has a run waiting on it all along, and
  the key's next inputs wait in keyed state, for `--inputs` x `--latency-s` seconds;
- `trivial`: the same job with a 0 s model, so no run waits: the baseline.

A line runs until every record is answered (read back `read_committed`, which also checks
each was answered once) and at least `--observe-s` seconds, then is cancelled. Its
checkpoints come from the JobManager's REST API (`/jobs/<id>/checkpoints`, the mini-cluster
on a fixed `rest.port`): those completed from the first one on until the last answer was
committed (the `trivial` line: over the same number of seconds), their end-to-end
duration (p50, max) and state size (p50, max), and any that failed.

    export FLINK_AGENTS_TEST_KAFKA_BOOTSTRAP=$(bash tools/kafka/start.sh)
    python tools/bench/checkpoints.py --keys 500 --inputs 6 --latency-s 2 --lock /tmp/flink.lock
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]  # the other benches; e2e_tests; tools

import cloudpickle  # noqa: E402
import flink_runtime  # noqa: E402
import kafka as kafka_bench  # noqa: E402  (tools/bench/kafka.py)
from flink_runtime import BUFFER_TIMEOUT_MS, bench_agent, flink_lock, percentile  # noqa: E402
from kafka import _create_topics, _dumps, _parse, exactly_once_sink  # noqa: E402

from e2e_tests.kafka import connector_jars, produce  # noqa: E402
from tools.flink_cluster.standalone import free_port  # noqa: E402

# The job's functions go with the job (Flink's Python workers do not have tools/bench on
# their path).
cloudpickle.register_pickle_by_value(flink_runtime)
cloudpickle.register_pickle_by_value(kafka_bench)

LINES = ("trivial", "waiting")


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def start_job(
    bootstrap: str, topic_in: str, topic_out: str, latency_s: float, checkpoint_ms: int
) -> tuple[Any, str]:
    """Submit the job (it runs until cancelled): its `JobClient` and REST address."""
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource

    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    port = free_port()
    env = create_stream_execution_environment(
        {"rest.port": port, "web.checkpoints.history": 10000, "restart-strategy.type": "none"}
    )
    env.add_jars(*connector_jars())
    env.set_parallelism(1)
    env.set_buffer_timeout(BUFFER_TIMEOUT_MS)
    env.enable_checkpointing(checkpoint_ms)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic_in)
        .set_group_id(f"bench-{topic_out}")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    records = env.from_source(source, WatermarkStrategy.no_watermarks(), "in").map(
        _parse, output_type=Types.PICKLED_BYTE_ARRAY()
    )
    out = (
        agents_env.from_datastream(records, key_selector=lambda r: r["key"])
        .apply(bench_agent(latency_s), name="bench-agent")
        .to_datastream()
    )
    out.map(_dumps, output_type=Types.STRING()).sink_to(exactly_once_sink(bootstrap, topic_out))
    client = env.execute_async(f"bench-checkpoints-{topic_out}")
    return client, f"http://127.0.0.1:{port}"


class Answers:
    """Reads the output topic (`read_committed`) as the job runs: when each answer was
    committed, and that no input is answered twice."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-read-{uuid.uuid4().hex}",
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        self._consumer.subscribe([topic])
        self.answered: set[tuple[str, int]] = set()
        self.count = 0
        self.last_at = 0.0

    def poll(self, seconds: float) -> None:
        messages: Any = self._consumer.consume(1000, seconds)
        for message in messages:
            if message.error():
                continue
            record = json.loads(message.value())
            self.answered.add((record["key"], record["n"]))
            self.count += 1
            self.last_at = time.time()

    def close(self) -> None:
        self._consumer.close()


@dataclass
class Checkpoints:
    completed: int
    failed: int
    durations_ms: list[float]
    sizes_bytes: list[float]

    def line(self, name: str) -> str:
        d, s = self.durations_ms, self.sizes_bytes
        if not d:
            return f"{name:8s} no checkpoint completed ({self.failed} failed)"
        return (
            f"{name:8s} {self.completed:3d} checkpoints ({self.failed} failed): duration "
            f"p50 {percentile(d, 0.5):6.0f} ms, max {max(d):6.0f} ms; state p50 "
            f"{percentile(s, 0.5) / 1024:8.0f} KiB, max {max(s) / 1024:8.0f} KiB\n"
            f"{'':8s} durations in order (ms): {' '.join(f'{x:.0f}' for x in d)}"
        )


def checkpoints_between(rest: str, job_id: str, start_ms: float, end_ms: float) -> Checkpoints:
    """The checkpoints triggered between `start_ms` and `end_ms` (wall clock)."""
    answer = _get_json(f"{rest}/jobs/{job_id}/checkpoints")
    history = [c for c in answer.get("history", []) if start_ms <= c["trigger_timestamp"] <= end_ms]
    done = sorted(
        (c for c in history if c["status"] == "COMPLETED"), key=lambda c: c["trigger_timestamp"]
    )
    return Checkpoints(
        completed=len(done),
        failed=sum(c["status"] == "FAILED" for c in history),
        durations_ms=[float(c["end_to_end_duration"]) for c in done],
        sizes_bytes=[float(c.get("state_size", c.get("checkpointed_size", 0))) for c in done],
    )


def run_line(
    line: str, args: argparse.Namespace, topic_in: str, topic_out: str, expected: int
) -> Checkpoints:
    latency_s = args.latency_s if line == "waiting" else 0.0
    answers = Answers(args.bootstrap, topic_out)
    client, rest = start_job(args.bootstrap, topic_in, topic_out, latency_s, args.checkpoint_ms)
    job_id = str(client.get_job_id())
    started = time.time()
    try:
        deadline = started + args.timeout_s
        while answers.count < expected and time.time() < deadline:
            answers.poll(0.5)
            status = client.get_job_status().result().name
            if status in ("FAILED", "CANCELED"):
                raise SystemExit(f"{line}: the job is {status} (see PyFlink's log)")
        done_at = answers.last_at if answers.count >= expected else time.time()
        while time.time() < started + args.observe_s:
            answers.poll(0.5)
        if line == "trivial":
            done_at = max(done_at, started + args.observe_s)
        if answers.count != expected or len(answers.answered) != expected:
            raise SystemExit(f"{line}: {answers.count} answers for {expected} inputs")
        return checkpoints_between(rest, job_id, started * 1000, done_at * 1000)
    finally:
        answers.close()
        client.cancel().result()


def main() -> None:
    parser = argparse.ArgumentParser(description="Checkpoints with runs waiting on a model.")
    parser.add_argument("--bootstrap", default=os.environ.get("FLINK_AGENTS_TEST_KAFKA_BOOTSTRAP"))
    parser.add_argument("--keys", type=int, default=500)
    parser.add_argument("--inputs", type=int, default=6, help="inputs per key")
    parser.add_argument("--latency-s", type=float, default=2.0, help="the waiting line's model")
    parser.add_argument("--checkpoint-ms", type=int, default=1000)
    parser.add_argument("--observe-s", type=float, default=12.0)
    parser.add_argument("--timeout-s", type=float, default=300.0)
    parser.add_argument("--lock", default=None, help="flock this file while Flink runs")
    parser.add_argument("--lines", default=",".join(LINES), help="which lines, comma-separated")
    args = parser.parse_args()
    if not args.bootstrap:
        parser.error("--bootstrap HOST:PORT (bash tools/kafka/start.sh prints one)")

    run = uuid.uuid4().hex[:8]
    topic_in = f"bench-cp-in-{run}"
    lines = args.lines.split(",")
    outs = {line: f"bench-cp-{line}-{run}" for line in lines}
    _create_topics(args.bootstrap, {"in": topic_in, **outs})
    expected = args.keys * args.inputs
    produce(
        args.bootstrap,
        topic_in,
        [
            (f"k{i % args.keys}", json.dumps({"key": f"k{i % args.keys}", "n": i // args.keys}))
            for i in range(expected)
        ],
    )
    print(
        f"{args.keys} keys x {args.inputs} inputs, checkpoints every {args.checkpoint_ms} ms, "
        f"waiting line's model {args.latency_s} s"
    )
    for line in lines:
        print(f"{line}: waiting for the lock", file=sys.stderr, flush=True)
        with flink_lock(args.lock):
            result = run_line(line, args, topic_in, outs[line], expected)
        print(result.line(line), flush=True)


if __name__ == "__main__":
    main()
