"""Tools an agent's chat models can call, and parameters the runtime injects into them."""

from flink_agents.api.tools.tool_execution_metadata_provider import ToolExecutionMetadataProvider
from flink_agents.api.tools.tool_parameter_injection import InjectedArg, ToolParameterSource

__all__ = ["InjectedArg", "ToolExecutionMetadataProvider", "ToolParameterSource"]
