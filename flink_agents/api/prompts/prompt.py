"""Prompts: text or message templates with ``{name}`` placeholders (upstream's module).

``Prompt.from_text`` and ``Prompt.from_messages`` make a `LocalPrompt`; `format_string`
and `format_messages` fill it in (`aformat_string` and `aformat_messages` from async
code). Filling follows `flink_agents.api.prompts.utils`: one pass, names that were not
given (and JSON braces) stay as they are.

>>> Prompt.from_text("Classify this ticket: {ticket}").format_string(ticket="...")
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from flink_agents.api.content_blocks import TextBlock
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.prompts.utils import SafeFormatter
from flink_agents.api.resource import ResourceType, SerializableResource

__all__ = ["LocalPrompt", "Prompt", "format_template"]


def format_template(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with each ``{name}`` that ``values`` has replaced by ``str(value)``."""
    return SafeFormatter(values).format(template)


class Prompt(SerializableResource, ABC):
    """A template that becomes text or chat messages."""

    @staticmethod
    def from_messages(messages: Sequence[ChatMessage]) -> LocalPrompt:
        """A prompt of message templates (their text blocks are filled in)."""
        return LocalPrompt(template=list(messages))

    @staticmethod
    def from_text(text: str) -> LocalPrompt:
        """A prompt of one text template."""
        return LocalPrompt(template=text)

    @abstractmethod
    def format_string(self, **kwargs: Any) -> str:
        """The filled-in text."""

    @abstractmethod
    def format_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        """The filled-in messages."""

    async def aformat_string(self, **kwargs: Any) -> str:
        """`format_string` for async code (the chat setup's async path awaits it). By
        default the sync one; a prompt whose rendering waits (an MCP prompt asks its
        server) overrides it, so the caller's event loop goes on meanwhile."""
        return self.format_string(**kwargs)

    async def aformat_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        """`format_messages` for async code; see `aformat_string`."""
        return self.format_messages(role, **kwargs)

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.PROMPT


class LocalPrompt(Prompt):
    """A prompt whose template it holds: one text, or a list of messages."""

    template: list[ChatMessage] | str
    """The text template, or the message templates."""

    def format_string(self, **kwargs: Any) -> str:
        """The filled-in text; message templates become ``role: text`` lines."""
        formatter = SafeFormatter(kwargs)
        if isinstance(self.template, str):
            return formatter.format(self.template)
        return "\n".join(f"{m.role.value}: {formatter.format(m.text)}" for m in self.template)

    def format_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        """The filled-in messages: a text template becomes one message of ``role``;
        message templates keep their roles, and blocks other than text (media, tool
        calls) as they are."""
        formatter = SafeFormatter(kwargs)
        if isinstance(self.template, str):
            text = formatter.format(self.template)
            if role is MessageRole.SYSTEM:
                return [ChatMessage.system(text)]
            if role is MessageRole.USER:
                return [ChatMessage.user(text)]
            if role is MessageRole.ASSISTANT:
                return [ChatMessage.assistant(text)]
            raise ValueError("a text prompt becomes a system, user or assistant message")
        return [_format_message(m, formatter) for m in self.template]


def _format_message(message: ChatMessage, formatter: SafeFormatter) -> ChatMessage:
    blocks = [
        TextBlock(text=formatter.format(b.text)) if isinstance(b, TextBlock) else b
        for b in message.blocks
    ]
    return message.model_copy(update={"blocks": blocks})
