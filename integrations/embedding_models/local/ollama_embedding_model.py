"""Ollama embeddings (``POST /api/embed``) through the official ``ollama`` SDK.

`OllamaEmbeddingModelConnection` and `OllamaEmbeddingModelSetup` keep upstream's module
path, class names and fields (connection: ``base_url``, ``request_timeout``; setup:
``model``, ``truncate``, ``keep_alive``, ``additional_kwargs``). The connection is the
integrations' `OllamaClient` (shared with the chat connection: cached client, call
deadline, errors mapped) on the embedding connections' `ProviderEmbeddingConnection`.

`embed_request` and `embedding_result_of` are the wire mapping (pure functions).

Install the SDK with the ``ollama`` extra (``pip install 'pyflink-agents[ollama]'``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelSetup,
    EmbeddingResult,
)
from flink_agents.integrations._ollama_client import (
    DEFAULT_BASE_URL,
    DEFAULT_REQUEST_TIMEOUT,
    PROVIDER,
    OllamaClient,
)
from flink_agents.integrations.embedding_models._embedding_result import embedding_result
from flink_agents.integrations.embedding_models._provider_embedding_connection import (
    EmbeddingCall,
    ProviderEmbeddingConnection,
    request_start,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_REQUEST_TIMEOUT",
    "OllamaEmbeddingModelConnection",
    "OllamaEmbeddingModelSetup",
    "embed_request",
    "embedding_result_of",
]

_REQUEST_FIELDS = ("truncate", "keep_alive", "dimensions")
"""Parameters that are fields of the request; the others are model ``options``."""


def embed_request(text: str | Sequence[str], params: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``AsyncClient.embed`` (the request's fields): ``model``
    (required), ``input``, ``truncate``, ``keep_alive`` and ``dimensions`` when not None,
    and every other parameter in ``options`` (``num_ctx``...; an ``options`` dict given is
    merged in)."""
    request, given = request_start(text, params)
    for name in _REQUEST_FIELDS:
        value = given.pop(name, None)
        if value is not None:
            request[name] = value
    options = {**dict(given.pop("options", None) or {}), **given}
    if options:
        request["options"] = options
    return request


def embedding_result_of(response: Any, *, single: bool) -> EmbeddingResult[Any]:
    """The SDK's ``EmbedResponse`` as an `EmbeddingResult` (``prompt_eval_count`` as the
    token usage)."""
    prompt = getattr(response, "prompt_eval_count", None)
    return embedding_result(
        PROVIDER,
        response.embeddings or [],
        single=single,
        prompt_tokens=prompt,
        total_tokens=prompt,
    )


class OllamaEmbeddingModelConnection(ProviderEmbeddingConnection, OllamaClient):
    """A connection to an Ollama server's embeddings (``ollama pull nomic-embed-text``).

    Settings (`OllamaClient`, upstream's names): ``base_url`` (default
    ``http://localhost:11434``), ``request_timeout`` (seconds, default 30), ``api_key``
    (ollama.com), ``default_headers``, and the rate limits. Provider failures raise
    `ChatModelError` (a server that is down: ``kind="connection"``, retryable). The
    model's parameters: ``model`` (required), ``truncate``, ``keep_alive``,
    ``dimensions``, and model options (``num_ctx``...).
    """

    def _embedding_call(self, text: str | Sequence[str], params: dict[str, Any]) -> EmbeddingCall:
        request = embed_request(text, params)
        return lambda client: client.embed(**request)

    def _embedding_result(self, response: Any, *, single: bool) -> EmbeddingResult[Any]:
        return embedding_result_of(response, single=single)


class OllamaEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """Model and options for an `OllamaEmbeddingModelConnection` (upstream's fields)."""

    truncate: bool = True
    """Cut a text longer than the model's context instead of failing (upstream's default)."""
    keep_alive: float | str | None = "5m"
    """How long the model stays loaded after the call (``"5m"``, seconds, ``-1``: forever)."""
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Model options (``num_ctx``...) and request fields (``dimensions``)."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The model, ``truncate``, ``keep_alive``, then ``additional_kwargs``."""
        return {
            "model": self.model,
            "truncate": self.truncate,
            "keep_alive": self.keep_alive,
            **self.additional_kwargs,
        }
