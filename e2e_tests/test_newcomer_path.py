"""The path a newcomer takes through the docs, with the code exactly as the pages show it.

`test_newcomer_path`: the quickstart's agent (docs/quickstart.md, its first example) in a
job script `weather.py`, run on the local runner (the quickstart's local lines), then on the
mini-cluster (its Flink job), then submitted to a standalone cluster, where the print sink
writes to the TaskManager's `.out` file; then the deployment tutorial (docs/deployment.md,
the `cluster-job` block): the agent in a module of its own, a job with a file source and a
checkpointed file sink on the same cluster, stopped with a savepoint and restored.

`test_flink_example`: every other docs example that needs a mini-cluster, run as a script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.conftest import REPO_ROOT
from tests.docs.markdown_blocks import (
    ROOT,
    CodeBlock,
    example_blocks,
    expected_per_line,
    match_lines,
    match_output,
    run_as_script,
)

pytestmark = pytest.mark.flink

QUICKSTART = ROOT / "docs" / "quickstart.md"
DEPLOYMENT = ROOT / "docs" / "deployment.md"


def _quickstart() -> tuple[CodeBlock, CodeBlock, CodeBlock]:
    """The quickstart's agent, its local lines and its Flink job."""
    blocks = [b for b in example_blocks([QUICKSTART]) if not b.is_partial]
    agent = blocks[0]
    local = next(b for b in blocks if b.continues and not b.needs_flink)
    flink = next(b for b in blocks if b.needs_flink)
    assert not agent.continues and flink.continues and flink.output, "the quickstart changed"
    return agent, local, flink


def _tutorial_job() -> CodeBlock:
    jobs = [b for b in example_blocks([DEPLOYMENT]) if b.is_cluster_job]
    assert len(jobs) == 1, "deployment.md has one tutorial job script"
    return jobs[0]


def _other_flink_examples() -> list[CodeBlock]:
    covered = {block.name for block in _quickstart()}
    return [
        block
        for block in example_blocks()
        if block.needs_flink
        and not block.is_cluster_job
        and not block.is_partial
        and block.name not in covered
    ]


def _run_script(script: Path, cwd: Path, timeout: float = 300) -> str:
    result = subprocess.run(
        [sys.executable, script.name],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"python {script.name} failed:\n{result.stderr[-6000:]}"
    return result.stdout


def _committed_lines(folder: Path) -> list[str]:
    """Lines of the sink's committed part files (in-progress ones start with a dot)."""
    lines: list[str] = []
    for part in sorted(folder.rglob("*")):
        if part.is_file() and not part.name.startswith("."):
            lines += [line for line in part.read_text().splitlines() if line]
    return lines


def _taskmanager_out(cluster: Any) -> str:
    return "".join(path.read_text() for path in cluster.log_dir.glob("*taskexecutor*.out"))


def _stop_with_savepoint(cluster: Any, job_id: str, target: Path) -> str:
    """POST /jobs/<id>/stop as the tutorial shows; the savepoint's location."""
    request = urllib.request.Request(
        f"{cluster.rest_url}/jobs/{job_id}/stop",
        data=json.dumps({"drain": False, "targetDirectory": str(target)}).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        trigger = json.loads(response.read())["request-id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = cluster.rest(f"/jobs/{job_id}/savepoints/{trigger}") or {}
        if status.get("status", {}).get("id") == "COMPLETED":
            operation = status["operation"]
            assert "location" in operation, f"the savepoint failed: {operation}"
            return str(operation["location"])
        time.sleep(0.5)
    raise TimeoutError(f"no savepoint of {job_id} after 120 s")


def test_newcomer_path(
    flink_prepared: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools.flink_cluster.standalone import StandaloneCluster

    agent, local, flink = _quickstart()
    script = tmp_path / "weather.py"

    # 1. The quickstart on the local runner: `python weather.py`.
    script.write_text(agent.source + "\n" + local.source)
    (expected,) = expected_per_line(local).values()
    printed = _run_script(script, tmp_path)
    assert match_output(expected, printed), printed

    # 2. The same agent as a Flink job on the mini-cluster: `python weather.py` again.
    script.write_text(agent.source + "\n" + flink.source)
    printed = _run_script(script, tmp_path)
    assert flink.output is not None and match_lines(flink.output, printed), printed

    if not flink_prepared.scripts_supported:
        pytest.skip(f"Flink's scripts do not start on Java {flink_prepared.major_version}")
    cluster = StandaloneCluster(tmp_path / "cluster", slots=2)
    monkeypatch.chdir(tmp_path)  # `submit` from the folder that holds the scripts
    with cluster:
        cluster.start()

        # 3. The same job script submitted to a standalone cluster: its print sink writes
        # to the TaskManager's .out file.
        job_id = cluster.submit(script)
        assert cluster.wait_for_job(job_id, ["FINISHED"], 180) == "FINISHED"
        assert match_lines(flink.output, _taskmanager_out(cluster)), _taskmanager_out(cluster)

        # 4. The deployment tutorial: the agent in a module, a file source, a checkpointed
        # file sink, a savepoint and a restore.
        (tmp_path / "weather_agent.py").write_text(agent.source)
        job_script = tmp_path / "weather_job.py"
        job_script.write_text(_tutorial_job().source)
        cities, answers = tmp_path / "cities", tmp_path / "answers"
        cities.mkdir()
        (cities / "first.txt").write_text("Lyon\nOslo\n")
        arguments = ["--input", str(cities), "--output", str(answers)]
        arguments += ["--checkpoint-interval-s", "1"]
        job_id = cluster.submit(job_script, arguments)
        assert cluster.wait_for_job(job_id, ["RUNNING"], 120) == "RUNNING"
        cluster.wait_for(lambda: len(_committed_lines(answers)) >= 2, 120, "the first answers")
        savepoint = _stop_with_savepoint(cluster, job_id, tmp_path / "savepoints")
        assert cluster.wait_for_job(job_id, ["FINISHED"], 60) == "FINISHED"

        (cities / "second.txt").write_text("Paris\n")
        restored = cluster.submit(job_script, arguments, savepoint=savepoint)
        assert cluster.wait_for_job(restored, ["RUNNING"], 120) == "RUNNING"
        cluster.wait_for(lambda: len(_committed_lines(answers)) >= 3, 120, "Paris's answer")
        time.sleep(3)  # a few more checkpoints: nothing read twice shows up late
        lines = _committed_lines(answers)

    answered = sorted(json.loads(line)["city"] for line in lines)
    assert answered == ["Lyon", "Oslo", "Paris"]  # each city once, across the restore
    assert {"city": "Lyon", "summary": "sunny, 24 C"} in [json.loads(line) for line in lines]


@pytest.mark.parametrize("block", _other_flink_examples(), ids=lambda block: block.name)
def test_flink_example(block: CodeBlock, flink_prepared: Any, tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    result = run_as_script(block, tmp_path, env, timeout=300)
    assert result.returncode == 0, f"{block.name} failed:\n{result.stderr[-6000:]}"
    if block.output is not None:
        assert match_lines(block.output, result.stdout), (
            f"{block.name} printed\n{result.stdout}\nthe page shows\n{block.output}"
        )
