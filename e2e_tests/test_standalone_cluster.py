"""A real standalone cluster (JobManager + TaskManager processes from the apache-flink
package's scripts, on 127.0.0.1): the agent job is submitted with `flink run`, the
TaskManager is SIGKILLed mid-stream and a new one started; no input is lost and the
checkpointed file sink holds every output exactly once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.conftest import REPO_ROOT
from e2e_tests.exactly_once import replace_taskmanager, restarting_cluster

pytestmark = pytest.mark.flink

RECORDS, KEYS = 600, 40


def _committed_lines(output: Path) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for part in output.rglob("*"):
        # In-progress and pending files start with a dot; committed ones do not.
        if part.is_file() and not part.name.startswith("."):
            lines += [json.loads(line) for line in part.read_text().splitlines() if line]
    return lines


def _agent_metric(cluster: Any, job_id: str, name: str) -> dict[str, float]:
    """The operator metric `flinkAgents.<name>` of the agent vertex, by subtask."""
    job = cluster.rest(f"/jobs/{job_id}") or {}
    for vertex in job.get("vertices", []):
        if "slow-agent" not in vertex.get("name", ""):
            continue
        base = f"/jobs/{job_id}/vertices/{vertex['id']}/metrics"
        available = cluster.rest(base) or []
        ids = [m["id"] for m in available if m["id"].endswith(f".flinkAgents.{name}")]
        if not ids:
            return {}
        values = cluster.rest(f"{base}?get={','.join(ids)}") or []
        return {v["id"]: float(v["value"]) for v in values}
    return {}


def test_taskmanager_killed_mid_stream(flink_prepared: Any, tmp_path: Path) -> None:
    output = tmp_path / "out"
    cluster = restarting_cluster(flink_prepared, tmp_path / "cluster")
    with cluster:
        cluster.start(taskmanagers=1)
        job_id = cluster.submit(
            REPO_ROOT / "e2e_tests" / "standalone_job.py",
            [
                "--output",
                str(output),
                "--records",
                str(RECORDS),
                "--keys",
                str(KEYS),
                "--interval",
                "0.012",
                "--latency",
                "0.1",
            ],
        )
        assert cluster.wait_for_job(job_id, ["RUNNING"], 60) == "RUNNING"
        # Mid-stream: some outputs committed by a checkpoint, the source still producing,
        # the agent metrics visible through Flink's REST API.
        cluster.wait_for(lambda: len(_committed_lines(output)) >= 20, 60, "committed output")
        finished_runs: dict[str, float] = {}

        def metrics_visible() -> bool:
            finished_runs.update(_agent_metric(cluster, job_id, "runsFinished"))
            return sum(finished_runs.values()) > 0

        cluster.wait_for(metrics_visible, 20, "agent metrics")
        committed_before = len(_committed_lines(output))
        replace_taskmanager(cluster)
        state = cluster.wait_for_job(job_id, ["FINISHED"], 120)
        assert state == "FINISHED", state
        exceptions = cluster.rest(f"/jobs/{job_id}/exceptions") or {}

    assert committed_before < RECORDS  # the kill happened mid-stream
    lines = _committed_lines(output)
    counts = Counter((line["key"], line["n"]) for line in lines)
    expected = {(f"k{i % KEYS}", i // KEYS) for i in range(RECORDS)}
    assert set(counts) == expected  # no input lost
    assert max(counts.values()) == 1  # and none written twice
    assert exceptions.get("exceptionHistory", {}).get("entries"), "the job saw the failure"
    # Agent metrics reached Flink's metric system, per subtask.
    assert all(".flinkAgents.runsFinished" in name for name in finished_runs)
