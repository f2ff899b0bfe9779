"""Anthropic Messages API chat model: the connection (client) and the setup (options)."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Sequence
from typing import Any

import anthropic
from pydantic import Field, PrivateAttr

from flink_agents.api.chat_models.chat_model import (
    BaseChatModelConnection,
    BaseChatModelSetup,
    ToolSpec,
)
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models._sdk_errors import chat_model_error_from_sdk
from flink_agents.integrations.chat_models._secrets import (
    register_client_secrets,
    register_provider_secrets,
)
from flink_agents.integrations.chat_models.anthropic._messages_api import (
    DEFAULT_MAX_TOKENS,
    PROVIDER,
    build_messages_request,
    parse_messages_response,
)

__all__ = ["DEFAULT_MODEL", "AnthropicChatModelConnection", "AnthropicChatModelSetup"]

DEFAULT_MODEL = "claude-sonnet-4-6"
"""The model `AnthropicChatModelSetup` uses when none is given."""

# Arguments of `messages.create` that are SDK call options, not request fields.
_SDK_CALL_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout", "stream"})


class AnthropicChatModelConnection(BaseChatModelConnection):
    """Calls the Anthropic Messages API through the official async SDK.

    ``max_retries`` defaults to 0: the built-in chat action owns retries (it reads
    `ChatModelError.retryable` and ``retry_after``), so the SDK does not retry too.
    """

    api_key: str | None = Field(default=None, exclude=True, repr=False)
    """API key; when None the SDK reads ``ANTHROPIC_API_KEY``."""
    base_url: str | None = None
    """API endpoint; when None the SDK's default (or ``ANTHROPIC_BASE_URL``)."""
    timeout: float = 60.0
    """Seconds before a call times out."""
    max_retries: int = 0
    """Retries done by the SDK itself (0: the chat action retries instead)."""
    default_headers: dict[str, str] | None = None
    """Headers sent with every request."""

    _client: anthropic.AsyncAnthropic | None = PrivateAttr(default=None)
    _client_loop: asyncio.AbstractEventLoop | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Registers the key (and the environment's) with the redactor."""
        super().model_post_init(context)
        register_provider_secrets(self.api_key)

    def _client_for_running_loop(self) -> anthropic.AsyncAnthropic:
        """The client, created on first use and reused on the same event loop.

        An async HTTP pool belongs to the loop that opened its connections; the sync
        `chat` runs every call on one shared background loop, so it reuses one client.
        """
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = anthropic.AsyncAnthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
                default_headers=self.default_headers,
            )
            register_client_secrets(self._client)  # the key it resolved, maybe from the env
            self._client_loop = loop
        return self._client

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation; unsupported blocks raise before anything is sent."""
        request = build_messages_request(messages, tools, **params)
        client = self._client_for_running_loop()
        create = client.messages.with_raw_response.create
        arguments, extra_body = _split_request(request, create)
        try:
            raw = await create(**arguments, extra_body=extra_body or None)
            payload = await raw.read()
        except anthropic.AnthropicError as exc:
            raise chat_model_error_from_sdk(exc, provider=PROVIDER, api_key=self.api_key) from None
        result = parse_messages_response(_decode_json(payload))
        request_id = raw.headers.get("request-id")
        if request_id:
            result.metadata["request_id"] = request_id
        return result


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
        if self.model is not None:
            kwargs["model"] = self.model
        optional = {
            "temperature": self.temperature,
            "thinking_budget_tokens": self.thinking_budget_tokens,
            "tool_choice": self.tool_choice,
            "stop_sequences": self.stop_sequences,
        }
        kwargs.update({key: value for key, value in optional.items() if value is not None})
        kwargs.update(self.params)
        return kwargs


def _split_request(request: dict[str, Any], create: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fields the SDK method names as arguments, and the rest (sent as ``extra_body``).

    Named arguments get the SDK's own handling (some become headers); fields it
    does not know yet (``temperature`` in recent SDKs, new API fields) still reach
    the body unchanged.
    """
    known = set(inspect.signature(create).parameters) - _SDK_CALL_OPTIONS
    arguments = {key: value for key, value in request.items() if key in known}
    extra = {key: value for key, value in request.items() if key not in known}
    return arguments, extra


def _decode_json(payload: bytes) -> Any:
    try:
        return json.loads(payload)
    except ValueError:
        raise ChatModelError(
            f"{PROVIDER} sent a malformed response: the body is not JSON",
            retryable=False,
            provider=PROVIDER,
            kind="malformed_response",
        ) from None
