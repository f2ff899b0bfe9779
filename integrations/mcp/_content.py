"""MCP content to typed blocks: tool results and prompt messages.

* text -> `TextBlock`;
* image -> `ImageBlock`, audio -> `AudioBlock` (base64 as sent; a media type of another
  kind makes a `DocumentBlock`);
* an embedded resource by its MIME type: text contents -> `TextBlock`; a blob -> an image,
  audio or video block for those types, else a `DocumentBlock` (named after its URI);
* a resource link, or content of a kind this module does not know -> a `TextBlock` of
  its JSON (nothing is dropped);
* a tool's structured content -> a `TextBlock` of its JSON, first, when the server sent no
  text (a server that sends both sends its JSON as text too: it is not repeated).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel

from flink_agents.api.content_blocks import (
    TextBlock,
    ToolResultContent,
    base64_decoded_size,
    media_block_class,
)
from flink_agents.api.message import ChatMessage, MessageRole

__all__ = ["content_block", "prompt_messages", "tool_result_content"]


def tool_result_content(result: CallToolResult) -> list[ToolResultContent]:
    """The blocks of a tool's result, in order (see the module doc)."""
    blocks = [content_block(item) for item in result.content]
    structured = result.structured_content
    if structured is not None and not any(isinstance(b, TextBlock) for b in blocks):
        blocks.insert(0, TextBlock(text=_json(structured)))
    return blocks


def content_block(item: Any) -> ToolResultContent:
    """One MCP content item as a block."""
    if isinstance(item, TextContent):
        return TextBlock(text=item.text)
    if isinstance(item, (ImageContent, AudioContent)):
        return _media(item.mime_type, item.data)
    if isinstance(item, EmbeddedResource):
        resource = item.resource
        if isinstance(resource, TextResourceContents):
            return TextBlock(text=resource.text)
        if isinstance(resource, BlobResourceContents):
            name = str(resource.uri).rstrip("/").rsplit("/", 1)[-1] or None
            return _media(resource.mime_type or "application/octet-stream", resource.blob, name)
    if isinstance(item, BaseModel):
        return TextBlock(text=item.model_dump_json(by_alias=True, exclude_none=True))
    return TextBlock(text=_json(item))


def _media(mime_type: str, data: str, name: str | None = None) -> ToolResultContent:
    kind = media_block_class(mime_type)
    block = kind(mime_type=mime_type, data=data, name=name, size_bytes=base64_decoded_size(data))
    return block  # type: ignore[return-value]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def prompt_messages(result: GetPromptResult) -> list[ChatMessage]:
    """The messages of a rendered prompt, with their roles (user or assistant)."""
    return [
        ChatMessage(role=MessageRole(message.role), blocks=[content_block(message.content)])
        for message in result.messages
    ]


def joined_text(messages: Sequence[ChatMessage]) -> str:
    """The text of ``messages``, one message a line."""
    return "\n".join(m.text for m in messages)
