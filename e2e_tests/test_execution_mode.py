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
from pathlib import Path
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


_UPSTREAM_ORDER_JOB = """
from pyflink.datastream import StreamExecutionEnvironment

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.runner_context import RunnerContext


async def upper(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=event.attributes["input"]["text"].upper()))


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.enable_checkpointing(500)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env)
    print("MODE", agents_env.execution_mode)
    records = env.from_collection([{"id": 1, "text": "a"}, {"id": 2, "text": "b"}])
    agent = Agent().add_action("upper", [InputEvent], upper)
    out = agents_env.from_datastream(records, key_selector=lambda r: r["id"]).apply(agent)
    with out.to_datastream().execute_and_collect("not-activated") as results:
        print("RESULTS", sorted(results))


if __name__ == "__main__":
    main()
"""


def test_a_job_started_with_the_environments_python_not_activated_runs_in_thread_mode(
    tmp_path: Path,
) -> None:
    """`.venv/bin/python job.py` as an IDE, cron or a script starts it: no venv `bin` on
    PATH, no VIRTUAL_ENV, no PYTHONPATH; upstream's import order and PyFlink's own entry
    point; a checkpointed job (process mode would be refused)."""
    script = tmp_path / "job.py"
    script.write_text(_UPSTREAM_ORDER_JOB)
    bin_dir = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != bin_dir)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "MODE thread" in done.stdout
    assert "RESULTS ['A', 'B']" in done.stdout


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
