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
import signal
import sqlite3
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.conftest import REPO_ROOT
from examples.mock_model_server import MockModelServer, RecordedRequest

pytestmark = pytest.mark.flink

RECORDS, KEYS = 300, 30
MARGIN_S = 3.0
"""How long before the kill an answer may have arrived without its outcome being recorded
(recording takes milliseconds, but waits behind other fsynced writes, and for a CPU, under
load)."""


def _committed_files(output: Path) -> list[list[dict[str, Any]]]:
    """The lines of each committed part file, in file order."""
    return [
        [json.loads(line) for line in part.read_text().splitlines() if line]
        for part in sorted(output.rglob("*"))
        if part.is_file() and not part.name.startswith(".")  # committed part files
    ]


def _committed_lines(output: Path) -> list[dict[str, Any]]:
    return [line for lines in _committed_files(output) for line in lines]


def _identity(request: RecordedRequest) -> tuple[str, int]:
    """(input, turn): the user message, and how many tool results the request carries."""
    messages = request.body["messages"]
    user = next(str(m["content"]) for m in messages if m["role"] == "user")
    return user, sum(1 for m in messages if m["role"] == "tool")


def _in_flight_at(request: RecordedRequest, kill: tuple[float, float]) -> bool:
    """Sent by the killed TaskManager, and not answered well before the kill.

    ``kill`` is (just before SIGKILL was sent, just after the new TaskManager registered):
    a request the server read before then came from the killed one, even when the server read
    it after the process was gone (its bytes were sent before). The new TaskManager sends
    nothing until its tasks are deployed after registering, and its Python workers have
    started: seconds later. (Its start is no bound: the killed process can be gone, and a new
    one started, before the server reads the killed one's last request.)
    """
    kill_sent, new_registered = kill
    return request.received_at < new_registered and (
        request.replied_at is None or request.replied_at > kill_sent - MARGIN_S
    )


def _run_job_and_kill(store_url: str, table: str | None, tmp_path: Path) -> dict[str, Any]:
    from tools.flink_cluster.standalone import StandaloneCluster

    output = tmp_path / "out"
    tool_log = tmp_path / "tools.jsonl"
    cluster = StandaloneCluster(
        tmp_path / "cluster",
        slots=2,
        options={
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "20",
            "restart-strategy.fixed-delay.delay": "1 s",
            "rest.cache.checkpoint-statistics.timeout": "200 ms",
        },
        env={"PYTHONPATH": str(REPO_ROOT), "E2E_TOOL_LOG": str(tool_log)},
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
        kill_time = time.time()
        killed = cluster.kill_taskmanager(signal.SIGKILL)
        cluster.wait_for(lambda: killed not in cluster.taskmanager_pids(), 10, "the kill")
        cluster.start_taskmanager()
        registered_time = time.time()
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


def _check(
    run: dict[str, Any],
    records_left: int,
    store: str,
    *,
    records: int = RECORDS,
    keys: int = KEYS,
    pruned: bool = True,
) -> None:
    """The outputs and the calls of `run` (see the module's docstring) for `records` inputs
    over `keys` keys; with `pruned`, that the store's records were pruned during the job."""
    kill_time: float = run["kill_time"]
    kill = (kill_time, float(run["registered_time"]))
    assert run["committed_before"] < records  # the kill happened mid-stream

    # Every input has exactly one output, with the answer built from the tool's result.
    counts = Counter((o["key"], o["n"]) for o in run["outputs"])
    inputs = {(f"k{i % keys}", i // keys) for i in range(records)}
    assert set(counts) == inputs
    assert max(counts.values()) == 1
    assert all(
        o["answer"] == f"Based on the tool: found {o['key']}/{o['n']}" for o in run["outputs"]
    )
    # Keyed memory matches the outputs: output n of a key saw exactly its inputs 0..n.
    assert all(o["seen"] == list(range(o["n"] + 1)) for o in run["outputs"])
    # Order per key within each committed file (a key's outputs leave one subtask in order).
    for lines in run["files"]:
        last: dict[str, int] = {}
        for o in lines:
            assert o["n"] > last.get(o["key"], -1), (o, last)
            last[o["key"]] = o["n"]

    # The provider got each (input, turn) exactly once, except calls in flight at the kill.
    requests: list[RecordedRequest] = run["requests"]
    by_identity: dict[tuple[str, int], list[RecordedRequest]] = {}
    for request in requests:
        by_identity.setdefault(_identity(request), []).append(request)
    expected = {(f"{k}/{n}", turn) for k, n in inputs for turn in (0, 1)}
    assert set(by_identity) == expected
    repeated = {i: len(rs) for i, rs in by_identity.items() if len(rs) > 1}
    in_flight = [r for r in requests if _in_flight_at(r, kill)]
    unexplained = {i: n for i, n in repeated.items() if not _in_flight_at(by_identity[i][0], kill)}

    # Tool calls: once per input, except calls made just before the kill.
    tool_calls = Counter(t["query"] for t in run["tools"])
    assert set(tool_calls) == {f"{k}/{n}" for k, n in inputs}
    first_tool_at: dict[str, float] = {}
    for t in run["tools"]:
        first_tool_at.setdefault(t["query"], t["at"])
    tools_repeated = {q: n for q, n in tool_calls.items() if n > 1}
    tools_unexplained = [
        q for q in tools_repeated if not kill_time - MARGIN_S < first_tool_at[q] < kill[1]
    ]

    print(
        f"\n[{store}] {len(requests)} model requests for {len(expected)} distinct (input, turn); "
        f"in flight at the kill: {len(in_flight)}; sent again after the restart "
        f"(in flight, no recorded outcome): {sum(n - 1 for n in repeated.values())} {repeated}; "
        f"tool calls repeated: {tools_repeated}; store records left after pruning: "
        f"{records_left} of {len(requests) + len(run['tools'])} calls"
    )
    timings = {  # seconds after the kill: (request received, answer sent)
        i: [(r.received_at - kill_time, r.replied_at and r.replied_at - kill_time) for r in rs]
        for i, rs in by_identity.items()
        if i in unexplained
    }
    assert not unexplained, f"calls with a recorded outcome were made again: {timings}"
    assert sum(n - 1 for n in repeated.values()) <= len(in_flight)
    assert not tools_unexplained, f"tool calls made again: {tools_unexplained}"
    if pruned:
        assert records_left < len(expected)  # completed checkpoints pruned covered runs


def _skip_without_flink_scripts(flink_prepared: Any) -> None:
    if not flink_prepared.scripts_supported:
        pytest.skip(f"Flink's scripts do not start on Java {flink_prepared.major_version}")


def test_sqlite_store_calls_once_across_a_taskmanager_kill(
    flink_prepared: Any, tmp_path: Path
) -> None:
    _skip_without_flink_scripts(flink_prepared)
    db = tmp_path / "durable.sqlite"
    run = _run_job_and_kill(f"sqlite:///{db}", None, tmp_path)
    with sqlite3.connect(db) as conn:
        left = int(conn.execute("SELECT COUNT(*) FROM durable_calls").fetchone()[0])
    _check(run, left, "sqlite")


def test_postgres_store_calls_once_across_a_taskmanager_kill(
    flink_prepared: Any, tmp_path: Path
) -> None:
    import os

    from tests.runtime.durable.conftest import _drop_table, postgres_url_from

    url = postgres_url_from(os.environ)
    _skip_without_flink_scripts(flink_prepared)
    import psycopg
    from psycopg import sql

    table = f"durable_e2e_{uuid.uuid4().hex[:10]}"
    try:
        run = _run_job_and_kill(url, table, tmp_path)
        with psycopg.connect(url) as conn:
            row = conn.execute(
                sql.SQL("SELECT COUNT(*) FROM {}").format(sql.Identifier(table))
            ).fetchone()
        assert row is not None
        _check(run, int(row[0]), "postgresql")
    finally:
        _drop_table(url, table)
