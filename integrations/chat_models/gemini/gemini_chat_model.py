"""Gemini chat models on the Gemini API (``generateContent``), through ``google-genai``.

`GeminiChatModelConnection` holds the settings and the SDK client (``client.aio``, the
Gemini API, never Vertex AI); `GeminiChatModelSetup` the model and its options. The wire
mapping is in `_generate_content_api`. Install the SDK with the ``gemini`` extra
(``pip install 'pyflink-agents[gemini]'``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import httpx
import httpx2
from pydantic import Field, ValidationError

from flink_agents.integrations._extras import requires_extra

with requires_extra("gemini", "the Gemini chat model needs the google-genai SDK"):
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types

from flink_agents.api.chat_models.chat_model import BaseChatModelSetup, ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.integrations._sdk_errors import (
    call_failed,
    connection_error,
    status_error,
    timeout_error,
)
from flink_agents.integrations._secrets import register_provider_secrets
from flink_agents.integrations.chat_models._provider_connection import ProviderConnection
from flink_agents.integrations.chat_models._setup_options import set_options
from flink_agents.integrations.chat_models.gemini._generate_content_api import (
    PROVIDER,
    ToolMedia,
    build_request,
    parse_response,
)

__all__ = [
    "DEFAULT_MODEL",
    "GeminiChatModelConnection",
    "GeminiChatModelSetup",
    "sdk_call_arguments",
]

DEFAULT_MODEL = "gemini-3.1-pro-preview"
"""The model `GeminiChatModelSetup` uses when none is given (upstream's Java default)."""

_KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
_CLIENT_ONLY_CONFIG: dict[str, Any] = {
    # Read the raw body (see _generate_content_api), and let the SDK neither call
    # functions nor follow continuations on its own: the agent's actions do that.
    "should_return_http_response": True,
    "automatic_function_calling": {"disable": True},
    "automatic_continuation": False,
}


def _transport_errors() -> tuple[type[Exception], ...]:
    errors: list[type[Exception]] = [httpx.HTTPError, httpx2.HTTPError, TimeoutError, OSError]
    try:  # the SDK sends through aiohttp when it is installed (and no http_client is given)
        import aiohttp

        errors.append(aiohttp.ClientError)
    except ImportError:  # pragma: no cover - depends on the environment
        pass
    return tuple(errors)


_TRANSPORT_ERRORS = _transport_errors()
_TIMEOUT_ERRORS: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx2.TimeoutException,
    TimeoutError,
)


class GeminiChatModelConnection(ProviderConnection[Any]):
    """Calls the Gemini API's ``generateContent`` through the official ``google-genai`` SDK.

    Settings: ``api_key`` (else ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY``; never dumped or
    shown, masked in every error), ``base_url`` (a proxy or a local server), ``api_version``
    (the SDK's default when None), ``timeout`` (seconds), ``max_retries`` (0: the
    built-in chat action retries), ``default_headers``, ``http_client`` (an
    ``httpx2.AsyncClient`` or ``httpx.AsyncClient``, or a function that makes one).
    """

    provider_name: ClassVar[str] = PROVIDER
    sdk_client_class: ClassVar[Callable[..., Any]] = genai.Client
    sdk_error = (genai_errors.APIError, *_TRANSPORT_ERRORS)
    credential_environment: ClassVar[tuple[str, ...]] = _KEY_VARIABLES
    sdk_environment: ClassVar[tuple[str, ...]] = (
        *_KEY_VARIABLES,
        "GOOGLE_GENAI_API_VERSION",
        "GOOGLE_GENAI_HTTP_CLIENT",
    )

    api_version: str | None = None
    """The API version in the URL (``v1beta``, ``v1``); None for the SDK's default."""

    def _client_options(self) -> dict[str, Any]:
        return {**super()._client_options(), "api_version": self.api_version}

    def _new_client(self, options: dict[str, Any]) -> Any:
        self._check_credentials()
        http_options = genai_types.HttpOptions(
            base_url=options["base_url"],
            api_version=options["api_version"],
            headers=options["default_headers"],
            timeout=round(options["timeout"] * 1000),  # milliseconds
            # Always given: without it the SDK retries a refused aiohttp connection once
            # on its own, after sleeping 1 to 10 s.
            retry_options=genai_types.HttpRetryOptions(attempts=options["max_retries"] + 1),
            httpx_async_client=self._new_http_client(),
        )
        # The Gemini API (not Vertex AI), whatever GOOGLE_GENAI_USE_VERTEXAI says.
        client = genai.Client(api_key=options["api_key"], vertexai=False, http_options=http_options)
        register_provider_secrets(self.api_key)
        return client.aio

    def _error_from_sdk(self, exc: Exception) -> ChatModelError:
        register_provider_secrets(self.api_key)
        if isinstance(exc, genai_errors.APIError) and isinstance(exc.code, int):
            status = exc.status if isinstance(exc.status, str) else None
            message = exc.message if isinstance(exc.message, str) else str(exc)
            headers = getattr(getattr(exc, "response", None), "headers", None)
            error = status_error(
                PROVIDER,
                exc.code,
                f"{status}: {message}" if status else message,
                headers=headers,
            )
            if error.retry_after is None and error.retryable:
                error.retry_after = _retry_delay(exc.details)
            if exc.code == 503:  # UNAVAILABLE: "The model is overloaded"
                error.kind = "overloaded"  # the connection's request limiter backs off
            return error
        if isinstance(exc, _TIMEOUT_ERRORS):
            return timeout_error(PROVIDER)
        if isinstance(exc, _TRANSPORT_ERRORS):
            return connection_error(PROVIDER, f"{type(exc).__name__}: {exc}")
        return call_failed(PROVIDER, exc)

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """One ``generate_content`` call, with the SDK's typed arguments
        (`sdk_call_arguments`). Unsupported blocks and bad options raise before anything
        is sent; provider failures raise `ChatModelError`."""
        model, contents, config = sdk_call_arguments(build_request(messages, tools, **params))
        response = await self._send(
            lambda client: client.models.generate_content(
                model=model, contents=contents, config=config
            )
        )
        return parse_response(response)


def sdk_call_arguments(request: dict[str, Any]) -> tuple[str, list[Any], Any]:
    """``(model, contents, config)`` for ``generate_content``, as the SDK's typed objects.

    The config also asks for the raw body and turns the SDK's automatic function calling
    and continuation off. A config field the SDK does not know, or a value of the wrong
    type, raises ``ValueError`` naming it (before anything is sent).
    """
    config = {**request["config"], **_CLIENT_ONLY_CONFIG}
    try:
        contents = [genai_types.Content.model_validate(item) for item in request["contents"]]
        typed_config = genai_types.GenerateContentConfig.model_validate(config)
    except ValidationError as exc:
        problems = ", ".join(
            f"{'.'.join(str(step) for step in error['loc'])} ({error['type']})"
            for error in exc.errors()
        )
        raise ValueError(f"the Gemini SDK does not take these request fields: {problems}") from None
    return request["model"], contents, typed_config


def _retry_delay(details: Any) -> float | None:
    """The wait of a ``google.rpc.RetryInfo`` in an error body (``"retryDelay": "37s"``)."""
    error = details.get("error", details) if isinstance(details, dict) else None
    entries = error.get("details") if isinstance(error, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        delay = entry.get("retryDelay") if isinstance(entry, dict) else None
        match = _DURATION.match(delay) if isinstance(delay, str) else None
        if match:
            return float(match.group(1))
    return None


_TYPED_OPTIONS = (
    "model",
    "temperature",
    "max_output_tokens",
    "top_p",
    "top_k",
    "stop_sequences",
    "include_thoughts",
    "thinking_budget",
    "thinking_level",
    "tool_choice",
)


class GeminiChatModelSetup(BaseChatModelSetup):
    """Model and options for a `GeminiChatModelConnection` (upstream's Java names:
    ``model``, ``temperature``, ``max_output_tokens``, ``additional_kwargs``).

    Typed options left at None are not sent. ``params`` (``additional_kwargs``) adds any
    other field of the SDK's ``GenerateContentConfig`` (``safety_settings``,
    ``response_mime_type``, ``seed``...) and overrides the typed ones.
    """

    model: str | None = DEFAULT_MODEL
    """The Gemini model name."""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature; None leaves the API default (Gemini 3 models are tuned for
    the default, 1.0)."""
    max_output_tokens: int | None = Field(default=None, gt=0)
    """Most tokens to generate (thoughts count too); None leaves the API default."""
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    """Nucleus sampling."""
    top_k: int | None = Field(default=None, gt=0)
    """Top-k sampling."""
    stop_sequences: list[str] | None = None
    """Texts that stop generation."""
    include_thoughts: bool | None = None
    """Return thought summaries (kept as `ReasoningBlock`s, sent back with their signatures)."""
    thinking_budget: int | None = None
    """Thinking tokens (Gemini 2.5; 0 turns thinking off, -1 lets the model decide)."""
    thinking_level: str | None = None
    """How much to think (Gemini 3: ``"low"``, ``"high"``...)."""
    tool_choice: str | dict[str, Any] | None = None
    """``"auto"``, ``"none"``, ``"any"`` / ``"required"``, a tool name, or the SDK's
    ``tool_config`` dict."""
    tool_media: ToolMedia = "function_response"
    """Media from tools: in the function response where it takes them, else in a user
    message after it (``"function_response"``); always in that user message
    (``"user_message"``, for models before Gemini 3); or raise (``"error"``)."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        kwargs = set_options(self, _TYPED_OPTIONS)
        kwargs["tool_media"] = self.tool_media
        kwargs.update(self.params)
        return kwargs
