"""Upstream's plan-layer path of `FunctionTool` (``flink_agents.api.tools.function_tool``'s:
here the tool a model calls and its descriptor are one class)."""

from flink_agents.api.tools.function_tool import FunctionTool

__all__ = ["FunctionTool"]
