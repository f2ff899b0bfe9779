"""A Kafka broker and the Flink Kafka connector for the end-to-end tests (no tests here).

`kafka_bootstrap()` gives the broker's address: `FLINK_AGENTS_TEST_KAFKA_BOOTSTRAP` when set
(`.ci/run` starts one with `tools/kafka/start.sh`), else a broker `tools/kafka/start.sh`
starts for the test session (Maven fetches Kafka on first use). Where neither Kafka nor Maven
is there (a laptop without them), the tests that need it are skipped with the reason; under
CI (`CI` set) they fail instead: CI must run them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "BOOTSTRAP_ENV",
    "PrivateBroker",
    "agent_between_topics",
    "connector_jars",
    "create_topics",
    "missing",
    "produce",
    "read_committed",
    "read_committed_stamped",
    "start_broker",
    "stop_broker",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
TOOLS = REPO_ROOT / "tools" / "kafka"
BOOTSTRAP_ENV = "FLINK_AGENTS_TEST_KAFKA_BOOTSTRAP"


def missing(reason: str) -> None:
    """Skip the test, or fail it under CI, where Kafka cannot be had."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the Kafka tests: {reason}")
    pytest.skip(reason)


def _run_tool(
    script: str, *args: str, tmpdir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = None if tmpdir is None else {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.run(
        ["bash", str(TOOLS / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )


def start_broker() -> tuple[str, bool]:
    """The bootstrap address of a broker, and whether this call started it."""
    given = os.environ.get(BOOTSTRAP_ENV)
    if given:
        return given, False
    if shutil.which("java") is None:
        missing(f"no Java to run Kafka; set {BOOTSTRAP_ENV} or install Java and Maven")
    done = _run_tool("start.sh")
    if done.returncode != 0:
        missing(f"tools/kafka/start.sh could not start Kafka: {done.stderr.strip()[-400:]}")
    return done.stdout.split()[-1], "reusing" not in done.stderr


def stop_broker() -> None:
    _run_tool("stop.sh")


class PrivateBroker:
    """A broker of a test's own under `folder` (`tools/kafka/start.sh` with `TMPDIR` there:
    the session's broker and its state file are left alone), which the test can kill and
    start again on the same port with the same data (`start.sh --restart`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.directory: Path | None = None
        self.bootstrap = ""

    def start(self) -> str:
        """Start the broker; its bootstrap address."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if shutil.which("java") is None:
            missing("no Java to run Kafka")
        done = _run_tool("start.sh", tmpdir=self.folder)
        if done.returncode != 0:
            missing(f"tools/kafka/start.sh could not start Kafka: {done.stderr.strip()[-400:]}")
        self.directory = Path((self.folder / "flink-agents-kafka.last").read_text().strip())
        self.bootstrap = done.stdout.split()[-1]
        return self.bootstrap

    def _pid(self) -> int:
        assert self.directory is not None, "the broker was not started"
        return int((self.directory / "pid").read_text())

    def kill(self, timeout_s: float = 30) -> None:
        """SIGKILL the broker (a crash: no controlled shutdown) and wait until its port
        no longer answers."""
        os.kill(self._pid(), signal.SIGKILL)
        host, port = self.bootstrap.rsplit(":", 1)
        deadline = time.monotonic() + timeout_s
        while _answers(host, int(port)):
            assert time.monotonic() < deadline, f"the broker at {self.bootstrap} still answers"
            time.sleep(0.05)

    def restart(self) -> None:
        """Start the killed broker again: same directory, port and data."""
        assert self.directory is not None, "the broker was not started"
        done = _run_tool("start.sh", "--restart", str(self.directory), tmpdir=self.folder)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split()[-1] == self.bootstrap

    def stop(self) -> None:
        if self.directory is not None:
            _run_tool("stop.sh", str(self.directory), tmpdir=self.folder)


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def connector_jars() -> list[str]:
    """`file://` URLs of the Flink Kafka connector jars for the installed apache-flink."""
    done = _run_tool("connector.sh")
    if done.returncode != 0:
        missing(f"tools/kafka/connector.sh found no connector: {done.stderr.strip()[-400:]}")
    return [f"file://{line}" for line in done.stdout.split()]


def produce(bootstrap: str, topic: str, records: list[tuple[str | None, str]]) -> None:
    """Write (key, value) records to a topic, in order, and wait until the broker has them."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for key, value in records:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(60) == 0, "records not delivered"


def keyed_records(keys: int, first: int, last: int) -> list[tuple[str | None, str]]:
    """The records of inputs ``first <= i < last``: key ``k{i % keys}``, a JSON value with
    the key and ``n``, the input's position among the key's (``i // keys``)."""
    return [
        (f"k{i % keys}", json.dumps({"key": f"k{i % keys}", "n": i // keys}))
        for i in range(first, last)
    ]


def read_committed(
    bootstrap: str, topic: str, *, expected: int, timeout_s: float = 60, settle_s: float = 2
) -> list[tuple[str | None, str]]:
    """The committed records of a topic as (key, value): once `expected` are there, a further
    `settle_s` of polling (so a duplicate would show), or all there are after `timeout_s`."""
    return [
        (key, value)
        for key, value, _ in read_committed_stamped(
            bootstrap, topic, expected=expected, timeout_s=timeout_s, settle_s=settle_s
        )
    ]


def read_committed_stamped(
    bootstrap: str, topic: str, *, expected: int, timeout_s: float = 60, settle_s: float = 2
) -> list[tuple[str | None, str, int]]:
    """`read_committed` with each record's timestamp (ms) as the broker keeps it."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    records: list[tuple[str | None, str, int]] = []
    deadline = time.monotonic() + timeout_s
    settled_at: float | None = None
    try:
        while time.monotonic() < (settled_at or deadline):
            message: Any = consumer.poll(0.2)
            if message is not None and not message.error():
                key = message.key()
                stamp = message.timestamp()[1]
                records.append((key.decode() if key else None, message.value().decode(), stamp))
            if settled_at is None and len(records) >= expected:
                settled_at = time.monotonic() + settle_s
    finally:
        consumer.close()
    return records


def create_topics(bootstrap: str, partitions: int) -> dict[str, str]:
    """Fresh topics `in` (of `partitions`), `out` and `errors` (one partition each), all
    with the broker's defaults (records keep the timestamps the producer gives them,
    `CreateTime`: the answers a bounded job sends as it drains carry no timestamp, see
    docs/kafka.md)."""
    from confluent_kafka.admin import AdminClient, NewTopic  # pyright: ignore[reportPrivateImportUsage]

    run = uuid.uuid4().hex[:8]
    topics = {name: f"{name}-{run}" for name in ("in", "out", "errors")}
    admin = AdminClient({"bootstrap.servers": bootstrap})  # lives until the topics are there
    futures = admin.create_topics(
        [
            NewTopic(topics["in"], num_partitions=partitions, replication_factor=1),
            NewTopic(topics["out"], num_partitions=1, replication_factor=1),
            NewTopic(topics["errors"], num_partitions=1, replication_factor=1),
        ]
    )
    for future in futures.values():
        future.result(30)
    return topics


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)


def agent_between_topics(
    env: Any,
    agents_env: Any,
    agent: Any,
    *,
    bootstrap: str,
    topics: Mapping[str, str],
    key_selector: Callable[[Any], Any],
    parse: Callable[[str], Any],
    bounded: bool = True,
    to_text: Callable[[Any], str] = _dumps,
    client_properties: Mapping[str, str] | None = None,
) -> None:
    """Wire KafkaSource (`topics["in"]`; bounded: what the topic holds at the start) ->
        `agent` -> KafkaSink (exactly once) into `topics["out"]`, and the error stream into
        `topics["errors"]`, exactly once too. Outputs are written as `to_text` makes them (JSON by
    default), failure records as JSON. `client_properties` go to the source's consumer
        and the sinks' producers alike (timeouts)."""
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.datastream.connectors.base import DeliveryGuarantee
    from pyflink.datastream.connectors.kafka import (
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )

    properties = dict(client_properties or {})
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topics["in"])
        .set_group_id(f"job-{topics['in']}")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(SimpleStringSchema())
        .set_properties(properties)
    )
    if bounded:
        source = source.set_bounded(KafkaOffsetsInitializer.latest())

    def sink(topic: str) -> Any:
        serializer = (
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        builder = (
            KafkaSink.builder()
            .set_bootstrap_servers(bootstrap)
            .set_record_serializer(serializer)
            .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .set_transactional_id_prefix(f"{topic}-{uuid.uuid4().hex[:8]}")
            .set_property("transaction.timeout.ms", "600000")
        )
        for key, value in properties.items():
            builder = builder.set_property(key, value)
        return builder.build()

    records = env.from_source(source.build(), WatermarkStrategy.no_watermarks(), "in").map(
        parse, output_type=Types.PICKLED_BYTE_ARRAY()
    )
    stream = agents_env.from_datastream(records, key_selector=key_selector).apply(agent)
    stream.to_datastream().map(to_text, output_type=Types.STRING()).sink_to(sink(topics["out"]))
    stream.to_error_datastream().map(_dumps, output_type=Types.STRING()).sink_to(
        sink(topics["errors"])
    )
