"""Exactly-once model and tool calls on a real standalone cluster (issue 5).

The job (`durable_job.py`, submitted with `flink run`) runs `ToolChatAgent` against a
counting OpenAI-compatible mock server on 127.0.0.1 (answers take 100-300 ms), with the
action-state store on SQLite or PostgreSQL. The TaskManager is SIGKILLed while calls are in
flight and a new one started. Then: every input has exactly one output, and the provider got
each distinct request (input, turn) exactly once, except requests that were in flight at the
kill (sent, no answer recorded before it): those are counted, printed, and must be no more
than the requests in flight at that moment. Tool calls are checked the same way. Records of
runs covered by completed checkpoints were pruned during the job.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.conftest import REPO_ROOT
from e2e_tests.exactly_once import check_calls_once, replace_taskmanager, restarting_cluster
from examples.mock_model_server import MockModelServer

pytestmark = pytest.mark.flink

RECORDS, KEYS = 300, 30


def _committed_files(output: Path) -> list[list[dict[str, Any]]]:
    """The lines of each committed part file, in file order."""
    return [
        [json.loads(line) for line in part.read_text().splitlines() if line]
        for part in sorted(output.rglob("*"))
        if part.is_file() and not part.name.startswith(".")  # committed part files
    ]


def _committed_lines(output: Path) -> list[dict[str, Any]]:
    return [line for lines in _committed_files(output) for line in lines]


def _run_job_and_kill(
    flink_prepared: Any, store_url: str, table: str | None, tmp_path: Path
) -> dict[str, Any]:
    output = tmp_path / "out"
    tool_log = tmp_path / "tools.jsonl"
    cluster = restarting_cluster(
        flink_prepared,
        tmp_path / "cluster",
        env={"E2E_TOOL_LOG": str(tool_log)},
        options={"rest.cache.checkpoint-statistics.timeout": "200 ms"},
    )
    with MockModelServer(delay=(0.1, 0.3)) as server, cluster:
        cluster.start(taskmanagers=1)
        args = ["--output", str(output), "--base-url", server.base_url, "--store", store_url]
        args += ["--records", str(RECORDS), "--keys", str(KEYS), "--interval", "0.02"]
        if table:
            args += ["--table", table]
        job_id = cluster.submit(REPO_ROOT / "e2e_tests" / "durable_job.py", args)
        assert cluster.wait_for_job(job_id, ["RUNNING"], 60) == "RUNNING"
        cluster.wait_for(lambda: len(_committed_lines(output)) >= 20, 90, "committed output")

        def calls_in_flight() -> bool:
            return any(r.replied_at is None for r in server.recorded())

        cluster.wait_for(calls_in_flight, 20, "model calls in flight")
        committed_before = len(_committed_lines(output))
        kill_time, registered_time = replace_taskmanager(cluster)
        state = cluster.wait_for_job(job_id, ["FINISHED"], 150)
        assert state == "FINISHED", state
        requests = server.recorded()
    tools = [json.loads(line) for line in tool_log.read_text().splitlines() if line]
    return {
        "outputs": _committed_lines(output),
        "files": _committed_files(output),
        "committed_before": committed_before,
        "kill_time": kill_time,
        "registered_time": registered_time,
        "requests": requests,
        "tools": tools,
    }


def test_sqlite_store_calls_once_across_a_taskmanager_kill(
    flink_prepared: Any, tmp_path: Path
) -> None:
    db = tmp_path / "durable.sqlite"
    run = _run_job_and_kill(flink_prepared, f"sqlite:///{db}", None, tmp_path)
    with sqlite3.connect(db) as conn:
        left = int(conn.execute("SELECT COUNT(*) FROM durable_calls").fetchone()[0])
    check_calls_once(run, left, "sqlite", records=RECORDS, keys=KEYS)


def test_postgres_store_calls_once_across_a_taskmanager_kill(
    flink_prepared: Any, tmp_path: Path
) -> None:
    import os

    from tests.runtime.durable.conftest import _drop_table, postgres_url_from

    url = postgres_url_from(os.environ)
    import psycopg
    from psycopg import sql

    table = f"durable_e2e_{uuid.uuid4().hex[:10]}"
    try:
        run = _run_job_and_kill(flink_prepared, url, table, tmp_path)
        with psycopg.connect(url) as conn:
            row = conn.execute(
                sql.SQL("SELECT COUNT(*) FROM {}").format(sql.Identifier(table))
            ).fetchone()
        assert row is not None
        check_calls_once(run, int(row[0]), "postgresql", records=RECORDS, keys=KEYS)
    finally:
        _drop_table(url, table)
