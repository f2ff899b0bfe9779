"""Choosing the execution environment."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from flink_agents.api import AgentsExecutionEnvironment, Prompt, ResourceType
from flink_agents.runtime.local_runner import LocalExecutionEnvironment


def test_no_flink_environment_gives_the_local_one() -> None:
    env = AgentsExecutionEnvironment.get_execution_environment()
    assert isinstance(env, LocalExecutionEnvironment)
    with pytest.raises(ValueError, match="table environment"):
        AgentsExecutionEnvironment.get_execution_environment(None, object())


def test_flink_environment_is_loaded_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[Any, ...]] = []

    class FakeFlinkEnvironment(AgentsExecutionEnvironment):
        def __init__(self, env: Any, t_env: Any) -> None:
            made.append((env, t_env))

        def execute(self, job_name: str | None = None) -> None: ...

    module = types.ModuleType("flink_agents.runtime.flink.environment")
    module.FlinkAgentsExecutionEnvironment = FakeFlinkEnvironment  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "flink_agents.runtime.flink.environment", module)
    stream_env, table_env = object(), object()
    env = AgentsExecutionEnvironment.get_execution_environment(stream_env, table_env)
    assert isinstance(env, FakeFlinkEnvironment)
    assert made == [(stream_env, table_env)]
    # A subclass that skipped the base __init__ still has config and resources.
    assert env.get_config().to_dict() == {}
    env.add_resource("p", ResourceType.PROMPT, Prompt.from_text("x"))
    assert "p" in env.resources[ResourceType.PROMPT]
    with pytest.raises(NotImplementedError):
        env.from_list([])


def test_shared_resources_are_unique_by_name() -> None:
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_resource("p", ResourceType.PROMPT, Prompt.from_text("x"))
    with pytest.raises(ValueError, match="already defined"):
        env.add_resource("p", ResourceType.PROMPT, Prompt.from_text("y"))
