"""`Prompt`: a text or message template with ``{name}`` placeholders."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field, model_validator

from flink_agents.api.content_blocks import TextBlock
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceType, SerializableResource

__all__ = ["Prompt", "format_template"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def format_template(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with each ``{name}`` that ``values`` has replaced by ``str(value)``.

    Other braces (a JSON example, an unknown name) are left as they are.
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        return str(values[name]) if name in values else match.group(0)

    return _PLACEHOLDER.sub(replace, template)


class Prompt(SerializableResource):
    """A template: either one text or a list of messages.

    >>> Prompt.from_text("Classify this ticket: {ticket}").format_string(ticket="...")
    """

    template: str | None = None
    """A text template (a prompt made by `from_text`)."""
    messages: list[ChatMessage] = Field(default_factory=list)
    """Message templates (a prompt made by `from_messages`); their text blocks are templated."""

    @model_validator(mode="after")
    def _one_form(self) -> Prompt:
        if (self.template is None) == (not self.messages):
            raise ValueError("a Prompt has either a text template or message templates")
        return self

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.PROMPT

    @classmethod
    def from_text(cls, text: str) -> Prompt:
        """A prompt from one text template."""
        return cls(template=text)

    @classmethod
    def from_messages(cls, messages: Sequence[ChatMessage]) -> Prompt:
        """A prompt from message templates."""
        return cls(messages=list(messages))

    def format_string(self, **kwargs: Any) -> str:
        """The filled-in text (message templates are joined as ``role: text`` lines)."""
        if self.template is not None:
            return format_template(self.template, kwargs)
        return "\n".join(
            f"{m.role.value}: {format_template(m.text, kwargs)}" for m in self.messages
        )

    def format_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        """The filled-in messages; a text template becomes one message of ``role``."""
        if self.template is not None:
            text = format_template(self.template, kwargs)
            if role is MessageRole.SYSTEM:
                return [ChatMessage.system(text)]
            if role is MessageRole.USER:
                return [ChatMessage.user(text)]
            if role is MessageRole.ASSISTANT:
                return [ChatMessage.assistant(text)]
            raise ValueError("a text prompt becomes a system, user or assistant message")
        return [_format_message(m, kwargs) for m in self.messages]


def _format_message(message: ChatMessage, values: Mapping[str, Any]) -> ChatMessage:
    blocks = [
        TextBlock(text=format_template(b.text, values)) if isinstance(b, TextBlock) else b
        for b in message.blocks
    ]
    return message.model_copy(update={"blocks": blocks})
