"""`ChatMessage`: a role plus ordered content blocks, with the role matrix enforced.

Upstream's text form works too: ``ChatMessage(role=MessageRole.USER, content="hi")`` is
``ChatMessage.user("hi")``, and ``message.content`` reads (and sets) the message's text.
``content`` is no field of its own: it is a view of the text blocks, so the JSON form is
only ``role``, ``blocks`` and ``metadata``, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from flink_agents.api._trusted import trusted_instance
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
    VideoBlock,
)

__all__ = ["ChatMessage", "MessageRole", "find_first_system_message"]


class MessageRole(str, Enum):
    """Who speaks a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


_MEDIA = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)

_ALLOWED: dict[MessageRole, tuple[type, ...]] = {
    MessageRole.SYSTEM: (TextBlock,),
    MessageRole.USER: (TextBlock, *_MEDIA),
    MessageRole.ASSISTANT: (TextBlock, *_MEDIA, ReasoningBlock, ToolCallBlock),
    MessageRole.TOOL: (ToolResultBlock,),
}


class ChatMessage(BaseModel):
    """One message of a conversation.

    The role decides which blocks it may hold: system takes text; user takes text
    and media; assistant takes text, media, reasoning and tool calls; a tool
    message holds exactly one `ToolResultBlock`.

    ``content=`` (a string, or a list of blocks) may be given instead of ``blocks``, and
    ``extra_args=`` instead of ``metadata`` (upstream's names); ``tool_calls=`` adds
    tool-call blocks, given as blocks or as upstream's dicts (`ToolCallBlock.from_upstream`).
    """

    model_config = ConfigDict(extra="forbid")

    role: MessageRole = MessageRole.USER
    """Who speaks (user unless given, as upstream)."""
    blocks: list[ContentBlock] = Field(default_factory=list)
    """Content, in order."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form annotations (not sent to providers)."""

    if TYPE_CHECKING:  # the constructor type checkers see, with upstream's names

        def __init__(
            self,
            *,
            role: MessageRole | str = MessageRole.USER,
            blocks: Sequence[ContentBlock] = (),
            metadata: Mapping[str, Any] = ...,
            content: str | Sequence[ContentBlock] = "",
            extra_args: Mapping[str, Any] = ...,
            tool_calls: Sequence[ToolCallBlock | Mapping[str, Any]] = ...,
        ) -> None: ...

    @model_validator(mode="before")
    @classmethod
    def _upstream_names(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or not (
            "content" in data or "extra_args" in data or "tool_calls" in data
        ):
            return data
        fields = dict(data)
        calls = fields.pop("tool_calls", None) or []
        if "content" in fields:
            content = fields.pop("content")
            if "blocks" in fields:
                raise ValueError("give a message's content or its blocks, not both")
            role = fields.get("role", MessageRole.USER)
            if content and str(getattr(role, "value", role)) == MessageRole.TOOL.value:
                raise ValueError(
                    "a tool message holds one tool_result block, not text content: use "
                    "ChatMessage.tool_result(ToolResultBlock(call_id=..., content=[...]))"
                )
            fields["blocks"] = _as_blocks(content) if content else []
        if "extra_args" in fields:
            if "metadata" in fields:
                raise ValueError("give a message's metadata or its extra_args, not both")
            fields["metadata"] = fields.pop("extra_args")
        if calls:  # upstream's dicts (or blocks), after the content
            given = [
                c if isinstance(c, ToolCallBlock) else ToolCallBlock.from_upstream(c) for c in calls
            ]
            fields["blocks"] = [*fields.get("blocks", []), *given]
        return fields

    @model_validator(mode="after")
    def _check_role_matrix(self) -> ChatMessage:
        allowed = _ALLOWED[self.role]
        for block in self.blocks:
            if not isinstance(block, allowed):
                raise ValueError(f"a {self.role.value} message cannot hold a {block.type} block")
        if self.role is MessageRole.TOOL and len(self.blocks) != 1:
            raise ValueError(
                f"a tool message holds exactly one tool_result block, got {len(self.blocks)} blocks"
            )
        seen: set[str] = set()
        for block in self.blocks:
            if isinstance(block, ToolCallBlock):
                if block.id in seen:
                    raise ValueError(
                        f"a {self.role.value} message has two tool_call blocks with id {block.id!r}"
                    )
                seen.add(block.id)
        return self

    # ----------------------------------------------------------------- factories

    @classmethod
    def system(cls, text: str) -> ChatMessage:
        """A system message holding one text block."""
        if cls is ChatMessage and type(text) is str:
            return _text_message(MessageRole.SYSTEM, text)
        return cls(role=MessageRole.SYSTEM, blocks=[TextBlock(text=text)])

    @classmethod
    def user(cls, content: str | Sequence[ContentBlock]) -> ChatMessage:
        """A user message from text or from blocks."""
        if cls is ChatMessage and type(content) is str:
            return _text_message(MessageRole.USER, content)
        return cls(role=MessageRole.USER, blocks=_as_blocks(content))

    @classmethod
    def assistant(
        cls,
        content: str | Sequence[ContentBlock] = (),
        tool_calls: Sequence[ToolCallBlock] = (),
    ) -> ChatMessage:
        """An assistant message from text or blocks, then any tool calls."""
        if cls is ChatMessage and type(content) is str:
            if not tool_calls:
                return _text_message(MessageRole.ASSISTANT, content)
            calls = list(tool_calls)
            if all(type(c) is ToolCallBlock for c in calls) and len({c.id for c in calls}) == len(
                calls
            ):  # valid as they are: no need to run the validators
                blocks: list[ContentBlock] = [_text_block(content), *calls]
                fields = {"role": MessageRole.ASSISTANT, "blocks": blocks, "metadata": {}}
                return trusted_instance(ChatMessage, fields, {"role", "blocks"})
        return cls(role=MessageRole.ASSISTANT, blocks=[*_as_blocks(content), *tool_calls])

    @classmethod
    def tool_result(cls, block: ToolResultBlock) -> ChatMessage:
        """A tool message carrying one result."""
        if cls is ChatMessage and type(block) is ToolResultBlock:
            fields = {"role": MessageRole.TOOL, "blocks": [block], "metadata": {}}
            return trusted_instance(ChatMessage, fields, {"role", "blocks"})
        return cls(role=MessageRole.TOOL, blocks=[block])

    # ---------------------------------------------------------------- projections

    @property
    def text(self) -> str:
        """The top-level text blocks, concatenated in order."""
        return "".join(b.text for b in self.blocks if isinstance(b, TextBlock))

    @property
    def content(self) -> str:
        """Upstream's name for `text` (of a tool message: its result's text, as upstream's
        tool messages hold it). Setting it replaces the text blocks with one block
        holding the new text (where the first text block was, else first), keeping every
        other block; setting ``""`` removes them."""
        if self.role is MessageRole.TOOL:
            result = self.tool_result_block
            return "" if result is None else result.text
        return self.text

    @content.setter
    def content(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"a message's content is a string, got {type(text).__name__}")
        if self.role is MessageRole.TOOL:
            raise ValueError("a tool message holds one tool_result block, not text content")
        blocks: list[ContentBlock] = []
        placed = not text
        for block in self.blocks:
            if isinstance(block, TextBlock):
                if not placed:
                    blocks.append(TextBlock(text=text))
                    placed = True
            else:
                blocks.append(block)
        if not placed:
            blocks.insert(0, TextBlock(text=text))
        self.blocks = blocks

    @property
    def extra_args(self) -> dict[str, Any]:
        """Upstream's name for `metadata`."""
        return self.metadata

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        """The tool-call blocks, in order."""
        return [b for b in self.blocks if isinstance(b, ToolCallBlock)]

    @property
    def tool_result_block(self) -> ToolResultBlock | None:
        """The result a tool message carries (None for other roles)."""
        if self.role is MessageRole.TOOL:
            block = self.blocks[0]
            assert isinstance(block, ToolResultBlock)
            return block
        return None

    def sanitize(self) -> ChatMessage:
        """The log-safe copy: media keep their descriptive fields, lose data and URL.

        Reasoning, tool-call input and metadata stay as they are.
        """
        return self.model_copy(update={"blocks": [_sanitize_block(b) for b in self.blocks]})


def find_first_system_message(messages: Sequence[ChatMessage]) -> int:
    """The index of the first system message in ``messages``, or -1 when there is none
    (upstream's helper)."""
    for index, message in enumerate(messages):
        if message.role is MessageRole.SYSTEM:
            return index
    return -1


def _text_block(text: str) -> TextBlock:
    return trusted_instance(TextBlock, {"type": "text", "text": text}, {"text"})


def _text_message(role: MessageRole, text: str) -> ChatMessage:
    # One text block is valid in every role but tool: no need to run the validators.
    fields = {"role": role, "blocks": [_text_block(text)], "metadata": {}}
    return trusted_instance(ChatMessage, fields, {"role", "blocks"})


def _as_blocks(content: str | Sequence[ContentBlock]) -> list[ContentBlock]:
    if isinstance(content, str):
        return [TextBlock(text=content)]
    return list(content)


def _sanitize_block(block: ContentBlock) -> ContentBlock:
    if isinstance(block, MediaBlock):
        return block.redact()  # type: ignore[return-value]
    if isinstance(block, ToolResultBlock):
        return block.model_copy(
            update={
                "content": [b.redact() if isinstance(b, MediaBlock) else b for b in block.content]
            }
        )
    return block
