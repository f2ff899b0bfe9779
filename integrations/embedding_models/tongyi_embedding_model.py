"""Tongyi text embeddings (Alibaba Cloud DashScope) through the official ``dashscope`` SDK's
``TextEmbedding.call`` (native protocol: ``POST
/services/embeddings/text-embedding/text-embedding``), the call upstream makes.

`TongyiEmbeddingModelConnection` and `TongyiEmbeddingModelSetup` keep upstream's module
path, class names and fields (connection: ``api_key``, ``request_timeout``; setup:
``model``, ``text_type``, ``dimension``, ``additional_kwargs``). The connection is the
integrations' `DashScopeClient` (shared with the Tongyi chat connection: settings
resolved by the SDK's client, call deadline, errors mapped and the key masked) on the
embedding connections' `ProviderEmbeddingConnection`. ``TextEmbedding.call`` blocks (it
sends with ``requests``), so it runs on a worker thread, never on the event loop.

As upstream's, a connection without a key (``api_key``, else ``DASHSCOPE_API_KEY``)
cannot be made: ``ValueError``. An answer whose ``status_code`` is not 200 raises an
`EmbeddingModelError` (also a ``RuntimeError``, as upstream's) whose message starts with
``DashScope TextEmbedding call failed``.

`embedding_request` and `embedding_result_of` are the wire mapping (pure functions).

Install the SDK with the ``dashscope`` extra (``pip install 'pyflink-agents[dashscope]'``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, ClassVar

import requests
from dashscope.common.error import DashScopeException
from pydantic import Field, model_validator

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelSetup,
    EmbeddingResult,
)
from flink_agents.api.errors import ChatModelError, EmbeddingModelError
from flink_agents.integrations._dashscope_client import PROVIDER, DashScopeClient, dashscope
from flink_agents.integrations._provider_client import timeout_field
from flink_agents.integrations._sdk_errors import (
    connection_error,
    malformed_response,
    status_error,
    timeout_error,
)
from flink_agents.integrations.embedding_models._embedding_result import (
    embedding_result,
    field_of,
)
from flink_agents.integrations.embedding_models._provider_embedding_connection import (
    EmbeddingCall,
    ProviderEmbeddingConnection,
    request_start,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_REQUEST_TIMEOUT",
    "MAX_TEXTS_PER_REQUEST",
    "TongyiEmbeddingModelConnection",
    "TongyiEmbeddingModelSetup",
    "dashscope",
    "embedding_request",
    "embedding_result_of",
]

DEFAULT_MODEL = "text-embedding-v4"
"""The model `TongyiEmbeddingModelSetup` uses when none is given (upstream's)."""
DEFAULT_REQUEST_TIMEOUT = 30.0
"""Seconds one call may take (upstream's default)."""
MAX_TEXTS_PER_REQUEST = 10
"""Texts ``text-embedding-v3`` and ``-v4`` take in one request (DashScope's limit)."""

_FAILED = "DashScope TextEmbedding call failed"
"""How the message of a failed call starts (upstream's words)."""


def embedding_request(text: str | Sequence[str], params: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the SDK's ``TextEmbedding.call``: ``model`` (default
    ``text-embedding-v4``), ``input``, and every parameter that is not None
    (``text_type``, ``dimension``, ``output_type``, ``instruct``, others). The SDK posts
    ``{"model", "input": {"texts": [...]}, "parameters": {...}}``."""
    request, given = request_start(text, params, default_model=DEFAULT_MODEL)
    request.update((key, value) for key, value in given.items() if value is not None)
    return request


def embedding_result_of(response: Any, *, single: bool) -> EmbeddingResult[Any]:
    """The SDK's answer (``output``: ``{"embeddings": [{"embedding", "text_index"}]}``,
    ``usage``: ``{"total_tokens"}``) as an `EmbeddingResult`: vectors in the order of
    their ``text_index``; ``total_tokens`` (DashScope counts input only) as the usage."""
    items = field_of(getattr(response, "output", None), "embeddings")
    if not isinstance(items, list):
        raise malformed_response(PROVIDER, "the answer has no embeddings")
    ordered = sorted(items, key=lambda item: field_of(item, "text_index") or 0)
    usage = getattr(response, "usage", None)
    return embedding_result(
        PROVIDER,
        (field_of(item, "embedding") for item in ordered),
        single=single,
        prompt_tokens=field_of(usage, "input_tokens") or None,  # 0 tokens is no count
        total_tokens=field_of(usage, "total_tokens") or None,
    )


def _failed_call(response: Any) -> EmbeddingModelError:
    """The error for an answer whose ``status_code`` is not 200."""
    status = int(getattr(response, "status_code", 0) or 0)
    code = getattr(response, "code", None)
    message = getattr(response, "message", None) or ""
    text = f"{code}: {message}" if code else message
    error = status_error(PROVIDER, status, text, headers=getattr(response, "headers", None))
    return EmbeddingModelError(
        f"{_FAILED}: {error.message}",
        status_code=status,
        retryable=error.retryable,
        retry_after=error.retry_after,
        provider=PROVIDER,
        kind=error.kind,
    )


class TongyiEmbeddingModelConnection(ProviderEmbeddingConnection, DashScopeClient):
    """A connection to DashScope's text embeddings.

    Settings (`DashScopeClient`, upstream's names): ``api_key`` (else
    ``DASHSCOPE_API_KEY``; one of them is needed when the connection is made, else
    ``ValueError``, as upstream; never dumped or shown, masked in every error),
    ``request_timeout`` (seconds, default 30), ``base_url``, ``workspace``, ``region``,
    and the rate limits. No ``http_client``: ``TextEmbedding.call`` sends with
    ``requests`` (it reads ``HTTPS_PROXY``). A list of texts goes in requests of at most
    10 (DashScope's limit for ``text-embedding-v3``/``-v4``; a setup's ``batch_size``
    sets another). The model's parameters: ``model`` (default ``text-embedding-v4``),
    ``text_type`` (``"query"`` or ``"document"``), ``dimension``, ``output_type``,
    ``instruct``, and others DashScope takes.
    """

    default_batch_size: ClassVar[int | None] = MAX_TEXTS_PER_REQUEST
    credential_environment: ClassVar[tuple[str, ...]] = ("DASHSCOPE_API_KEY",)
    http_client_refusal: ClassVar[str | None] = (
        "TongyiEmbeddingModelConnection sends through the dashscope SDK's TextEmbedding.call "
        "(requests), which takes no http_client"
    )
    sdk_error = (DashScopeClient.sdk_error, DashScopeException, requests.RequestException)

    timeout: float = timeout_field(DEFAULT_REQUEST_TIMEOUT)
    """Seconds one call may take in all (upstream's name: ``request_timeout``)."""

    @model_validator(mode="after")
    def _key_given(self) -> TongyiEmbeddingModelConnection:
        if not self._has_credentials():
            raise ValueError(
                "DashScope API key is not provided: pass api_key=... to "
                "TongyiEmbeddingModelConnection or set DASHSCOPE_API_KEY where the "
                "connection is made"
            )
        return self

    def _embedding_call(self, text: str | Sequence[str], params: dict[str, Any]) -> EmbeddingCall:
        request = embedding_request(text, params)
        timeout = self.timeout

        async def call(client: Any) -> Any:
            config = client.config  # the key, the gateway and the workspace, resolved
            response = await asyncio.to_thread(
                dashscope.TextEmbedding.call,
                **request,
                api_key=config.api_key,
                workspace=config.workspace,
                base_address=config.base_url,
                request_timeout=timeout,
            )
            if getattr(response, "status_code", None) != HTTPStatus.OK:
                raise _failed_call(response)
            return response

        return call

    def _embedding_result(self, response: Any, *, single: bool) -> EmbeddingResult[Any]:
        return embedding_result_of(response, single=single)

    def _error_from_sdk(self, exc: Exception) -> ChatModelError:
        if isinstance(exc, requests.Timeout):
            return timeout_error(PROVIDER)
        if isinstance(exc, requests.RequestException):
            return connection_error(PROVIDER, type(exc).__name__)
        return super()._error_from_sdk(exc)


class TongyiEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """Model and options for a `TongyiEmbeddingModelConnection` (upstream's fields)."""

    model: str = DEFAULT_MODEL
    """The DashScope embedding model (``text-embedding-v4`` by default, upstream's)."""
    text_type: str | None = None
    """``"query"`` or ``"document"``: what the texts are (asymmetric retrieval)."""
    dimension: int | None = Field(default=None, ge=1)
    """The vectors' dimension (``text-embedding-v3`` and later); every answer is checked
    against it."""
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Other parameters (``output_type``, ``instruct``...), sent as they are."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The model, ``text_type`` and ``dimension`` when set, then ``additional_kwargs``."""
        kwargs: dict[str, Any] = {"model": self.model}
        if self.text_type is not None:
            kwargs["text_type"] = self.text_type
        if self.dimension is not None:
            kwargs["dimension"] = self.dimension
        return {**kwargs, **self.additional_kwargs}

    @property
    def expected_dimensions(self) -> int | None:
        """``dimension``, when set."""
        return self.dimension
