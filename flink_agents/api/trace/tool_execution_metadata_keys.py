"""Keys of the metadata reported with a tool execution."""

__all__ = ["ToolExecutionMetadataKeys"]


class ToolExecutionMetadataKeys:
    """Metadata keys of a ``tool`` execution."""

    TOOL_REQUEST_EVENT_ID = "toolRequestEventId"
    """The id of the tool request event the call belongs to."""
    TOOL_CALL_ID = "toolCallId"
    """The call's id within its request."""
    EXTERNAL_ID = "externalId"
    """The provider's own id of the call, when it differs."""
    TOOL_TYPE = "toolType"
    """The tool's type (``function``, ``mcp``, ...)."""
    MCP_SERVER = "mcpServer"
    """The name of the MCP server serving the tool."""
    SKILL_NAME = "skillName"
    SKILL_RESOURCE_PATH = "skillResourcePath"
