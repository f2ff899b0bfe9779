"""The Flink agents environment reads agent options from `$FLINK_CONF_DIR`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.flink


def test_options_from_the_conf_dir_and_code_overrides(
    stream_env: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flink_agents.api.core_options import AgentExecutionOptions
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    (tmp_path / "config.yaml").write_text(
        "agent:\n  max-in-flight-runs: 7\n  error-handling-strategy: ignore\n"
    )
    monkeypatch.setenv("FLINK_CONF_DIR", str(tmp_path))
    agents_env = FlinkAgentsExecutionEnvironment(stream_env(parallelism=1))
    config = agents_env.get_config()
    assert config.get(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS) == 7
    assert config.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY).value == "ignore"
    config.set(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS, 3)  # code wins
    assert agents_env.operator_options_for_job().max_in_flight == 3


def test_a_bad_value_in_the_conf_dir_names_the_option(
    stream_env: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    (tmp_path / "config.yaml").write_text("agent:\n  max-in-flight-runs: many\n")
    monkeypatch.setenv("FLINK_CONF_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="max-in-flight-runs"):
        FlinkAgentsExecutionEnvironment(stream_env(parallelism=1))
