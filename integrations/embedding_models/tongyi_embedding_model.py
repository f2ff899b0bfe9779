"""Tongyi text embeddings (Alibaba Cloud DashScope) through the official ``dashscope`` SDK
(2.x ``AsyncClient``, native protocol: ``POST
/services/embeddings/text-embedding/text-embedding``).

`TongyiEmbeddingModelConnection` and `TongyiEmbeddingModelSetup` keep upstream's module
path, class names and fields (connection: ``api_key``, ``request_timeout``; setup:
``model``, ``text_type``, ``dimension``, ``additional_kwargs``). The connection is the
integrations' `DashScopeClient` (shared with the Tongyi chat connection: cached client,
call deadline, errors mapped and the key masked) on `BaseEmbeddingModelConnection`.

`embedding_request` and `embedding_result_of` are the wire mapping (pure functions).

Install the SDK with the ``dashscope`` extra (``pip install 'pyflink-agents[dashscope]'``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import Field

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
    EmbeddingResult,
)
from flink_agents.integrations._dashscope_client import PROVIDER, DashScopeClient
from flink_agents.integrations._provider_client import timeout_field
from flink_agents.integrations._sdk_errors import malformed_response
from flink_agents.integrations.embedding_models._embedding_result import (
    as_vector,
    embedding_result,
    token_usage,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_REQUEST_TIMEOUT",
    "MAX_TEXTS_PER_REQUEST",
    "TongyiEmbeddingModelConnection",
    "TongyiEmbeddingModelSetup",
    "embedding_request",
    "embedding_result_of",
]

DEFAULT_MODEL = "text-embedding-v4"
"""The model `TongyiEmbeddingModelSetup` uses when none is given (upstream's)."""
DEFAULT_REQUEST_TIMEOUT = 30.0
"""Seconds one call may take (upstream's default)."""
MAX_TEXTS_PER_REQUEST = 10
"""Texts ``text-embedding-v3`` and ``-v4`` take in one request (DashScope's limit)."""

_SDK_PARAMS = ("text_type", "dimension", "output_type", "instruct")
"""Parameters ``embeddings.create`` names; the others go in ``parameters``."""


def embedding_request(text: str | Sequence[str], params: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the SDK's ``embeddings.create``: ``model`` (default
    ``text-embedding-v4``), ``input``, ``text_type``, ``dimension``, ``output_type`` and
    ``instruct`` when not None, and every other parameter in ``parameters``. The SDK posts
    ``{"model", "input": {"texts": [...]}, "parameters": {...}}``."""
    given = dict(params)
    request: dict[str, Any] = {
        "model": given.pop("model", None) or DEFAULT_MODEL,
        "input": text if isinstance(text, str) else list(text),
    }
    for name in _SDK_PARAMS:
        value = given.pop(name, None)
        if value is not None:
            request[name] = value
    parameters = {key: value for key, value in given.items() if value is not None}
    if parameters:
        request["parameters"] = parameters
    return request


def embedding_result_of(response: Any, *, single: bool) -> EmbeddingResult[Any]:
    """The SDK's ``EmbeddingResponse`` as an `EmbeddingResult`: vectors in the order of
    their ``index``; ``total_tokens`` (DashScope counts input only) as the usage."""
    items = getattr(response, "embeddings", None)
    if items is None:
        raise malformed_response(PROVIDER, "the answer has no embeddings")
    ordered = sorted(items, key=lambda item: getattr(item, "index", 0))
    vectors = [as_vector(PROVIDER, item.embedding) for item in ordered]
    usage = getattr(response, "usage", None)
    # The SDK's usage model reads a missing count as 0: 0 tokens for a text is no count.
    input_tokens = getattr(usage, "input_tokens", None) or None
    total = getattr(usage, "total_tokens", None) or None
    return embedding_result(vectors, single=single, usage=token_usage(input_tokens, total))


class TongyiEmbeddingModelConnection(BaseEmbeddingModelConnection, DashScopeClient):
    """A connection to DashScope's text embeddings.

    Settings (`DashScopeClient`, upstream's names): ``api_key`` (else
    ``DASHSCOPE_API_KEY``; never dumped or shown, masked in every error),
    ``request_timeout`` (seconds, default 30), ``base_url``, ``workspace``, ``region``,
    ``http_client``, and the rate limits. A list of texts goes in requests of at most 10
    (DashScope's limit for ``text-embedding-v3``/``-v4``; a setup's ``batch_size`` sets
    another). A missing key is a `ChatModelError` (``kind="authentication"``) at the first
    call, not when the connection is made (upstream raises ``ValueError`` then): a
    connection built on a client that has no key can still be shipped to workers that do.
    """

    default_batch_size: ClassVar[int | None] = MAX_TEXTS_PER_REQUEST

    timeout: float = timeout_field(DEFAULT_REQUEST_TIMEOUT)
    """Seconds one call may take in all (upstream's name: ``request_timeout``)."""

    async def aembed_with_usage(
        self, text: str | Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[list[float] | list[list[float]]]:
        """Embed ``text`` (one vector) or each text of a list, in one request.

        ``kwargs``: ``model`` (default ``text-embedding-v4``), ``text_type`` (``"query"`` or
        ``"document"``), ``dimension``, ``output_type``, ``instruct``, and other
        ``parameters``. Provider failures raise `ChatModelError`."""
        request = embedding_request(text, kwargs)

        async def create(client: Any) -> Any:
            config = client.config
            return await client.embeddings.create(
                **request,
                api_key=config.api_key,  # per call: an injected http_client has no auth
                workspace=config.workspace,
            )

        response = await self._send(create)
        return embedding_result_of(response, single=isinstance(text, str))


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
