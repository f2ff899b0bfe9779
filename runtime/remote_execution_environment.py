"""Upstream's module path of the Flink environment, `RemoteExecutionEnvironment`: a
re-export of `flink_agents.runtime.flink.remote_environment` (the class lives with the rest
of the Flink runtime)."""

from __future__ import annotations

from flink_agents.runtime.flink.environment import StreamExecutionEnvironment
from flink_agents.runtime.flink.remote_environment import RemoteExecutionEnvironment

__all__ = ["RemoteExecutionEnvironment", "StreamExecutionEnvironment"]
