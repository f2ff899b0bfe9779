"""Kafka in and out exactly once across a killed TaskManager, on a real standalone cluster.

`kafka_cluster_job.py` (submitted with `flink run`) runs `ToolChatAgent` (two model turns
against the counting mock model server and one tool call per input) between a KafkaSource
(a topic of two partitions) and an exactly-once KafkaSink, with a durable SQLite store. The
TaskManager is SIGKILLed while model calls are in flight and before the last input was even
asked (asserted), and a new one started. Then a `read_committed` consumer sees every answer
exactly once, nothing lost, each key's answers in input order with memory consistent with
them, and no recorded model or tool call was made again except the ones in flight at the
kill (the checks of `test_durable_cluster.py`, `e2e_tests.exactly_once`).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.conftest import REPO_ROOT
from e2e_tests.exactly_once import (
    check_calls_once,
    replace_taskmanager,
    request_identity,
    restarting_cluster,
)
from e2e_tests.kafka import (
    connector_jars,
    create_topics,
    keyed_records,
    produce,
    read_committed,
)
from examples.mock_model_server import MockModelServer

pytestmark = pytest.mark.flink

KEYS, INPUTS = 4, 8
RECORDS = KEYS * INPUTS


def test_kafka_answers_exactly_once_across_a_taskmanager_kill(
    flink_prepared: Any, kafka_bootstrap: str, tmp_path: Path
) -> None:
    topics = create_topics(kafka_bootstrap, 2)
    produce(kafka_bootstrap, topics["in"], keyed_records(KEYS, 0, RECORDS))
    db, tool_log = tmp_path / "durable.sqlite", tmp_path / "tools.jsonl"
    cluster = restarting_cluster(
        flink_prepared, tmp_path / "cluster", env={"E2E_TOOL_LOG": str(tool_log)}
    )
    with MockModelServer(delay=(0.2, 0.4)) as server, cluster:
        cluster.start(taskmanagers=1)
        args = ["--bootstrap", kafka_bootstrap, "--topics", json.dumps(topics)]
        args += ["--jars", ";".join(connector_jars()), "--base-url", server.base_url]
        args += ["--store", f"sqlite:///{db}"]
        job_id = cluster.submit(REPO_ROOT / "e2e_tests" / "kafka_cluster_job.py", args)

        def asked() -> set[str]:
            """The inputs whose first model turn was sent."""
            return {i for i, turn in map(request_identity, server.recorded()) if turn == 0}

        def mid_run() -> bool:
            in_flight = any(r.replied_at is None for r in server.recorded())
            return in_flight and len(asked()) >= RECORDS // 4

        cluster.wait_for(mid_run, 120, "a quarter of the inputs asked, calls in flight")
        asked_before = len(asked())
        kill_time, registered_time = replace_taskmanager(cluster)
        state = cluster.wait_for_job(job_id, ["FINISHED"], 150)
        assert state == "FINISHED", state
        requests = server.recorded()

    assert asked_before < RECORDS  # the kill landed mid-run: inputs were still to be asked
    lines = read_committed(kafka_bootstrap, topics["out"], expected=RECORDS)
    outputs = [json.loads(value) for _, value in lines]
    assert read_committed(kafka_bootstrap, topics["errors"], expected=0, settle_s=0.5) == []
    with sqlite3.connect(db) as conn:
        left = int(conn.execute("SELECT COUNT(*) FROM durable_calls").fetchone()[0])
    run = {
        "outputs": outputs,
        "files": [outputs],  # one partition: the order the sink's subtasks wrote
        "committed_before": asked_before,
        "kill_time": kill_time,
        "registered_time": registered_time,
        "requests": requests,
        "tools": [json.loads(line) for line in tool_log.read_text().splitlines() if line],
    }
    # The job ends seconds after the kill, too soon for the store's pruner to have pruned
    # much (test_durable_cluster.py checks pruning on a longer job).
    check_calls_once(run, left, "sqlite, kafka", records=RECORDS, keys=KEYS, pruned=False)
