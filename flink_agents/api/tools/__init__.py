"""Tools an agent's chat models can call, and parameters the runtime injects into them."""

from flink_agents.api.tools.tool_parameter_injection import InjectedArg, ToolParameterSource

__all__ = ["InjectedArg", "ToolParameterSource"]
