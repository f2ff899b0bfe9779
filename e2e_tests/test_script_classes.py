"""A job script's own classes work on Flink exactly as on the local runner.

`script_classes_job.py` runs as `__main__` (`python script.py`, as a newcomer runs the
quickstart): its output model, tool argument model, custom event, enum and durable call
value are classes of the script. Inside the job they work on the mini-cluster in thread and
process mode as on the local runner (thread mode used to fail with `PicklingError: Can't
pickle <class '__main__.Weather'>`): the outputs are the same, the local runner's the very
`Report` of the script, Flink's its JSON form (`to_datastream()` as upstream's), which
`json.dumps` takes downstream.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.flink

JOB = REPO_ROOT / "e2e_tests" / "script_classes_job.py"


def clean_environment() -> dict[str, str]:
    """This process's environment without what a PyFlink job of this session left in it
    (a process-mode job in this process sets PYFLINK_GATEWAY_DISABLED) or a test set."""
    dropped = ("FLINK_CONF_DIR", "PYFLINK_GATEWAY_DISABLED", "PYFLINK_GATEWAY_PORT")
    return {k: v for k, v in os.environ.items() if k not in dropped}


def run_job_script(mode: str, tmp_path: Path, **env: str) -> list[dict]:
    """The job script's `OUTPUT` lines, run as `python script_classes_job.py <mode>`."""
    environ = clean_environment()
    environ.update(env)
    done = subprocess.run(
        [
            sys.executable,
            str(JOB),
            mode,
            "--durable-store",
            f"sqlite:///{tmp_path / f'calls-{mode}.db'}",
        ],
        cwd=tmp_path,  # not the repository: the job script finds nothing of its own there
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads(line[7:]) for line in done.stdout.splitlines() if line.startswith("OUTPUT ")]


def test_script_classes_work_on_flink_as_on_the_local_runner(tmp_path: Path) -> None:
    local = run_job_script("local", tmp_path)
    assert [o["value"]["weather"] for o in local] == [
        {"city": "Lyon", "summary": "CityQuery Lyon 1", "mood": "sunny"},
        {"city": "Oslo", "summary": "CityQuery Oslo 1", "mood": "grey"},
    ]
    for output in local:
        assert output["form"] == "model"
        assert output["is_report"] and output["weather_is_weather"]
        assert output["mood_is_mood"] and output["note_is_note"]
        assert output["value"]["checked_as"] == "Checked"  # the custom event's own class
        assert output["value"]["note"] == {
            "text": "Weather/" + output["value"]["weather"]["mood"].upper()
        }  # the durable call got the script's Weather and Mood
    for mode in ("thread", "process"):
        on_flink = run_job_script(mode, tmp_path)
        assert [o["form"] for o in on_flink] == ["json", "json"], mode
        assert [o["value"] for o in on_flink] == [o["value"] for o in local], mode
