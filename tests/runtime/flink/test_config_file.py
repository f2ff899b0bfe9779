"""Flink's configuration directory: agent options, and Flink's own settings under a
folder that has only an `agent:` section."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_agents.api.configuration import agent_section
from flink_agents.api.core_options import AgentConfiguration, AgentExecutionOptions
from flink_agents.runtime.flink.config_file import (
    agent_options_from_conf_dir,
    complete_flink_conf_dir,
    lacks_flink_defaults,
    merged_conf_dir,
    missing_module_opens,
    packaged_conf_dir,
    read_agent_options,
    read_flink_settings,
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
    # The same reading as env.get_config(path) and AgentConfiguration.load_from_file give.
    assert options == agent_section(tmp_path / "config.yaml")


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


# ------------------------------------------------------------------ Flink's own settings

_PACKAGED = (
    "env:\n"
    "  java:\n"
    "    opts:\n"
    "      all: --add-opens=java.base/java.lang=ALL-UNNAMED\n"
    "taskmanager:\n"
    "  numberOfTaskSlots: 1\n"
    "parallelism.default: 1\n"
)


def _packaged(tmp_path: Path) -> Path:
    """A stand-in for pyflink/conf: a config.yaml and a log4j file."""
    packaged = tmp_path / "packaged"
    packaged.mkdir()
    (packaged / "config.yaml").write_text(_PACKAGED)
    (packaged / "log4j-cli.properties").write_text("packaged log4j\n")
    (packaged / "masters").write_text("localhost:8081\n")
    return packaged


def test_a_config_with_only_an_agent_section_lacks_flink_defaults(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("agent:\n  max-in-flight-runs: 7\n")
    assert lacks_flink_defaults(tmp_path)
    assert not lacks_flink_defaults(_packaged(tmp_path))
    assert not lacks_flink_defaults(packaged_conf_dir())  # the real pyflink/conf


def test_the_merged_folder_has_flinks_settings_under_the_folders_own(tmp_path: Path) -> None:
    packaged = _packaged(tmp_path)
    user = tmp_path / "user"
    user.mkdir()
    (user / "config.yaml").write_text(
        "agent:\n  max-in-flight-runs: 7\ntaskmanager.numberOfTaskSlots: 4\n"
    )
    (user / "log4j-cli.properties").write_text("my log4j\n")
    merged = merged_conf_dir(user, defaults=packaged, parent=tmp_path / "tmp")
    assert merged.parent == tmp_path / "tmp"
    assert sorted(p.name for p in merged.iterdir()) == [
        "config.yaml",
        "log4j-cli.properties",
        "masters",
    ]
    assert (merged / "log4j-cli.properties").read_text() == "my log4j\n"
    assert (merged / "masters").read_text() == "localhost:8081\n"
    body = [line for line in (merged / "config.yaml").read_text().splitlines() if line[:1] != "#"]
    assert body == [
        "env.java.opts.all: --add-opens=java.base/java.lang=ALL-UNNAMED",
        "taskmanager.numberOfTaskSlots: 4",
        "parallelism.default: 1",
        "agent.max-in-flight-runs: 7",
    ]
    assert read_agent_options(merged) == {"max-in-flight-runs": 7}
    # The same content gives the same folder (nothing piles up in the temporary folder).
    assert merged_conf_dir(user, defaults=packaged, parent=tmp_path / "tmp") == merged


def test_the_conf_dir_is_completed_only_when_it_lacks_flink_defaults(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "config.yaml").write_text("agent:\n  max-in-flight-runs: 7\n")
    environ = {"FLINK_CONF_DIR": str(user)}
    merged = complete_flink_conf_dir(environ)
    assert merged is not None and environ["FLINK_CONF_DIR"] == str(merged)
    assert not lacks_flink_defaults(merged)
    assert read_flink_settings(merged)["env.java.opts.all"].startswith("--add-exports")
    assert read_agent_options(merged) == {"max-in-flight-runs": 7}
    assert (merged / "log4j-cli.properties").is_file()  # the gateway's log settings

    complete = {"FLINK_CONF_DIR": str(merged)}
    assert complete_flink_conf_dir(complete) is None
    assert complete == {"FLINK_CONF_DIR": str(merged)}
    assert complete_flink_conf_dir({}) is None
    assert complete_flink_conf_dir({"FLINK_CONF_DIR": str(tmp_path / "missing")}) is None


def test_a_legacy_file_is_merged_too(tmp_path: Path) -> None:
    (tmp_path / "flink-conf.yaml").write_text("agent.max-in-flight-runs: 9\n")
    assert lacks_flink_defaults(tmp_path)
    merged = merged_conf_dir(tmp_path, defaults=_packaged(tmp_path), parent=tmp_path / "tmp")
    assert not (merged / "flink-conf.yaml").exists()
    assert read_agent_options(merged) == {"max-in-flight-runs": "9"}


@pytest.mark.parametrize(
    ("arguments", "java", "missing"),
    [
        (["-Xmx1g"], 17, True),
        (["--add-opens=java.base/java.lang=ALL-UNNAMED"], 21, False),
        (["--add-opens", "java.base/java.lang=ALL-UNNAMED"], 17, False),
        (["-Xmx1g"], 11, False),  # Java 11 needs no opens
    ],
)
def test_a_jvm_without_module_opens(arguments: list[str], java: int, missing: bool) -> None:
    assert missing_module_opens(arguments, java) is missing
