"""Upstream's ``RemoteExecutionEnvironment(env, t_env)``: the Flink environment under
upstream's name, on which agents and YAML files are registered before any JVM is asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.resource import ResourceType
from flink_agents.runtime.flink.environment import FlinkAgentsExecutionEnvironment
from flink_agents.runtime.remote_execution_environment import RemoteExecutionEnvironment


class _NoJvm:
    """A stream environment whose JVM side may not be touched."""

    @property
    def _j_stream_execution_environment(self) -> Any:
        raise AssertionError("the JVM was asked while registering")


_YAML = """
agents:
  - name: incrementer
    actions:
      - name: increment
        function: tests.api.yaml.targets:increment
        trigger_conditions: [input]
prompts:
  - name: greeting
    text: "Hello {name}"
"""


def test_yaml_agents_and_resources_register_without_a_jvm(tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text(_YAML)
    env = RemoteExecutionEnvironment(_NoJvm())  # type: ignore[arg-type]
    env.load_yaml(path)
    assert isinstance(env, FlinkAgentsExecutionEnvironment)
    assert env.resolve_agent("incrementer").actions["increment"] is not None
    assert "greeting" in env.resources[ResourceType.PROMPT]


def test_the_jvm_is_set_up_when_the_execution_mode_is_first_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[Any] = []

    def set_up(self: FlinkAgentsExecutionEnvironment, mode: Any) -> str:
        asked.append(mode)
        return "process"

    monkeypatch.setattr(FlinkAgentsExecutionEnvironment, "_set_up_jvm", set_up)
    env = RemoteExecutionEnvironment(_NoJvm())  # type: ignore[arg-type]
    assert asked == []
    assert env.execution_mode == "process"
    assert env.execution_mode == "process"
    assert asked == [None]  # once, with the mode of the environment's configuration
    with pytest.raises(AttributeError, match="no attribute 'other'"):
        env.other  # noqa: B018
