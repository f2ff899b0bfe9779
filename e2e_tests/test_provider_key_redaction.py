"""A provider key in a TaskManager's environment is masked although no provider connection
is built: the operator's ``open`` registers it in the worker (the job script runs as a
subprocess with the key in its environment, which the mini-cluster and its Python worker
inherit; this process never registers it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_tests.conftest import REPO_ROOT
from e2e_tests.test_script_classes import clean_environment

pytestmark = pytest.mark.flink

JOB = REPO_ROOT / "e2e_tests" / "provider_key_job.py"
SECRET = "Zq7XbW4pLm9TnR2vYc8KdF3h"
"""Shaped like no known key: only its registration masks it."""


def test_a_key_in_a_tool_error_reaches_neither_the_event_log_nor_the_failure_record(
    tmp_path: Path,
) -> None:
    environ = clean_environment()
    environ["ANTHROPIC_API_KEY"] = SECRET
    log_dir = tmp_path / "events"
    done = subprocess.run(
        [sys.executable, str(JOB), str(log_dir)],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    [record] = [json.loads(line[6:]) for line in done.stdout.splitlines() if line[:6] == "ERROR "]
    logged = "".join(path.read_text() for path in log_dir.rglob("*") if path.is_file())
    masked = f"***{SECRET[-4:]}"
    assert masked in record["message"] and masked in logged  # the key's text got there
    assert SECRET not in json.dumps(record) and SECRET not in logged
