"""A user or assistant message's blocks, walked into the content items of one API.

The APIs that take a message as a list of items, one per block in order (Anthropic
Messages, Bedrock Converse, Gemini's user parts), walk a message the same way: an
empty text is left out, each other block is converted by the adapter, and a block the
role cannot hold raises `UnsupportedContentBlockError` before anything is sent. Only
what an item looks like differs: the adapter passes one conversion per kind of block.

The APIs whose assistant message is one text and a list of calls (Chat Completions,
DashScope, Ollama) read it with `assistant_text_and_calls`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from flink_agents.api.content_blocks import (
    ContentBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
)
from flink_agents.api.errors import UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.integrations.chat_models._media import (
    ASSISTANT_MEDIA_REASON,
    MEDIA_TYPES,
    Media,
)

__all__ = ["assistant_items", "assistant_text_and_calls", "tool_calls_by_id", "user_items"]

Item = TypeVar("Item")


def user_items(
    blocks: Sequence[ContentBlock],
    *,
    provider: str,
    text: Callable[[str], Item],
    media: Callable[[Media], Item],
) -> list[Item]:
    """The items of a user message: ``text`` of each non-empty text, ``media`` of each
    media block, in order."""
    items: list[Item] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            if block.text:
                items.append(text(block.text))
        elif isinstance(block, MEDIA_TYPES):
            items.append(media(block))
        else:  # pragma: no cover - the role matrix of ChatMessage forbids it
            raise UnsupportedContentBlockError(
                block.type, "a user message holds text and media only", provider=provider
            )
    return items


def assistant_items(
    blocks: Sequence[ContentBlock],
    *,
    provider: str,
    text: Callable[[str], Item],
    tool_call: Callable[[ToolCallBlock], Item],
    reasoning: Callable[[ReasoningBlock], Item | None],
) -> list[Item]:
    """The items of an assistant message: ``text`` of each non-empty text, ``tool_call``
    of each call, ``reasoning`` of each reasoning block (None: not sent), in order. Media
    raise (`ASSISTANT_MEDIA_REASON`)."""
    items: list[Item] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            if block.text:
                items.append(text(block.text))
        elif isinstance(block, ToolCallBlock):
            items.append(tool_call(block))
        elif isinstance(block, ReasoningBlock):
            item = reasoning(block)
            if item is not None:
                items.append(item)
        elif isinstance(block, MEDIA_TYPES):
            raise UnsupportedContentBlockError(
                block.type, ASSISTANT_MEDIA_REASON, provider=provider
            )
        else:  # pragma: no cover - the role matrix of ChatMessage forbids it
            raise UnsupportedContentBlockError(
                block.type, "an assistant message cannot hold it", provider=provider
            )
    return items


def assistant_text_and_calls(
    blocks: Sequence[ContentBlock], *, provider: str
) -> tuple[str, list[ToolCallBlock]]:
    """An assistant message's texts joined, and its tool calls, in order. Reasoning is
    not sent (these APIs take none back); media raise (`ASSISTANT_MEDIA_REASON`)."""
    texts: list[str] = []
    calls: list[ToolCallBlock] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            calls.append(block)
        elif isinstance(block, MEDIA_TYPES):
            raise UnsupportedContentBlockError(
                block.type, ASSISTANT_MEDIA_REASON, provider=provider
            )
    return "".join(texts), calls


def tool_calls_by_id(messages: Sequence[ChatMessage]) -> dict[str, ToolCallBlock]:
    """The tool calls of a conversation's assistant messages, by id (a tool result names
    only the id of the call it answers; some APIs want the tool's name too)."""
    return {
        block.id: block
        for message in messages
        if message.role is MessageRole.ASSISTANT
        for block in message.tool_calls
    }
