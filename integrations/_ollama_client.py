"""`OllamaClient`: the ``ollama`` SDK's client settings, for chat and embedding connections.

`flink_agents.integrations.chat_models.ollama_chat_model.OllamaChatModelConnection` and
`flink_agents.integrations.embedding_models.local.ollama_embedding_model.OllamaEmbeddingModelConnection`
put it beside their API base class: ``ollama.AsyncClient`` (one per settings and event loop,
from the shared cache of `ProviderClient`), ``base_url`` and upstream's ``request_timeout``,
a key sent as a bearer token (ollama.com), and the SDK's errors mapped to
`ChatModelError`.

Install the SDK with the ``ollama`` extra (``pip install 'pyflink-agents[ollama]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import httpx
from pydantic import field_validator

from flink_agents.integrations._extras import requires_extra

with requires_extra("ollama", "the Ollama models need the ollama SDK"):
    import ollama

from flink_agents.api.errors import ChatModelError
from flink_agents.integrations._provider_client import (
    ProviderClient,
    UpstreamTimeoutName,
    timeout_field,
)
from flink_agents.integrations._sdk_errors import (
    call_failed,
    connection_error,
    status_error,
    timeout_error,
)
from flink_agents.integrations._secrets import register_provider_secrets

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_REQUEST_TIMEOUT", "PROVIDER", "OllamaClient"]

PROVIDER = "ollama"
"""Name used in `ChatModelError.provider` and error messages."""
DEFAULT_BASE_URL = "http://localhost:11434"
"""Where ``ollama serve`` listens by default."""
DEFAULT_REQUEST_TIMEOUT = 30.0
"""Seconds before a request times out (upstream's default)."""


class OllamaClient(UpstreamTimeoutName, ProviderClient[ollama.AsyncClient]):
    """Settings of an Ollama server (``ollama serve``, or ollama.com with a key).

    ``base_url`` (default ``http://localhost:11434``; ``None`` reads ``OLLAMA_HOST``),
    ``request_timeout`` (seconds, default 30; also accepted as ``timeout``), ``api_key``
    (sent as a bearer token, for ollama.com; else the SDK reads ``OLLAMA_API_KEY``; never
    dumped or shown, masked in every error), ``default_headers``. The SDK makes its own
    HTTP client and does not retry: ``http_client`` is not supported and ``max_retries``
    must stay 0 (the built-in actions retry, reading `ChatModelError.retryable`).
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
    timeout: float = timeout_field(DEFAULT_REQUEST_TIMEOUT)
    """Seconds before a request times out (upstream's name: ``request_timeout``)."""

    @field_validator("max_retries")
    @classmethod
    def _no_sdk_retries(cls, value: int) -> int:
        if value != 0:
            raise ValueError(
                "the ollama SDK does not retry; leave max_retries at 0 and set the agent's "
                "max-retries option (the built-in actions retry)"
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
