"""`RemoteExecutionEnvironment`: the Flink environment under upstream's name and constructor.

``AgentsExecutionEnvironment.get_execution_environment(env)`` gives the Flink environment
(`FlinkAgentsExecutionEnvironment`); upstream code that makes one by upstream's class name,
``RemoteExecutionEnvironment(env, t_env)``, gets the same environment, except that the
JVM's configuration is read (the execution mode, the Python workers) when an agent is first
applied, as upstream does, not when the environment is made: agents, resources and YAML
files can be registered on it without a JVM. Upstream's module path,
``flink_agents.runtime.remote_execution_environment``, re-exports it.
"""

from __future__ import annotations

from typing import Any

from flink_agents.runtime.flink.environment import (
    ExecutionMode,
    FlinkAgentsExecutionEnvironment,
    StreamExecutionEnvironment,
    StreamTableEnvironment,
)

__all__ = ["RemoteExecutionEnvironment"]


class RemoteExecutionEnvironment(FlinkAgentsExecutionEnvironment):
    """`FlinkAgentsExecutionEnvironment` under upstream's name and constructor (the
    execution mode from the environment's ``python.execution-mode``, default ``thread``)."""

    def __init__(
        self, env: StreamExecutionEnvironment, t_env: StreamTableEnvironment | None = None
    ) -> None:
        self._register(env, t_env, None)

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes not set: the execution mode, until first asked for.
        if name == "execution_mode":
            mode: ExecutionMode = self._set_up_jvm(None)
            self.execution_mode = mode
            return mode
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
