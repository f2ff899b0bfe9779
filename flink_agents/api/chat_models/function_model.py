"""Chat models that need no network, for tests, examples and benchmarks.

`FunctionChatModelConnection` answers with whatever a Python function of
``(messages, tools)`` returns; `ScriptedChatModelConnection` plays back a list of
answers in order. Both record every call they receive (`calls`), so a test can
assert on exactly what the model was sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from flink_agents.api._callables import is_awaitable
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, ToolSpec
from flink_agents.api.chat_models.chat_reply import ChatReply, as_chat_result
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.message import ChatMessage
from flink_agents.api.tools.tool import ToolMetadata, as_tool_metadata

__all__ = [
    "ChatFunction",
    "ChatReply",
    "FunctionChatModelConnection",
    "RecordedChatCall",
    "ScriptedChatModelConnection",
    "as_chat_result",
]

ChatFunction = Callable[[list[ChatMessage], list[ToolMetadata]], ChatReply | Awaitable[ChatReply]]
"""``(messages, tools) -> reply``, sync or async."""


class RecordedChatCall(BaseModel):
    """One call a test model received."""

    model_config = ConfigDict(extra="forbid")

    messages: list[ChatMessage]
    """The conversation, as sent."""
    tools: list[ToolMetadata]
    """The tools offered."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Other parameters (``model``...)."""


class FunctionChatModelConnection(BaseChatModelConnection):
    """A chat model whose answers come from ``function(messages, tools)``.

    ``latency`` (seconds) is slept on the event loop before each answer, to stand in
    for a provider's response time in benchmarks. No provider stands behind it, so it
    does not adapt to overloads unless told (``adaptive_limit=True``); the fixed limits
    (``max_concurrent_requests``...) apply as on any connection.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    function: ChatFunction | None = Field(default=None, exclude=True)
    """Produces the reply; sync or async."""
    latency: float = Field(default=0.0, ge=0.0)
    """Seconds to wait before answering."""
    model_name: str = "function-model"
    """Reported as `ChatResult.model` when the reply does not name one."""
    record_calls: bool = True
    """Keep every received call in `calls` (turn off for long benchmarks)."""
    adaptive_limit: bool = False
    """Adapt to the overloads the function raises (off: it is no provider)."""

    _calls: list[RecordedChatCall] = PrivateAttr(default_factory=list)

    @property
    def calls(self) -> list[RecordedChatCall]:
        """The calls received so far, in order."""
        return self._calls

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        metadata = [as_tool_metadata(t) for t in tools or ()]
        history = list(messages)
        if self.record_calls:
            self._calls.append(
                RecordedChatCall(
                    messages=[m.model_copy(deep=True) for m in history],
                    tools=metadata,
                    params=dict(params),
                )
            )
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        reply = self._reply(history, metadata)
        if is_awaitable(reply):
            reply = await reply
        return as_chat_result(reply, model=self.model_name)

    def _reply(
        self, messages: list[ChatMessage], tools: list[ToolMetadata]
    ) -> ChatReply | Awaitable[ChatReply]:
        if self.function is None:
            raise ValueError("FunctionChatModelConnection needs a function")
        return self.function(messages, tools)


class ScriptedChatModelConnection(FunctionChatModelConnection):
    """Plays back ``replies`` in order, one per call; an exception in the list is raised.

    Running past the end of the script raises `RuntimeError`: the test asked for
    more model calls than it expected.
    """

    replies: list[Any] = Field(default_factory=list, exclude=True)
    """`ChatResult`, `ChatMessage`, text, or an exception to raise."""

    _next: int = PrivateAttr(default=0)

    def _reply(
        self, messages: list[ChatMessage], tools: list[ToolMetadata]
    ) -> ChatReply | Awaitable[ChatReply]:
        if self._next >= len(self.replies):
            raise RuntimeError(
                f"ScriptedChatModelConnection has {len(self.replies)} replies; "
                f"call {self._next + 1} asked for one more"
            )
        reply = self.replies[self._next]
        self._next += 1
        if isinstance(reply, BaseException):
            raise reply
        return reply
