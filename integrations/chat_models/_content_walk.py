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

from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn, TypeVar

from flink_agents.api.content_blocks import (
    ContentBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from flink_agents.api.errors import UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.integrations.chat_models._media import (
    ASSISTANT_MEDIA_REASON,
    MEDIA_TYPES,
    Media,
)

__all__ = [
    "assistant_items",
    "assistant_text_and_calls",
    "refuse_in_assistant_message",
    "split_system",
    "tool_calls_by_id",
    "tool_result_runs",
    "user_items",
]

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

    def other(block: ContentBlock) -> Item:
        if isinstance(block, MEDIA_TYPES):
            return media(block)
        raise UnsupportedContentBlockError(  # pragma: no cover - the role matrix forbids it
            block.type, "a user message holds text and media only", provider=provider
        )

    return _items(blocks, text, other)


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

    def other(block: ContentBlock) -> Item | None:
        if isinstance(block, ToolCallBlock):
            return tool_call(block)
        if isinstance(block, ReasoningBlock):
            return reasoning(block)
        refuse_in_assistant_message(block, provider)

    return _items(blocks, text, other)


def refuse_in_assistant_message(block: ContentBlock, provider: str) -> NoReturn:
    """Raises `UnsupportedContentBlockError` for a block an assistant message cannot send:
    media (`ASSISTANT_MEDIA_REASON`) or a block the role cannot hold."""
    if isinstance(block, MEDIA_TYPES):
        raise UnsupportedContentBlockError(block.type, ASSISTANT_MEDIA_REASON, provider=provider)
    raise UnsupportedContentBlockError(  # pragma: no cover - the role matrix forbids it
        block.type, "an assistant message cannot hold it", provider=provider
    )


def _items(
    blocks: Sequence[ContentBlock],
    text: Callable[[str], Item],
    other: Callable[[ContentBlock], Item | None],
) -> list[Item]:
    """``text`` of each non-empty text block and ``other`` of each other block (None: not
    sent), in order."""
    items: list[Item] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            item = text(block.text) if block.text else None
        else:
            item = other(block)
        if item is not None:
            items.append(item)
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


def split_system(messages: Sequence[ChatMessage]) -> tuple[list[str], list[ChatMessage]]:
    """The non-empty texts of the system messages, for the APIs that take the system
    prompt apart from the conversation, and the other messages, in order."""
    system = [
        block.text
        for message in messages
        if message.role is MessageRole.SYSTEM
        for block in message.blocks
        if isinstance(block, TextBlock) and block.text
    ]
    return system, [message for message in messages if message.role is not MessageRole.SYSTEM]


def tool_result_runs(
    messages: Sequence[ChatMessage],
) -> Iterator[ChatMessage | list[ToolResultBlock]]:
    """The messages in order, each run of consecutive tool messages as the list of their
    results (most APIs send a run together, or follow it with the media it held)."""
    run: list[ToolResultBlock] = []
    for message in messages:
        result = message.tool_result_block
        if result is not None:
            run.append(result)
            continue
        if run:
            yield run
            run = []
        yield message
    if run:
        yield run
