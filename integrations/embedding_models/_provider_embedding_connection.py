"""`ProviderEmbeddingConnection`: the call every provider embedding connection makes.

The OpenAI, Ollama and Tongyi embedding connections are this class beside their SDK's
`flink_agents.integrations._provider_client.ProviderClient` (``OpenAIClient``,
``OllamaClient``, ``DashScopeClient``): settings, the shared SDK client, one deadline
per call, errors mapped and keys masked. An adapter says only what differs, as two
methods:

- `_embedding_call`: the request for ``text`` and the model's parameters (its wire
  mapping, a pure function that starts from `request_start`), as a call of the SDK
  client;
- `_embedding_result`: the SDK's answer as an `EmbeddingResult` (pure).

`aembed_with_usage` sends the one through ``_send`` and reads the answer with the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    EmbeddingResult,
)

__all__ = ["EmbeddingCall", "ProviderEmbeddingConnection", "request_start"]

EmbeddingCall = Callable[[Any], Awaitable[Any]]
"""What `ProviderClient._send` runs: the SDK client in, the SDK's answer out."""


def request_start(
    text: str | Sequence[str], params: Mapping[str, Any], *, default_model: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What every embedding request starts with, ``{"model", "input"}`` (the text, or the
    list of texts), and the other parameters. No ``model`` and no ``default_model`` raises
    ``ValueError``."""
    rest = dict(params)
    model = rest.pop("model", None) or default_model
    if not model:
        raise ValueError("the model parameter is required (an embedding model name)")
    return {"model": model, "input": text if isinstance(text, str) else list(text)}, rest


class ProviderEmbeddingConnection(BaseEmbeddingModelConnection):
    """An embedding connection on a provider SDK (put beside a `ProviderClient`)."""

    if TYPE_CHECKING:

        async def _send(self, call: EmbeddingCall) -> Any: ...

    def _embedding_call(self, text: str | Sequence[str], params: dict[str, Any]) -> EmbeddingCall:
        """The SDK call that embeds ``text`` with the model's parameters ``params``."""
        raise NotImplementedError

    def _embedding_result(self, response: Any, *, single: bool) -> EmbeddingResult[Any]:
        """The SDK's answer as an `EmbeddingResult` (one vector when ``single``)."""
        raise NotImplementedError

    async def aembed_with_usage(
        self, text: str | Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[list[float] | list[list[float]]]:
        """Embed ``text`` (one vector) or each text of a list, in one request; provider
        failures raise `ChatModelError` (the adapter's docstring names ``kwargs``)."""
        response = await self._send(self._embedding_call(text, kwargs))
        return self._embedding_result(response, single=isinstance(text, str))
