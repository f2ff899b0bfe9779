"""`ChatResult`: what one chat model call returns, beyond the assistant message."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from flink_agents.api.content_blocks import ToolCallBlock
from flink_agents.api.message import ChatMessage, MessageRole

__all__ = ["CANONICAL_FINISH_REASONS", "ChatResult", "FinishReason", "Usage"]

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "refusal"]
"""The canonical finish reasons. A provider value that fits none is kept as it is."""

CANONICAL_FINISH_REASONS: frozenset[str] = frozenset(
    ("stop", "length", "tool_calls", "content_filter", "refusal")
)


class Usage(BaseModel):
    """Token counts of one call. ``None`` means the provider did not say; 0 means zero."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int | None = None
    """Prompt tokens, including cached ones where the provider counts them so."""
    output_tokens: int | None = None
    """Generated tokens, reasoning included where the provider counts them so."""
    cache_read_tokens: int | None = None
    """Prompt tokens read from the provider's cache."""
    cache_write_tokens: int | None = None
    """Prompt tokens written to the provider's cache."""
    reasoning_tokens: int | None = None
    """Tokens spent on reasoning."""
    total_tokens: int | None = None
    """Total: the provider's own when it reports one, else input + output when both are known
    (see docs/providers.md, usage); None when unknown."""

    def __add__(self, other: Usage) -> Usage:
        """Field-wise sum; a field stays ``None`` only when both sides are unknown."""

        def add(a: int | None, b: int | None) -> int | None:
            if a is None:
                return b
            if b is None:
                return a
            return a + b

        return Usage(
            **{name: add(getattr(self, name), getattr(other, name)) for name in Usage.model_fields}
        )

    @property
    def is_unknown(self) -> bool:
        """True when no count at all is known."""
        return all(getattr(self, name) is None for name in Usage.model_fields)


class ChatResult(BaseModel):
    """The typed result of one chat model call."""

    model_config = ConfigDict(extra="forbid")

    message: ChatMessage
    """The assistant message: what goes into history."""
    model: str | None = None
    """The model that answered, as the provider names it."""
    response_id: str | None = None
    """The provider's id for this response."""
    usage: Usage = Field(default_factory=Usage)
    """Token usage; unknown counts are ``None``."""
    finish_reason: str | None = None
    """Canonical (`FinishReason`) where one fits, else the provider's own value."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Provider details, for example the raw finish reason under ``raw_finish_reason``."""

    @field_validator("message")
    @classmethod
    def _assistant_only(cls, message: ChatMessage) -> ChatMessage:
        if message.role is not MessageRole.ASSISTANT:
            raise ValueError(
                f"a ChatResult holds an assistant message, got a {message.role.value} message"
            )
        return message

    @property
    def content(self) -> str:
        """The assistant message's text. Upstream's ``chat()`` returns the message itself,
        so code that reads ``model.chat(...).content`` reads the same here."""
        return self.message.text

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        """The assistant message's tool calls (as ``.content``: upstream's reading)."""
        return self.message.tool_calls
