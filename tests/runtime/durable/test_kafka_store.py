"""The Kafka store against a real broker (see ``conftest.kafka_bootstrap``): what the shared
store tests (``store`` and ``open_store``, parametrized over it) do not show."""

from __future__ import annotations

import importlib
import json
import pickle
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.runtime.durable import (
    CallOutcome,
    DurableCallLog,
    DurableStoreError,
    DurableStoreUnavailableError,
    KafkaActionStateStore,
    StoreRetry,
)
from flink_agents.runtime.durable.store_url import open_durable_call_log

from ._support import Counter, key
from .conftest import delete_topic, new_topic_name, topic_messages

VALUE = CallOutcome(status="value", value_json="1")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def topic(kafka_bootstrap: str) -> Iterator[str]:
    name = new_topic_name()
    yield name
    delete_topic(kafka_bootstrap, name)


# confluent_kafka.admin re-exports these from its C module, which type checkers call private.
ADMIN: Any = importlib.import_module("confluent_kafka.admin")


def _admin(bootstrap: str) -> Any:
    return ADMIN.AdminClient({"bootstrap.servers": bootstrap})


def _topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    admin = _admin(bootstrap)
    resource = ADMIN.ConfigResource("topic", topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    return {name: entry.value for name, entry in configs.items()}


def _create_topic(bootstrap: str, topic: str, partitions: int, **config: str) -> None:
    admin = _admin(bootstrap)
    new = ADMIN.NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config)
    admin.create_topics([new])[topic].result(timeout=30)


def _produce(bootstrap: str, topic: str, key: bytes, value: bytes) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0


def test_unreachable_broker_is_unavailable_and_the_call_does_not_run() -> None:
    store = KafkaActionStateStore(f"127.0.0.1:{_closed_port()}", "records", timeout_s=1)
    tool = Counter()
    started = time.monotonic()
    with pytest.raises(DurableStoreUnavailableError) as raised:
        DurableCallLog(store, retry=StoreRetry(0)).execute_sync(key(), tool, (), {})
    assert time.monotonic() - started < 15
    assert tool.count == 0
    assert "topic records" in str(raised.value) and "get failed" in str(raised.value)
    store.close()


def test_the_topic_is_created_compacted_with_the_partitions_asked_for(
    kafka_bootstrap: str, topic: str
) -> None:
    store = KafkaActionStateStore(kafka_bootstrap, topic, num_partitions=3)
    assert store.get(key()) is None
    assert _topic_config(kafka_bootstrap, topic)["cleanup.policy"] == "compact"
    metadata = _admin(kafka_bootstrap).list_topics(topic=topic, timeout=30)
    assert len(metadata.topics[topic].partitions) == 3
    store.close()


def test_a_topic_that_is_not_compacted_is_refused(kafka_bootstrap: str, topic: str) -> None:
    _create_topic(kafka_bootstrap, topic, 2, **{"cleanup.policy": "delete"})
    store = KafkaActionStateStore(kafka_bootstrap, topic)
    with pytest.raises(DurableStoreError, match=r"cleanup\.policy is 'delete'"):
        store.get(key())


def test_a_topic_holding_other_data_is_refused(kafka_bootstrap: str, topic: str) -> None:
    _create_topic(kafka_bootstrap, topic, 1, **{"cleanup.policy": "compact"})
    _produce(kafka_bootstrap, topic, b"user-1_0_act_0", b'{"completed": true}')
    store = KafkaActionStateStore(kafka_bootstrap, topic)
    with pytest.raises(DurableStoreError, match="not a durable-call record of this runtime"):
        store.get(key())


def test_a_changed_partition_count_is_refused(kafka_bootstrap: str, topic: str) -> None:
    store = KafkaActionStateStore(kafka_bootstrap, topic, num_partitions=2)
    for index in range(16):
        store.begin(key(agent_key=f"k{index}"), "d")
    store.close()
    admin = _admin(kafka_bootstrap)
    admin.create_partitions([ADMIN.NewPartitions(topic, 5)])[topic].result(timeout=30)
    with pytest.raises(DurableStoreError, match="partition count changed"):
        KafkaActionStateStore(kafka_bootstrap, topic).get(key())


def test_records_are_pruned_by_tombstones(kafka_bootstrap: str, topic: str) -> None:
    store = KafkaActionStateStore(kafka_bootstrap, topic, num_partitions=4)
    for seq in range(3):
        for step in range(2):
            store.begin(key(seq=seq, step=step), "d")
            store.record_outcome(key(seq=seq, step=step), "d", VALUE)
    assert store.prune("user-1", 1) == 4

    messages = topic_messages(kafka_bootstrap, topic)
    tombstoned = {json.loads(k)[2] for k, value in messages if value is None}
    assert tombstoned == {0, 1}  # the seqs pruned
    assert len([value for _, value in messages if value is None]) == 4
    # A fresh store (a restored worker) sees only the records left.
    again = pickle.loads(pickle.dumps(store))
    assert again.load_run("user-1", 0) == [] and again.load_run("user-1", 1) == []
    assert [r.key.step for r in again.load_run("user-1", 2)] == [0, 1]
    store.close()
    again.close()


def test_a_store_sees_what_another_store_wrote_after_it_opened(
    kafka_bootstrap: str, topic: str
) -> None:
    """Every read catches up with the run's partition: a record written by another worker (a
    task that was still finishing, in Flink) is seen, as in the SQL stores."""
    first = KafkaActionStateStore(kafka_bootstrap, topic, num_partitions=4)
    second = KafkaActionStateStore(kafka_bootstrap, topic, num_partitions=4)
    assert first.get(key()) is None  # opened: the topic is read
    second.begin(key(), "d")
    second.record_outcome(key(), "d", VALUE)
    record = first.get(key())
    assert record is not None and record.outcome == VALUE
    # A begin drops the later records another store wrote.
    second.begin(key(step=3), "later")
    first.begin(key(step=1), "now")
    assert [r.key.step for r in second.load_run("user-1", 0)] == [0, 1]
    first.close()
    second.close()


class _UnacknowledgingProducer:
    """A producer whose messages are never acknowledged (a broker that stopped answering)."""

    def produce(self, *args: Any, **kwargs: Any) -> None:
        pass

    def flush(self, timeout: float) -> int:
        return 1

    def purge(self) -> None:
        pass


def test_an_unacknowledged_write_is_unavailable_and_not_taken_as_recorded(
    kafka_bootstrap: str, topic: str
) -> None:
    store = KafkaActionStateStore(kafka_bootstrap, topic, num_partitions=2)
    assert store.get(key()) is None
    store._producer = _UnacknowledgingProducer()  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(DurableStoreUnavailableError, match="not acknowledged"):
        store.begin(key(), "d")
    assert store.get(key()) is None  # not in memory: Kafka never said it has it
    store.begin(key(), "d")  # a new producer: the store works again
    fresh = KafkaActionStateStore(kafka_bootstrap, topic)
    record = fresh.get(key())
    assert record is not None and record.pending
    store.close()
    fresh.close()


def test_pickling_ships_the_configuration_only(kafka_bootstrap: str, topic: str) -> None:
    store = KafkaActionStateStore(kafka_bootstrap, topic, num_partitions=2, pipeline="p")
    store.begin(key(), "d")
    copy = pickle.loads(pickle.dumps(store))
    assert copy.__getstate__() == store.__getstate__()
    record = copy.get(key())
    assert record is not None and record.digest == "d"
    assert (
        repr(copy) == f"KafkaActionStateStore({kafka_bootstrap!r}, topic={topic!r}, pipeline='p')"
    )
    store.close()
    copy.close()


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="kafkaActionStateTopic"):
        KafkaActionStateStore("h:9092", "no spaces")
    with pytest.raises(ValueError, match="broker"):
        KafkaActionStateStore(" ", "t")
    with pytest.raises(ValueError, match="partition"):
        KafkaActionStateStore("h:9092", "t", num_partitions=0)


# -- upstream's options ----------------------------------------------------------------------


def test_upstream_options_open_the_kafka_store(kafka_bootstrap: str, topic: str) -> None:
    config = AgentConfiguration(
        {
            "actionStateStoreBackend": "kafka",
            "kafkaBootstrapServers": kafka_bootstrap,
            "kafkaActionStateTopic": topic,
            "kafkaActionStateTopicNumPartitions": 3,
            "kafkaActionStateTopicReplicationFactor": 1,
            "durable-execution.pipeline-id": "orders",
        }
    )
    log = open_durable_call_log(config)
    assert log is not None
    store = log.store
    assert isinstance(store, KafkaActionStateStore)
    assert (store.bootstrap_servers, store.topic, store.pipeline) == (
        kafka_bootstrap,
        topic,
        "orders",
    )
    tool = Counter()
    assert log.execute_sync(key(), tool, (), {})["call"] == 1
    replayed = open_durable_call_log(config)
    assert replayed is not None and replayed.execute_sync(key(), tool, (), {})["call"] == 1
    assert tool.count == 1
    metadata = _admin(kafka_bootstrap).list_topics(topic=topic, timeout=30)
    assert len(metadata.topics[topic].partitions) == 3
    log.close()
    replayed.close()


def test_upstream_options_need_a_topic_and_one_store() -> None:
    with pytest.raises(ValueError, match="kafkaActionStateTopic"):
        open_durable_call_log(AgentConfiguration({"actionStateStoreBackend": "kafka"}))
    both = {
        "actionStateStoreBackend": "kafka",
        "kafkaActionStateTopic": "t",
        "durable-execution.store": "sqlite:///x.db",
    }
    with pytest.raises(ValueError, match="set one"):
        open_durable_call_log(AgentConfiguration(both))
    table = {
        "actionStateStoreBackend": "kafka",
        "kafkaActionStateTopic": "t",
        "durable-execution.store.table": "calls",
    }
    with pytest.raises(ValueError, match="SQL table"):
        open_durable_call_log(AgentConfiguration(table))
