"""Chat model resources: the connection (transport) and the setup (model and options)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from pydantic import AliasChoices, Field

from flink_agents.api.chat_result import ChatResult
from flink_agents.api.message import ChatMessage
from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.tools.tool import BaseTool, ToolMetadata

__all__ = ["BaseChatModelConnection", "BaseChatModelSetup", "ToolSpec"]

ToolSpec = ToolMetadata | BaseTool
"""What a connection accepts as a tool: its metadata, or the tool itself."""

_T = TypeVar("_T")
_sync_loop: asyncio.AbstractEventLoop | None = None
_sync_loop_lock = threading.Lock()


def _run_on_sync_loop(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` on one long-lived background loop and wait for it.

    Sync ``chat`` calls all share this loop, so async SDK clients (whose connection
    pools belong to the loop they first ran on) are created once and reused,
    whether or not the caller is itself inside a running loop.
    """
    global _sync_loop
    with _sync_loop_lock:
        if _sync_loop is None or _sync_loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="flink-agents-sync-chat", daemon=True
            ).start()
            _sync_loop = loop
        loop = _sync_loop
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError("chat() was called from inside its own loop; await achat() instead")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


class BaseChatModelConnection(Resource):
    """Talks to one provider API: credentials, endpoint, client.

    Subclasses implement `achat` (preferred) or `chat`; the base gives the other.
    Both return a `ChatResult` whose message is the assistant's reply.
    """

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL_CONNECTION

    def _overrides(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(BaseChatModelConnection, name)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation, return the model's answer (blocking)."""
        if not self._overrides("achat"):
            raise NotImplementedError(f"{type(self).__name__} implements neither chat nor achat")
        return _run_on_sync_loop(self.achat(messages, tools, **params))

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation, return the model's answer (non-blocking)."""
        if not self._overrides("chat"):
            raise NotImplementedError(f"{type(self).__name__} implements neither chat nor achat")
        return await asyncio.to_thread(self.chat, messages, tools, **params)


class BaseChatModelSetup(Resource):
    """Which model to use and how: refers to a connection by name.

    ``model_kwargs`` are passed to the connection on every call; provider setups
    add typed fields (``max_tokens``, ``temperature``...) and extend it.
    """

    connection: str
    """Name of the `BaseChatModelConnection` resource to send through."""
    model: str | None = None
    """The provider's model name."""
    prompt: Any = None
    """A `Prompt` (or its resource name) applied to the messages before each call."""
    tools: list[str] = Field(default_factory=list)
    """Names of the tool resources the model may call."""
    params: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("params", "additional_kwargs")
    )
    """Extra provider parameters, passed through (also accepted as ``additional_kwargs``,
    the upstream project's name). Only these pass through: any other keyword that is
    not a field raises `UnknownOptionError`."""

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """Parameters for the connection: the model name and any extras."""
        kwargs: dict[str, Any] = {}
        if self.model is not None:
            kwargs["model"] = self.model
        kwargs.update(self.params)
        return kwargs
