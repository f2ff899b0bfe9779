"""Many thread-mode jobs on one TaskManager of a standalone (session) cluster.

Every job submitted to a session cluster gets a class loader of its own, and `flink run`
adds the flink-python jar (pemja's Java side) to every Python job. When that jar is the
only copy, each job's loader loads pemja, and pemja's native library, again: on Java 15+
the second job on a TaskManager fails in `open` with `NoSuchFieldException:
loadedLibraryNames`. `tools/flink_cluster/standalone.py` puts flink-python into the
cluster's lib/, so pemja is loaded once per TaskManager and jobs come and go freely.

On one cluster with one TaskManager: two agent jobs (`e2e_tests/standalone_job.py`) one
after the other, then two at once, all FINISHED with every output; and a job restarted
after the TaskManager dropped its class loader (`e2e_tests/restart_job.py`: a restart
delay longer than `slot.idle.timeout`), which meets the same trap as a new job. A control
cluster set up like the package's folders (flink-python only in opt/) shows the failure
the setup avoids.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.flink

JOB = REPO_ROOT / "e2e_tests" / "standalone_job.py"
RESTART_JOB = REPO_ROOT / "e2e_tests" / "restart_job.py"
RECORDS, KEYS = 40, 8
# No restarts: a job that fails shows FAILED at once instead of restarting in a loop.
NO_RESTARTS = {"restart-strategy.type": "none"}
# Idle slots go back after 1 s (default 50 s), and a TaskManager with no slot of a job
# left drops the job's class loader.
SLOT_IDLE_TIMEOUT = {"slot.idle.timeout": "1000"}


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


def _taskmanager_log(cluster: Any) -> str:
    return "".join(p.read_text() for p in cluster.log_dir.glob("*taskexecutor*.log"))


def _assert_every_output(output: Path) -> list[dict[str, Any]]:
    lines = _committed_lines(output)
    expected = sorted((f"k{i % KEYS}", i // KEYS) for i in range(RECORDS))
    assert sorted((line["key"], line["n"]) for line in lines) == expected
    return lines


def _failure(cluster: Any, job_id: str) -> str:
    """The job's exceptions as the REST API shows them, newest first ('' when none)."""
    answer = cluster.rest(f"/jobs/{job_id}/exceptions") or {}
    entries = answer.get("exceptionHistory", {}).get("entries", [])
    return "\n".join(str(entry.get("stacktrace", "")) for entry in entries)


def _wait_finished(cluster: Any, job_id: str, timeout: float = 120) -> None:
    state = cluster.wait_for_job(job_id, ["FINISHED"], timeout)
    assert state == "FINISHED", f"job {job_id} {state}: {_failure(cluster, job_id)[:3000]}"


def _start(cluster: Any) -> None:
    cluster.start(taskmanagers=1)
    assert len(cluster.registered_taskmanagers()) == 1


@pytest.fixture(scope="class")
def cluster(flink_prepared: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One standalone cluster as the project sets it up: one TaskManager, 4 slots (two
    jobs of parallelism 2 at once). Class-scoped: it stops before the control tests
    start theirs (one cluster at a time)."""
    from tools.flink_cluster.standalone import StandaloneCluster

    if not flink_prepared.scripts_supported:
        pytest.skip(f"Flink's scripts do not start on Java {flink_prepared.major_version}")
    directory = tmp_path_factory.mktemp("many-jobs") / "cluster"
    with StandaloneCluster(
        directory,
        slots=4,
        options={**NO_RESTARTS, **SLOT_IDLE_TIMEOUT},
        env={"PYTHONPATH": str(REPO_ROOT)},
    ) as started:
        _start(started)
        yield started


class TestOneSessionCluster:
    """Jobs on one cluster as the project sets it up, one TaskManager throughout."""

    def test_jobs_one_after_another(self, cluster: Any, tmp_path: Path) -> None:
        taskmanagers, pids = cluster.registered_taskmanagers(), cluster.taskmanager_pids()
        for name in ("first", "second"):
            job_id = cluster.submit(JOB, _job_args(tmp_path / name, interval=0.01))
            _wait_finished(cluster, job_id)
            _assert_every_output(tmp_path / name)
        # The same TaskManager process ran both.
        assert cluster.registered_taskmanagers() == taskmanagers
        assert cluster.taskmanager_pids() == pids

    def test_jobs_at_once(self, cluster: Any, tmp_path: Path) -> None:
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

    def test_restart_in_a_new_class_loader(self, cluster: Any, tmp_path: Path) -> None:
        """A failure, then 4 s without the job on the TaskManager (slots idle for longer than
        `slot.idle.timeout`): the restart runs in a new class loader and recovers."""
        output, marker = tmp_path / "out", tmp_path / "failed"
        job_id = cluster.submit(
            RESTART_JOB,
            [*_job_args(output, interval=0.05), "--marker", str(marker), "--fail-at", "20"],
        )
        _wait_finished(cluster, job_id, timeout=180)
        assert marker.exists(), "the injected failure happened"
        lines = _assert_every_output(output)  # each input's output once, across the restore
        assert len(lines) == RECORDS
        # The TaskManager let go of the job (and its class loader) during the restart delay,
        # and again once it finished.
        released = f"Remove job {job_id} from job leader monitoring"
        cluster.wait_for(
            lambda: _taskmanager_log(cluster).count(released) >= 2, 15, "the job's slots freed"
        )


@contextlib.contextmanager
def _control_cluster(flink_prepared: Any, directory: Path) -> Iterator[Any]:
    """The control: daemons on the package's lib/ as it is (flink-python only in opt/, as
    a cluster set up by hand from the package's folders), one TaskManager."""
    from tools.flink_cluster.standalone import StandaloneCluster

    if not flink_prepared.scripts_supported:
        pytest.skip(f"Flink's scripts do not start on Java {flink_prepared.major_version}")
    major = flink_prepared.major_version
    if major is not None and major < 15:
        pytest.skip(f"Java {major} still has ClassLoader.loadedLibraryNames")
    with StandaloneCluster(
        directory,
        slots=2,
        options={**NO_RESTARTS, **SLOT_IDLE_TIMEOUT},
        env={"PYTHONPATH": str(REPO_ROOT)},
        python_jar_in_lib=False,
    ) as control:
        _start(control)
        yield control


def _assert_pemja_failure(failure: str) -> None:
    assert "NoSuchFieldException: loadedLibraryNames" in failure, failure[:3000]
    assert "pemja.utils.CommonUtils.loadLibrary" in failure


def test_without_python_jar_in_lib_second_job_fails(flink_prepared: Any, tmp_path: Path) -> None:
    """Control: the project refuses to submit an agent job to such a session cluster, saying
    what to do. Submitted anyway, the first thread-mode job finishes and the second fails in
    `open` (pemja's native library in a second class loader). If that starts passing,
    PyFlink or pemja fixed it and docs/operations.md can say so."""
    with _control_cluster(flink_prepared, tmp_path / "cluster") as control:
        with pytest.raises(RuntimeError, match="refusing to submit a thread-mode agent job"):
            control.submit(JOB, _job_args(tmp_path / "refused", interval=0.01))
        anyway = ["--no-session-check"]
        first = control.submit(JOB, [*_job_args(tmp_path / "first", interval=0.01), *anyway])
        _wait_finished(control, first)
        second = control.submit(JOB, [*_job_args(tmp_path / "second", interval=0.01), *anyway])
        state = control.wait_for_job(second, ["FINISHED"], 120)
        failure = _failure(control, second)
    assert state == "FAILED"
    _assert_pemja_failure(failure)


def test_without_python_jar_in_lib_restart_fails(flink_prepared: Any, tmp_path: Path) -> None:
    """Control: the only job on the cluster (as in application mode) fails for good when
    a restart comes after the TaskManager dropped its class loader."""
    marker = tmp_path / "failed"
    with _control_cluster(flink_prepared, tmp_path / "cluster") as control:
        job_id = control.submit(
            RESTART_JOB,
            [
                *_job_args(tmp_path / "out", interval=0.05),
                "--marker",
                str(marker),
                "--fail-at",
                "20",
                "--restart-attempts",
                "1",
                "--no-session-check",
            ],
        )
        state = control.wait_for_job(job_id, ["FINISHED"], 120)
        failure = _failure(control, job_id)
    assert marker.exists(), "the injected failure happened"
    assert state == "FAILED"
    _assert_pemja_failure(failure)
