"""Ollama chat models on Ollama's own API (``POST /api/chat``), through the ``ollama`` SDK.

`OllamaChatModelConnection` and `OllamaChatModelSetup` keep upstream's module path, class
names and fields (connection: ``base_url``, ``request_timeout``; setup: ``model``,
``temperature``, ``num_ctx``, ``keep_alive``, ``think``, ``extract_reasoning``,
``additional_kwargs``), so upstream descriptors work unchanged. The wire mapping is in
`_ollama_chat_api`; this module sends the request through ``ollama.AsyncClient`` and
parses its typed answer.

Install the SDK with the ``ollama`` extra (``pip install 'pyflink-agents[ollama]'``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import httpx
from pydantic import AliasChoices, Field, field_validator

try:
    import ollama
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the Ollama chat model needs the ollama SDK: pip install 'pyflink-agents[ollama]'"
    ) from exc

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
from flink_agents.integrations.chat_models._ollama_chat_api import (
    PROVIDER,
    ToolMedia,
    build_request,
    parse_response,
)
from flink_agents.integrations.chat_models._provider_connection import ProviderConnection
from flink_agents.integrations.chat_models._setup_options import set_options

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_REQUEST_TIMEOUT",
    "OllamaChatModelConnection",
    "OllamaChatModelSetup",
]

DEFAULT_BASE_URL = "http://localhost:11434"
"""Where ``ollama serve`` listens by default."""
DEFAULT_REQUEST_TIMEOUT = 30.0
"""Seconds before a request times out (upstream's default)."""
DEFAULT_CONTEXT_WINDOW = 2048
"""``num_ctx`` of `OllamaChatModelSetup` (upstream's default)."""

Think = bool | Literal["low", "medium", "high"]


class OllamaChatModelConnection(ProviderConnection[ollama.AsyncClient]):
    """A connection to an Ollama server (``ollama serve``, or ollama.com with a key).

    Settings: ``base_url`` (default ``http://localhost:11434``; ``None`` reads
    ``OLLAMA_HOST``), ``request_timeout`` (seconds, default 30; also accepted as
    ``timeout``), ``api_key`` (sent as a bearer token, for ollama.com; else the SDK reads
    ``OLLAMA_API_KEY``; never dumped or shown, masked in every error),
    ``default_headers``. The SDK makes its own HTTP client and does not retry: ``http_client``
    is not supported and ``max_retries`` must stay 0 (the built-in chat action retries,
    reading `ChatModelError.retryable`).
    """

    provider_name: ClassVar[str] = PROVIDER
    sdk_client_class: ClassVar[Callable[..., Any]] = ollama.AsyncClient
    sdk_error = (ollama.ResponseError, ollama.RequestError, ConnectionError, httpx.HTTPError)
    sdk_environment: ClassVar[tuple[str, ...]] = ("OLLAMA_HOST", "OLLAMA_API_KEY")
    http_client_refusal: ClassVar[str | None] = (
        "the ollama SDK makes its own HTTP client and takes none; it reads proxy "
        "and TLS settings from the environment (HTTPS_PROXY, SSL_CERT_FILE)"
    )

    base_url: str | None = DEFAULT_BASE_URL
    """The Ollama server; ``None`` for ``OLLAMA_HOST`` (else ``127.0.0.1:11434``)."""
    timeout: float = Field(
        default=DEFAULT_REQUEST_TIMEOUT,
        validation_alias=AliasChoices("request_timeout", "timeout"),
    )
    """Seconds before a request times out (upstream's name: ``request_timeout``)."""

    @property
    def request_timeout(self) -> float:
        """Upstream's name of ``timeout``."""
        return self.timeout

    @field_validator("max_retries")
    @classmethod
    def _no_sdk_retries(cls, value: int) -> int:
        if value != 0:
            raise ValueError(
                "the ollama SDK does not retry; leave max_retries at 0 and set the agent's "
                "max-retries option (the built-in chat action retries)"
            )
        return value

    def _new_client(self, options: dict[str, Any]) -> Any:
        headers = dict(options["default_headers"] or {})
        if options["api_key"]:
            headers["Authorization"] = f"Bearer {options['api_key']}"
        register_provider_secrets(self.api_key)
        return ollama.AsyncClient(
            host=options["base_url"], timeout=options["timeout"], headers=headers or None
        )

    def _error_from_sdk(self, exc: Exception) -> ChatModelError:
        register_provider_secrets(self.api_key)
        if isinstance(exc, ollama.ResponseError) and exc.status_code >= 400:
            return status_error(PROVIDER, exc.status_code, str(exc.error))
        if isinstance(exc, httpx.TimeoutException):
            return timeout_error(PROVIDER)
        if isinstance(exc, (ConnectionError, httpx.TransportError)):
            return connection_error(PROVIDER, f"{type(exc).__name__}: {exc}")
        return call_failed(PROVIDER, exc)

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation to ``/api/chat`` and return the answer.

        ``params``: ``model`` (required), ``think``, ``format``, ``keep_alive``,
        ``options`` and any model option (``temperature``, ``num_ctx``...: they go into
        ``options``), ``tool_media``, ``extract_reasoning``. Unsupported blocks raise
        `UnsupportedContentBlockError` before anything is sent; provider failures raise
        `ChatModelError`.
        """
        extract_reasoning = bool(params.get("extract_reasoning"))
        request = build_request(messages, tools, **params)
        response = await self._send(lambda client: client.chat(**request))
        return parse_response(response, extract_reasoning=extract_reasoning)


class OllamaChatModelSetup(BaseChatModelSetup):
    """Model and options for an `OllamaChatModelConnection` (upstream's fields).

    ``temperature``, ``num_ctx`` and the entries of ``additional_kwargs`` (``params``)
    that are not request fields go into the request's ``options``; ``keep_alive`` and
    ``think`` are request fields. ``None`` is not sent.
    """

    model: str | None = None
    """The model name, as ``ollama list`` shows it (``qwen3:8b``); required for a call."""
    temperature: float | None = Field(default=0.75, ge=0.0, le=2.0)
    """Sampling temperature (upstream's default 0.75)."""
    num_ctx: int | None = Field(default=DEFAULT_CONTEXT_WINDOW, gt=0)
    """Context window in tokens (Ollama's own default is small: 2048 as upstream)."""
    keep_alive: float | str | None = "5m"
    """How long the model stays loaded after the call (``"5m"``, seconds, ``-1``: forever)."""
    think: Think | None = None
    """Thinking for models that think: ``True``/``False``, or ``"low"``/``"medium"``/``"high"``.
    ``None`` (the default, unlike upstream's ``True``) leaves it to the server, so models
    that cannot think do not fail."""
    extract_reasoning: bool = True
    """Also keep ``<think>...</think>`` sections of the answer's text as reasoning."""
    tool_media: ToolMedia = "user_message"
    """Images in tool results: move them into a user message after the tool messages
    (``"user_message"``) or raise before sending (``"error"``)."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        kwargs = set_options(self, ("model", "temperature", "num_ctx", "keep_alive", "think"))
        kwargs["extract_reasoning"] = self.extract_reasoning
        kwargs["tool_media"] = self.tool_media
        kwargs.update(self.params)
        return kwargs
