"""Thread mode never silently becomes process mode.

A PyFlink object created before the project prepares its environment starts the JVM without
it; thread mode cannot work there. Building an agent job then fails with an error that says
what to do (it used to fall back to process mode with one warning line). Each case runs in a
fresh interpreter: the JVM is started once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from e2e_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.flink


def _run(script: str) -> subprocess.CompletedProcess[str]:
    """`script` in a fresh interpreter, with the environment a user's shell would have (no
    venv `bin` on PATH: other tests of this session prepared ours)."""
    env = dict(os.environ)
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != bin_dir)
    env["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_configuration_made_too_early_is_an_error_not_process_mode() -> None:
    done = _run(
        """
        from pyflink.common import Configuration
        conf = Configuration()  # starts the JVM before the project prepares it
        conf.set_string("execution.checkpointing.interval", "300 ms")
        from flink_agents.runtime.flink import (
            FlinkAgentsExecutionEnvironment, ThreadModeUnavailableError,
            create_stream_execution_environment)
        env = create_stream_execution_environment(conf)
        try:
            FlinkAgentsExecutionEnvironment(env)
        except ThreadModeUnavailableError as exc:
            print("ERROR", exc)
        else:
            print("NO ERROR")
        """
    )
    assert done.returncode == 0, done.stderr
    assert "ERROR thread mode (the default) cannot run in this process" in done.stdout
    assert "create_stream_execution_environment({...options...})" in done.stdout


def test_options_as_a_dict_keep_thread_mode() -> None:
    done = _run(
        """
        from flink_agents.runtime.flink import (
            FlinkAgentsExecutionEnvironment, create_stream_execution_environment)
        env = create_stream_execution_environment(
            {"execution.checkpointing.interval": "300 ms"})
        agents_env = FlinkAgentsExecutionEnvironment(env)
        print("MODE", agents_env.execution_mode)
        conf = env.get_checkpoint_config()
        print("CHECKPOINTS", conf.get_checkpoint_interval())
        """
    )
    assert done.returncode == 0, done.stderr
    assert "MODE thread" in done.stdout
    assert "CHECKPOINTS 300" in done.stdout


def test_process_mode_in_a_checkpointed_job_is_refused(stream_env: Any) -> None:
    from e2e_tests.agents import UpperAgent
    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        ProcessModeCheckpointingError,
    )

    env = stream_env(parallelism=1, **{"execution.checkpointing.interval": "1 s"})
    agents_env = FlinkAgentsExecutionEnvironment(env, execution_mode="process")
    records = env.from_collection([{"id": 1, "text": "a"}])
    stream = agents_env.from_datastream(records, key_selector=lambda r: r["id"])
    with pytest.raises(ProcessModeCheckpointingError, match="thread mode"):
        stream.apply(UpperAgent())
    # Without checkpointing process mode is allowed.
    plain_env = stream_env(parallelism=1)
    plain = FlinkAgentsExecutionEnvironment(plain_env, execution_mode="process")
    plain_records = plain_env.from_collection([{"id": 1, "text": "a"}])
    plain.from_datastream(plain_records, key_selector=lambda r: r["id"]).apply(UpperAgent())
