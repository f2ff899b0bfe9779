"""A Kafka broker and the Flink Kafka connector for the end-to-end tests (no tests here).

`kafka_bootstrap()` gives the broker's address: `FLINK_AGENTS_TEST_KAFKA_BOOTSTRAP` when set
(`.ci/run` starts one with `tools/kafka/start.sh`), else a broker `tools/kafka/start.sh`
starts for the test session (Maven fetches Kafka on first use). Where neither Kafka nor Maven
is there (a laptop without them), the tests that need it are skipped with the reason; under
CI (`CI` set) they fail instead: CI must run them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "BOOTSTRAP_ENV",
    "connector_jars",
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


def _run_tool(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(TOOLS / script)], capture_output=True, text=True, timeout=600, check=False
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
