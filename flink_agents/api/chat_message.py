"""The typed, multimodal message model (upstream module path).

Everything here is also importable from `flink_agents.api`.
"""

from flink_agents.api.chat_result import CANONICAL_FINISH_REASONS, ChatResult, FinishReason, Usage
from flink_agents.api.content_blocks import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    MediaBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultContent,
    VideoBlock,
)
from flink_agents.api.errors import UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage, MessageRole, find_first_system_message
from flink_agents.api.tool_output import normalize_tool_output
from flink_agents.api.tool_response import ToolResponse

__all__ = [
    "CANONICAL_FINISH_REASONS",
    "AudioBlock",
    "ChatMessage",
    "ChatResult",
    "ContentBlock",
    "DocumentBlock",
    "FinishReason",
    "ImageBlock",
    "MediaBlock",
    "MessageRole",
    "ReasoningBlock",
    "TextBlock",
    "ToolCallBlock",
    "ToolResponse",
    "ToolResultBlock",
    "ToolResultContent",
    "UnsupportedContentBlockError",
    "Usage",
    "VideoBlock",
    "find_first_system_message",
    "normalize_tool_output",
]
