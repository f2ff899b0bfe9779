"""On a real standalone cluster: the TaskManager is SIGKILLed while every key's run is
parked for approval (the requests committed by a checkpoint); a new TaskManager restores
the runs from the checkpoint and the decisions that come after resume them: each request
committed once, each approved refund made once, each declined one never, no question asked
again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from e2e_tests.conftest import REPO_ROOT
from e2e_tests.exactly_once import check_approvals_once, kill_taskmanager, restarting_cluster
from e2e_tests.test_upgrades import _committed

pytestmark = pytest.mark.flink

KEYS = 6


def test_parked_runs_survive_a_taskmanager_kill(flink_prepared: Any, tmp_path: Path) -> None:
    output, trace = tmp_path / "out", tmp_path / "trace"
    trace.mkdir()
    cluster = restarting_cluster(flink_prepared, tmp_path / "cluster")
    with cluster:
        cluster.start(taskmanagers=1)
        job_id = cluster.submit(
            REPO_ROOT / "e2e_tests" / "approval_cluster_job.py",
            ["--output", str(output), "--trace-dir", str(trace), "--keys", str(KEYS)],
        )
        assert cluster.wait_for_job(job_id, ["RUNNING"], 60) == "RUNNING"

        def all_parked() -> bool:
            return len([line for line in _committed(output) if "request" in line]) == KEYS

        cluster.wait_for(all_parked, 60, "every key's approval request committed")
        kill_taskmanager(cluster)
        killed_early = not any("output" in line for line in _committed(output))
        cluster.start_taskmanager()
        state = cluster.wait_for_job(job_id, ["FINISHED"], 120)
        assert state == "FINISHED", state
        exceptions = cluster.rest(f"/jobs/{job_id}/exceptions") or {}

    assert killed_early  # the kill came while the runs were parked
    assert exceptions.get("exceptionHistory", {}).get("entries"), "the job saw the failure"
    check_approvals_once(_committed(output), trace, KEYS)
