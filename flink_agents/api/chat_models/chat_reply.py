"""`as_chat_result`: what a chat model gave, as a `ChatResult`.

Connections return `ChatResult`; a test model function, or a chat model setup written
for the upstream API, may return the assistant `ChatMessage` (or its text) instead.
"""

from __future__ import annotations

from typing import Any

from flink_agents.api._trusted import trusted_instance
from flink_agents.api.chat_result import ChatResult, Usage
from flink_agents.api.message import ChatMessage, MessageRole

__all__ = ["ChatReply", "as_chat_result"]

ChatReply = ChatResult | ChatMessage | str
"""What a model may answer with: a full result, an assistant message, or text."""

_UNKNOWN_USAGE: dict[str, Any] = dict.fromkeys(Usage.model_fields)


def as_chat_result(reply: ChatReply, *, model: str | None = None) -> ChatResult:
    """A `ChatResult` for a reply; text and messages get a ``stop`` or ``tool_calls``
    finish reason and unknown usage. Anything else raises `TypeError`."""
    if isinstance(reply, ChatResult):
        return reply
    if isinstance(reply, str):
        # Valid by construction (one text block in an assistant message): no re-validation.
        message = ChatMessage.assistant(reply)
        finish = "stop"
    elif isinstance(reply, ChatMessage):
        message = reply
        finish = "tool_calls" if message.tool_calls else "stop"
    else:
        raise TypeError(
            f"a chat model answered with a {type(reply).__name__}, "
            "not a ChatResult, a ChatMessage or text"
        )
    if type(message) is not ChatMessage or message.role is not MessageRole.ASSISTANT:
        # Let the model's validation say what is wrong.
        return ChatResult(message=message, model=model, finish_reason=finish, usage=Usage())
    return trusted_instance(
        ChatResult,
        {
            "message": message,
            "model": model,
            "response_id": None,
            "usage": trusted_instance(Usage, dict(_UNKNOWN_USAGE), set()),
            "finish_reason": finish,
            "metadata": {},
        },
        {"message", "model", "finish_reason", "usage"},
    )
