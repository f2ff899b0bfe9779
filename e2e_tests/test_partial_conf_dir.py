"""A `config.yaml` with only an `agent:` section in FLINK_CONF_DIR: the job runs with Flink's
defaults under it (it used to fail with Java's InaccessibleObjectException), and a JVM that
was started from it too early is refused with what to do. Each case is a fresh interpreter:
the JVM reads the folder once, when it starts."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from e2e_tests.conftest import REPO_ROOT
from e2e_tests.test_script_classes import clean_environment, run_job_script

pytestmark = pytest.mark.flink


def _agent_only_conf_dir(tmp_path: Path) -> Path:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "config.yaml").write_text("agent:\n  max-in-flight-runs: 7\n")
    return conf


def test_a_job_runs_with_an_agent_only_config(tmp_path: Path) -> None:
    conf = _agent_only_conf_dir(tmp_path)
    outputs = run_job_script("thread", tmp_path, FLINK_CONF_DIR=str(conf))
    assert [o["value"]["weather"]["city"] for o in outputs] == ["Lyon", "Oslo"]


def test_the_merged_config_keeps_the_agent_options(tmp_path: Path) -> None:
    conf = _agent_only_conf_dir(tmp_path)
    done = _run(
        """
        from flink_agents.api.core_options import AgentExecutionOptions
        from flink_agents.runtime.flink import (
            FlinkAgentsExecutionEnvironment, create_stream_execution_environment)
        agents_env = FlinkAgentsExecutionEnvironment(create_stream_execution_environment())
        print("OPTION", agents_env.get_config().get(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS))
        """,
        conf,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "OPTION 7" in done.stdout


def test_a_jvm_started_from_it_too_early_is_refused(tmp_path: Path) -> None:
    conf = _agent_only_conf_dir(tmp_path)
    done = _run(
        """
        from pyflink.common import Configuration
        Configuration()  # starts the JVM from FLINK_CONF_DIR before the project can help
        from flink_agents.runtime.flink import (
            FlinkAgentsExecutionEnvironment, IncompleteFlinkConfigError,
            create_stream_execution_environment)
        try:
            FlinkAgentsExecutionEnvironment(
                create_stream_execution_environment(), execution_mode="process")
        except IncompleteFlinkConfigError as exc:
            print("ERROR", exc)
        """,
        conf,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ERROR PyFlink's JVM runs without Flink's JVM options" in done.stdout
    assert f"FLINK_CONF_DIR={conf}" in done.stdout
    assert "pyflink/conf/config.yaml into that folder" in done.stdout


def _run(script: str, conf: Path) -> subprocess.CompletedProcess[str]:
    env = clean_environment()
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["FLINK_CONF_DIR"] = str(conf)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=conf.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
