"""MCP servers as sources of an agent's tools and prompts (`MCPServer`), on the official
``mcp`` SDK: ``pip install 'pyflink-agents[mcp]'``."""

from __future__ import annotations

from flink_agents.integrations._extras import requires_extra

with requires_extra("mcp", "flink_agents.integrations.mcp needs the MCP SDK"):
    import mcp as _sdk  # noqa: F401

from flink_agents.integrations.errors import (
    MCPConnectionError,
    MCPRequestError,
    MCPServerError,
    MCPTimeoutError,
    MCPToolError,
)
from flink_agents.integrations.mcp.mcp import MCPPrompt, MCPPromptArgument, MCPServer, MCPTool

__all__ = [
    "MCPConnectionError",
    "MCPPrompt",
    "MCPPromptArgument",
    "MCPRequestError",
    "MCPServer",
    "MCPServerError",
    "MCPTimeoutError",
    "MCPTool",
    "MCPToolError",
]
