"""Function tools, tool choices and tool calls in the Chat Completions shape.

OpenAI's Chat Completions and DashScope's native API (and, for tool definitions,
Ollama's ``/api/chat``) describe a tool as ``{"type": "function", "function": {...}}``,
name a forced tool the same way, and send a call back with its arguments as a JSON
string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flink_agents.api.content_blocks import ToolCallBlock
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models._tool_arguments import arguments_json

__all__ = ["function_call", "function_tool", "function_tool_choice"]


def function_tool(
    tool: ToolMetadata, parameters: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A function tool definition; ``parameters`` (the JSON schema sent) default to the
    tool's ``args_schema``."""
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = tool.args_schema if parameters is None else parameters
    return {"type": "function", "function": function}


def function_tool_choice(choice: Any, modes: tuple[str, ...]) -> Any:
    """``tool_choice`` as sent: a bare tool name (a string not among the API's ``modes``)
    becomes ``{"type": "function", "function": {"name": ...}}``; anything else as it is."""
    if isinstance(choice, str) and choice not in modes:
        return {"type": "function", "function": {"name": choice}}
    return choice


def function_call(block: ToolCallBlock) -> dict[str, Any]:
    """A tool call of an assistant message, its arguments as a JSON string."""
    return {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": arguments_json(block.input)},
    }
