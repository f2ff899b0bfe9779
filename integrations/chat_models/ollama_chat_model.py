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

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from flink_agents.api.chat_models.chat_model import (
    BaseChatModelConnection,
    BaseChatModelSetup,
    ToolSpec,
)
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.message import ChatMessage
from flink_agents.integrations._ollama_client import (
    DEFAULT_BASE_URL,
    DEFAULT_REQUEST_TIMEOUT,
    OllamaClient,
)
from flink_agents.integrations.chat_models._ollama_chat_api import (
    ToolMedia,
    build_request,
    parse_response,
)
from flink_agents.integrations.chat_models._setup_options import set_options

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_REQUEST_TIMEOUT",
    "OllamaChatModelConnection",
    "OllamaChatModelSetup",
]

DEFAULT_CONTEXT_WINDOW = 2048
"""``num_ctx`` of `OllamaChatModelSetup` (upstream's default)."""

Think = bool | Literal["low", "medium", "high"]


class OllamaChatModelConnection(BaseChatModelConnection, OllamaClient):
    """A chat connection to an Ollama server (``ollama serve``, or ollama.com with a key).

    Settings (`OllamaClient`): ``base_url`` (default ``http://localhost:11434``; ``None``
    reads ``OLLAMA_HOST``), ``request_timeout`` (seconds, default 30; also accepted as
    ``timeout``), ``api_key`` (sent as a bearer token, for ollama.com; else the SDK reads
    ``OLLAMA_API_KEY``; never dumped or shown, masked in every error),
    ``default_headers``. The SDK makes its own HTTP client and does not retry: ``http_client``
    is not supported and ``max_retries`` must stay 0 (the built-in chat action retries,
    reading `ChatModelError.retryable`).
    """

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
