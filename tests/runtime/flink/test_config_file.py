"""Agent options from Flink's configuration directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_agents.api.core_options import AgentConfiguration, AgentExecutionOptions
from flink_agents.runtime.flink.config_file import (
    agent_options_from_conf_dir,
    read_agent_options,
)


def test_config_yaml_agent_section_nested_and_dotted(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        "taskmanager:\n"
        "  numberOfTaskSlots: 2\n"
        "agent:\n"
        "  max-in-flight-runs: 7\n"
        "  durable-execution:\n"
        "    store: sqlite:///tmp/calls.db\n"
        "  baseLogDir: /tmp/agent-logs\n"
        "agent.error-handling-strategy: retry\n"
    )
    options = read_agent_options(tmp_path)
    assert options == {
        "max-in-flight-runs": 7,
        "durable-execution.store": "sqlite:///tmp/calls.db",
        "baseLogDir": "/tmp/agent-logs",
        "error-handling-strategy": "retry",
    }
    config = AgentConfiguration(options)
    assert config.get(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS) == 7


def test_legacy_flink_conf_yaml(tmp_path: Path) -> None:
    (tmp_path / "flink-conf.yaml").write_text(
        "# comment\njobmanager.rpc.address: localhost\nagent.max-in-flight-runs: 9\n"
        "agent.baseLogDir: /var/log/agents\n\n"
    )
    assert read_agent_options(tmp_path) == {
        "max-in-flight-runs": "9",
        "baseLogDir": "/var/log/agents",
    }
    assert (
        AgentConfiguration(read_agent_options(tmp_path)).get(
            AgentExecutionOptions.MAX_IN_FLIGHT_RUNS
        )
        == 9
    )


def test_config_yaml_wins_over_the_legacy_file(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("agent:\n  max-in-flight-runs: 3\n")
    (tmp_path / "flink-conf.yaml").write_text("agent.max-in-flight-runs: 9\n")
    assert read_agent_options(tmp_path) == {"max-in-flight-runs": 3}


def test_no_file_or_no_directory(tmp_path: Path) -> None:
    assert read_agent_options(tmp_path) == {}
    assert agent_options_from_conf_dir({}) == {}
    (tmp_path / "config.yaml").write_text("agent:\n  max-in-flight-runs: 4\n")
    assert agent_options_from_conf_dir({"FLINK_CONF_DIR": str(tmp_path)}) == {
        "max-in-flight-runs": 4
    }


def test_a_file_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("- just\n- a list\n")
    with pytest.raises(ValueError, match="not a YAML mapping"):
        read_agent_options(tmp_path)
