"""Tool messages that carry text only: Chat Completions, DashScope, Ollama.

On these APIs a tool message is text. A tool result holding media is sent as a tool
message whose text lists the media (``[attached below: image 1 (image/png, a.png)]``),
and the media themselves, each converted as in a user message and labelled
(``image 1``), go in one user message right after the run of tool messages
(``tool_media="user_message"``); with ``tool_media="error"`` such a result raises
before anything is sent. The APIs have no error flag: an error result's text starts
with `TOOL_ERROR_PREFIX`. `messages_with_moved_media` is that walk of a conversation;
the adapter converts each message, each tool result and the user message of media, in
which each medium follows its label (`moved_label`: ``image 1 from tool call call_7``;
`media_parts` for the APIs that take a list of parts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

from flink_agents.api.content_blocks import ToolResultBlock
from flink_agents.api.errors import UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models._content_walk import tool_result_runs
from flink_agents.integrations.chat_models._media import MEDIA_TYPES, Media

__all__ = [
    "TOOL_ERROR_PREFIX",
    "TextToolMedia",
    "check_tool_media",
    "listed_medium",
    "media_parts",
    "messages_with_moved_media",
    "moved_label",
    "text_tool_message",
    "with_media_list",
]

Item = TypeVar("Item")
Wire = TypeVar("Wire")

TextToolMedia = Literal["user_message", "error"]
"""What to do with media in tool results (tool messages carry text only)."""

TOOL_ERROR_PREFIX = "Error: "
"""Put before the text of a tool result with ``is_error=True`` (the API has no error field)."""


def check_tool_media(value: object) -> TextToolMedia:
    """``value`` as a `TextToolMedia`; ``ValueError`` for anything else."""
    if value == "user_message":
        return "user_message"
    if value == "error":
        return "error"
    raise ValueError(f"tool_media must be 'user_message' or 'error', got {value!r}")


def text_tool_message(
    result: ToolResultBlock,
    tool_media: TextToolMedia,
    *,
    provider: str,
    reason: str,
    convert: Callable[[Media], Item],
) -> tuple[str, list[tuple[str, Item]]]:
    """The tool message's text, and each of the result's media as its label (``image 1``)
    and ``convert``'s item, for the user message after the run.

    ``convert`` is the user message's media conversion (same checks, same reasons);
    with ``tool_media="error"`` the first medium raises with ``reason``.
    """
    media = [block for block in result.content if isinstance(block, MEDIA_TYPES)]
    text = result.text
    moved: list[tuple[str, Item]] = []
    if media:
        if tool_media == "error":
            raise UnsupportedContentBlockError(media[0].type, reason, provider=provider)
        listed: list[str] = []
        for number, block in enumerate(media, start=1):
            item = convert(block)
            listed.append(listed_medium(block, number))
            moved.append((f"{block.type} {number}", item))
        text = with_media_list(text, listed)
    if result.is_error:
        text = f"{TOOL_ERROR_PREFIX}{text}" if text else TOOL_ERROR_PREFIX.rstrip(": ")
    return text, moved


def messages_with_moved_media(
    messages: Sequence[ChatMessage],
    *,
    message: Callable[[ChatMessage], Wire],
    tool_message: Callable[[ToolResultBlock], tuple[Wire, Sequence[Item]]],
    media_message: Callable[[list[Item]], Wire],
) -> list[Wire]:
    """The wire messages of a conversation: ``message`` of each system, user and assistant
    message, ``tool_message`` of each tool result, and after each run of tool messages
    whose results moved media out, ``media_message`` of those media's items (in order).

    ``tool_message`` gives the tool message and the items its media became (none when
    the result holds no media).
    """
    wire: list[Wire] = []
    for turn in tool_result_runs(messages):
        if isinstance(turn, ChatMessage):
            wire.append(message(turn))
            continue
        moved: list[Item] = []
        for result in turn:
            tool_wire, items = tool_message(result)
            wire.append(tool_wire)
            moved.extend(items)
        if moved:
            wire.append(media_message(moved))
    return wire


def moved_label(label: str, source: str) -> str:
    """The label of a moved medium in the user message: ``image 1 from tool call call_7``
    (``source`` names the call)."""
    return f"{label} from tool call {source}"


def media_parts(
    moved: Sequence[tuple[str, Item]], source: str, text_part: Callable[[str], Item]
) -> list[Item]:
    """The user-message parts of a result's moved media: each medium after a text part
    (``text_part``) holding its label and a colon."""
    parts: list[Item] = []
    for label, part in moved:
        parts.append(text_part(f"{moved_label(label, source)}:"))
        parts.append(part)
    return parts


def listed_medium(block: Media, number: int) -> str:
    """How a moved medium is listed in its tool message: ``image 1 (image/png, a.png)``."""
    details = block.mime_type if block.name is None else f"{block.mime_type}, {block.name}"
    return f"{block.type} {number} ({details})"


def with_media_list(text: str, listed: Sequence[str]) -> str:
    """``text`` and, on a line of its own, ``[attached below: ...]`` listing ``listed``."""
    line = f"[attached below: {', '.join(listed)}]"
    return f"{text}\n{line}" if text else line
