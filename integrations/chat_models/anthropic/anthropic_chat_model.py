"""Anthropic Messages API chat model: the connection (client) and the setup (options)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import anthropic
from anthropic.resources.messages import AsyncMessages
from pydantic import Field

from flink_agents.api.chat_models.chat_model import BaseChatModelSetup, ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models._provider_connection import ProviderConnection
from flink_agents.integrations.chat_models._sdk_arguments import sdk_arguments
from flink_agents.integrations.chat_models._setup_options import set_options
from flink_agents.integrations.chat_models.anthropic._messages_api import (
    DEFAULT_MAX_TOKENS,
    PROVIDER,
    build_request,
    parse_response,
)

__all__ = ["DEFAULT_MODEL", "AnthropicChatModelConnection", "AnthropicChatModelSetup"]

DEFAULT_MODEL = "claude-sonnet-4-6"
"""The model `AnthropicChatModelSetup` uses when none is given."""


class AnthropicChatModelConnection(ProviderConnection[anthropic.AsyncAnthropic]):
    """Calls the Anthropic Messages API through the official async SDK.

    Settings (``api_key``, else ``ANTHROPIC_API_KEY``; ``base_url``; ``timeout``;
    ``max_retries`` = 0; ``default_headers``; ``http_client``) and the shared SDK
    client come from `ProviderConnection`.
    """

    provider_name: ClassVar[str] = PROVIDER
    sdk_client_class: ClassVar[Callable[..., Any]] = anthropic.AsyncAnthropic
    aiohttp_client_class: ClassVar[Callable[[], Any] | None] = anthropic.DefaultAioHttpClient
    httpx_client_class: ClassVar[Callable[[], Any] | None] = anthropic.DefaultAsyncHttpxClient
    sdk_error = anthropic.AnthropicError
    sdk_environment: ClassVar[tuple[str, ...]] = (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_CUSTOM_HEADERS",
    )
    credential_environment: ClassVar[tuple[str, ...]] = (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
    )

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation; unsupported blocks raise before anything is sent."""
        arguments = sdk_arguments(build_request(messages, tools, **params), AsyncMessages.create)
        response = await self._send(lambda client: client.messages.create(**arguments))
        return parse_response(response)


class AnthropicChatModelSetup(BaseChatModelSetup):
    """Model and options for an `AnthropicChatModelConnection`.

    Typed options become call parameters; ``params`` adds any other Messages API
    field (``top_k``, ``metadata``...) and overrides the typed ones.
    """

    model: str | None = DEFAULT_MODEL
    """The Anthropic model name."""
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=0)
    """Most tokens to generate (the API requires a limit)."""
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    """Sampling temperature; None leaves the API default."""
    thinking_budget_tokens: int | None = Field(default=None, gt=0)
    """Enables extended thinking with this token budget (sent as ``thinking``)."""
    tool_choice: str | dict[str, Any] | None = None
    """``"auto"``, ``"any"``, ``"none"``, a tool name, or the API's dict."""
    stop_sequences: list[str] | None = None
    """Texts that stop generation."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"max_tokens": self.max_tokens}
        kwargs.update(
            set_options(
                self,
                ("model", "temperature", "thinking_budget_tokens", "tool_choice", "stop_sequences"),
            )
        )
        kwargs.update(self.params)
        return kwargs
