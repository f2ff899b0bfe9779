"""Many thread-mode jobs on one TaskManager of a standalone (session) cluster.

Every job submitted to a session cluster gets a class loader of its own, and `flink run`
adds the flink-python jar (pemja's Java side) to every Python job. When that jar is the
only copy, each job's loader loads pemja, and pemja's native library, again: on Java 15+
the second job on a TaskManager fails in `open` with `NoSuchFieldException:
loadedLibraryNames`. `tools/flink_cluster/standalone.py` puts flink-python into the
cluster's lib/, so pemja is loaded once per TaskManager and jobs come and go freely.

On one cluster with one TaskManager: two agent jobs (`e2e_tests/standalone_job.py`) one
after the other, then two at once, all FINISHED with every output. A control cluster set
up like the package's folders (flink-python only in opt/) shows the failure the setup
avoids.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.flink

JOB = REPO_ROOT / "e2e_tests" / "standalone_job.py"
RECORDS, KEYS = 40, 8
# No restarts: a job that fails shows FAILED at once instead of restarting in a loop.
NO_RESTARTS = {"restart-strategy.type": "none"}


def _job_args(output: Path, *, interval: float) -> list[str]:
    return [
        "--output",
        str(output),
        "--records",
        str(RECORDS),
        "--keys",
        str(KEYS),
        "--interval",
        str(interval),
        "--latency",
        "0.05",
    ]


def _committed_lines(output: Path) -> list[dict[str, Any]]:
    """The sink's committed lines (in-progress and pending part files start with a dot)."""
    lines: list[dict[str, Any]] = []
    for part in output.rglob("*"):
        if part.is_file() and not part.name.startswith("."):
            lines += [json.loads(line) for line in part.read_text().splitlines() if line]
    return lines


def _assert_every_output(output: Path) -> list[dict[str, Any]]:
    lines = _committed_lines(output)
    expected = sorted((f"k{i % KEYS}", i // KEYS) for i in range(RECORDS))
    assert sorted((line["key"], line["n"]) for line in lines) == expected
    return lines


def _failure(cluster: Any, job_id: str) -> str:
    """The job's latest exception as the REST API shows it ('' when none)."""
    answer = cluster.rest(f"/jobs/{job_id}/exceptions") or {}
    entries = answer.get("exceptionHistory", {}).get("entries", [])
    return str(entries[0].get("stacktrace", "")) if entries else ""


def _wait_finished(cluster: Any, job_id: str, timeout: float = 120) -> None:
    state = cluster.wait_for_job(job_id, ["FINISHED"], timeout)
    assert state == "FINISHED", f"job {job_id} {state}: {_failure(cluster, job_id)[:3000]}"


def _start(cluster: Any) -> None:
    cluster.start(taskmanagers=1)
    assert len(cluster.registered_taskmanagers()) == 1


@pytest.fixture(scope="module")
def cluster(flink_prepared: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One standalone cluster as the project sets it up: one TaskManager, 4 slots (two
    jobs of parallelism 2 at once)."""
    from tools.flink_cluster.standalone import StandaloneCluster

    if not flink_prepared.scripts_supported:
        pytest.skip(f"Flink's scripts do not start on Java {flink_prepared.major_version}")
    directory = tmp_path_factory.mktemp("many-jobs") / "cluster"
    with StandaloneCluster(
        directory, slots=4, options=NO_RESTARTS, env={"PYTHONPATH": str(REPO_ROOT)}
    ) as started:
        _start(started)
        yield started


def test_jobs_one_after_another(cluster: Any, tmp_path: Path) -> None:
    taskmanagers, pids = cluster.registered_taskmanagers(), cluster.taskmanager_pids()
    for name in ("first", "second"):
        job_id = cluster.submit(JOB, _job_args(tmp_path / name, interval=0.01))
        _wait_finished(cluster, job_id)
        _assert_every_output(tmp_path / name)
    # The same TaskManager process ran both.
    assert cluster.registered_taskmanagers() == taskmanagers
    assert cluster.taskmanager_pids() == pids


def test_jobs_at_once(cluster: Any, tmp_path: Path) -> None:
    taskmanagers, pids = cluster.registered_taskmanagers(), cluster.taskmanager_pids()
    outputs = [tmp_path / "left", tmp_path / "right"]
    # A record every 0.3 s: each job's source runs ~12 s, longer than the gap between
    # two `flink run` clients started together.
    with ThreadPoolExecutor(max_workers=2) as pool:
        job_ids = list(
            pool.map(lambda out: cluster.submit(JOB, _job_args(out, interval=0.3)), outputs)
        )
    for job_id in job_ids:
        _wait_finished(cluster, job_id)
    spans: list[tuple[float, float]] = []
    for output in outputs:
        done = [line["done_at"] for line in _assert_every_output(output)]
        spans.append((min(done), max(done)))
    # The two jobs' agents answered inputs during the same time: they ran at once.
    (left_start, left_end), (right_start, right_end) = spans
    assert left_start < right_end and right_start < left_end, spans
    assert cluster.registered_taskmanagers() == taskmanagers
    assert cluster.taskmanager_pids() == pids


def test_without_python_jar_in_lib_second_job_fails(flink_prepared: Any, tmp_path: Path) -> None:
    """The control: daemons on the package's lib/ as it is (flink-python only in opt/, as
    a cluster set up by hand from the package's folders). The first thread-mode job
    finishes; the second fails in `open` (pemja's native library in a second class
    loader). If this starts passing, PyFlink or pemja fixed it and the docs can say so."""
    from tools.flink_cluster.standalone import StandaloneCluster

    if not flink_prepared.scripts_supported:
        pytest.skip(f"Flink's scripts do not start on Java {flink_prepared.major_version}")
    major = flink_prepared.major_version
    if major is not None and major < 15:
        pytest.skip(f"Java {major} still has ClassLoader.loadedLibraryNames")
    with StandaloneCluster(
        tmp_path / "cluster",
        slots=2,
        options=NO_RESTARTS,
        env={"PYTHONPATH": str(REPO_ROOT)},
        python_jar_in_lib=False,
    ) as control:
        _start(control)
        first = control.submit(JOB, _job_args(tmp_path / "first", interval=0.01))
        _wait_finished(control, first)
        second = control.submit(JOB, _job_args(tmp_path / "second", interval=0.01))
        state = control.wait_for_job(second, ["FINISHED"], 120)
        failure = _failure(control, second)
    assert state == "FAILED"
    assert "NoSuchFieldException: loadedLibraryNames" in failure
    assert "pemja.utils.CommonUtils.loadLibrary" in failure
