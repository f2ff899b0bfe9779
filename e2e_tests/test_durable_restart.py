"""Durable execution on the mini-cluster: an action fails once after its model call was
recorded; the job restarts from a checkpoint, the action runs again, and the model call is
not repeated (the counting provider saw it once). Records covered by completed
checkpoints are pruned (the mini-cluster's REST API is on a fixed port here). With the
SQLite store, and with the Kafka one (upstream's ``actionStateStoreBackend: kafka``)."""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.durable_job import FailOnceAgent
from examples.mock_model_server import MockModelServer

pytestmark = pytest.mark.flink

KEYS, INPUTS = 8, 8
FAIL_ON = "k3/5"


def _record(i: int) -> dict[str, Any]:
    time.sleep(0.04)
    return {"key": f"k{i % KEYS}", "n": i // KEYS}


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def _live_kafka_records(bootstrap: str, topic: str) -> int:
    """Records on the topic: keys whose latest message is not a tombstone."""
    from tests.runtime.durable.conftest import topic_messages

    latest = dict(topic_messages(bootstrap, topic))
    return sum(value is not None for value in latest.values())


@pytest.mark.parametrize("store_kind", ["sqlite", "kafka"])
def test_model_call_not_repeated_after_a_failure(
    stream_env: Callable[..., Any], tmp_path: Path, store_kind: str, request: pytest.FixtureRequest
) -> None:
    from pyflink.common import WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment
    from tools.flink_cluster.standalone import free_port

    store = tmp_path / "durable.sqlite"
    bootstrap = request.getfixturevalue("kafka_bootstrap") if store_kind == "kafka" else ""
    topic = f"e2e-durable-restart-{uuid.uuid4().hex[:8]}"
    with MockModelServer(delay=(0.05, 0.15)) as server:
        env = stream_env(
            parallelism=2,
            **{
                "execution.checkpointing.interval": "200 ms",
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": "3",
                "restart-strategy.fixed-delay.delay": "200 ms",
                "rest.port": str(free_port()),  # so the pruner finds the REST API
                "rest.cache.checkpoint-statistics.timeout": "100 ms",
            },
        )
        agents_env = FlinkAgentsExecutionEnvironment(env)
        config = agents_env.get_config()
        if store_kind == "kafka":
            config.set("actionStateStoreBackend", "kafka")
            config.set("kafkaBootstrapServers", bootstrap)
            config.set("kafkaActionStateTopic", topic)
            config.set("kafkaActionStateTopicNumPartitions", "4")
        else:
            config.set("durable-execution.store", f"sqlite:///{store}")
        config.set("durable-execution.prune.interval-s", "0.2")
        config.set("durable-execution.prune.clock-skew-s", "0.2")
        config.set("e2e.trace-dir", str(tmp_path))
        config.set("e2e.fail-on", FAIL_ON)
        config.set("e2e.url", server.base_url)
        numbers = env.from_source(
            NumberSequenceSource(0, KEYS * INPUTS - 1),
            WatermarkStrategy.no_watermarks(),
            "numbers",
        ).set_parallelism(1)
        source = numbers.map(_record).set_parallelism(1)
        out = (
            agents_env.from_datastream(source, key_selector=lambda r: r["key"])
            .apply(FailOnceAgent())
            .to_datastream()
        )
        with out.execute_and_collect("e2e-durable-restart") as results:
            outputs = list(results)
        requests = server.recorded()

    assert (tmp_path / "failed-once").exists()  # the injected failure happened
    pairs = Counter((o["key"], o["n"]) for o in outputs)
    assert set(pairs) == {(f"k{i % KEYS}", i // KEYS) for i in range(KEYS * INPUTS)}
    assert max(pairs.values()) == 1
    assert all(o["answer"] == f"You said: {o['key']}/{o['n']}" for o in outputs)

    traces = [
        line.split()[1] for f in tmp_path.glob("trace-*.log") for line in f.read_text().splitlines()
    ]
    assert traces.count(FAIL_ON) == 2  # the action ran again after the restart...
    sent = Counter(_prompt(r.body) for r in requests)
    assert sent[FAIL_ON] == 1  # ...and its recorded model call was replayed, not repeated
    assert set(sent) == {f"k{i % KEYS}/{i // KEYS}" for i in range(KEYS * INPUTS)}
    # Other keys' calls cancelled by the failure (begun, no outcome) may run twice.
    repeated = {p: c for p, c in sent.items() if c > 1}
    print(f"model calls repeated after the restart (in flight at the failure): {repeated}")
    assert sum(c - 1 for c in repeated.values()) <= KEYS

    if store_kind == "kafka":
        from tests.runtime.durable.conftest import delete_topic

        left = _live_kafka_records(bootstrap, topic)
        delete_topic(bootstrap, topic)
    else:
        with sqlite3.connect(store) as conn:
            left = conn.execute("SELECT COUNT(*) FROM durable_calls").fetchone()[0]
    print(f"records left in the store: {left} of {len(sent)} calls")
    assert left < len(sent)  # completed checkpoints pruned the runs they cover
