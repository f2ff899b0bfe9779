"""Stores for the durable tests: SQLite always, PostgreSQL and Kafka when a server is given.

PostgreSQL tests read the server URL from FLINK_AGENTS_TEST_POSTGRES_URL (start one with
``tools/postgres/start.sh``). Without it they skip, except under CI (``CI=true``), where they
fail: CI must run them. Kafka tests take the broker `e2e_tests.kafka.start_broker` gives:
FLINK_AGENTS_TEST_KAFKA_BOOTSTRAP, else one ``tools/kafka/start.sh`` starts; skipped where
neither Kafka nor Java and Maven are there, failed instead under CI.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from flink_agents.runtime.durable import (
    ActionStateStore,
    KafkaActionStateStore,
    PostgresActionStateStore,
    SqliteActionStateStore,
)

POSTGRES_URL_ENV = "FLINK_AGENTS_TEST_POSTGRES_URL"

STORE_KINDS = ["sqlite", "postgres", "kafka"]


def postgres_url_from(environ: Mapping[str, str]) -> str:
    """The test server URL; skips without one, fails instead under CI=true."""
    url = environ.get(POSTGRES_URL_ENV, "").strip()
    if url:
        return url
    if environ.get("CI", "").strip().lower() == "true":
        pytest.fail(
            f"{POSTGRES_URL_ENV} is not set but CI=true: CI must run the PostgreSQL tests "
            "(start a server with tools/postgres/start.sh)",
            pytrace=False,
        )
    pytest.skip(f"PostgreSQL tests need {POSTGRES_URL_ENV} (tools/postgres/start.sh)")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    return postgres_url_from(os.environ)


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    from e2e_tests.kafka import start_broker, stop_broker

    bootstrap, started = start_broker()
    yield bootstrap
    if started:
        stop_broker()


def new_topic_name() -> str:
    return f"durable-test-{uuid.uuid4().hex[:12]}"


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the futures are done
    for future in admin.delete_topics([topic], operation_timeout=30).values():
        future.result(timeout=30)


def topic_messages(bootstrap: str, topic: str) -> list[tuple[bytes, bytes | None]]:
    """Every message of ``topic`` as Kafka holds it (key, value), read to its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"durable-test-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        left, messages = set(partitions), []
        deadline = time.monotonic() + 30
        while left and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None:
                error = message.error()
                if error is not None:
                    assert error.code() == KafkaError._PARTITION_EOF, error
                    left.discard(message.partition())
                else:
                    messages.append((message.key(), message.value()))
        assert not left, f"partitions {sorted(left)} of {topic} not read to their end"
        return messages
    finally:
        consumer.close()


@pytest.fixture
def kafka_store(kafka_bootstrap: str) -> Iterator[KafkaActionStateStore]:
    topic = new_topic_name()
    store = KafkaActionStateStore(kafka_bootstrap, topic, num_partitions=4)
    yield store
    store.close()
    delete_topic(kafka_bootstrap, topic)


def _drop_table(url: str, table: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


@pytest.fixture
def postgres_store(postgres_url: str) -> Iterator[PostgresActionStateStore]:
    table = f"durable_test_{uuid.uuid4().hex[:12]}"
    store = PostgresActionStateStore(postgres_url, table=table)
    yield store
    store.close()
    _drop_table(postgres_url, table)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteActionStateStore]:
    store = SqliteActionStateStore(tmp_path / "durable.sqlite")
    yield store
    store.close()


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest) -> ActionStateStore:
    """Each test that takes ``store`` runs against every store."""
    return request.getfixturevalue(f"{request.param}_store")


OpenStore = Callable[..., ActionStateStore]
"""``open_store(pipeline=..., shared=...)``: another store over the same table."""


@pytest.fixture(params=STORE_KINDS)
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenStore]:
    """Opens stores over one table or topic (of each store kind in turn); all closed at the
    end."""
    opened: list[ActionStateStore] = []
    table = f"durable_test_{uuid.uuid4().hex[:12]}"
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else ""
    bootstrap = request.getfixturevalue("kafka_bootstrap") if request.param == "kafka" else ""
    topic = new_topic_name()

    def open_one(**options: Any) -> ActionStateStore:
        store: ActionStateStore
        if request.param == "postgres":
            store = PostgresActionStateStore(url, table=table, **options)
        elif request.param == "kafka":
            store = KafkaActionStateStore(bootstrap, topic, num_partitions=4, **options)
        else:
            store = SqliteActionStateStore(tmp_path / "shared.sqlite", table=table, **options)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()
    if url:
        _drop_table(url, table)
    if bootstrap:
        delete_topic(bootstrap, topic)
