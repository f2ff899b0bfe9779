"""Chat models over the OpenAI Responses API (``POST /responses``)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from openai.types.responses import Response
from pydantic import Field

from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.integrations.chat_models._setup_options import set_options
from flink_agents.integrations.chat_models.openai._connection import OpenAIApi, OpenAIConnection
from flink_agents.integrations.chat_models.openai._responses_api import (
    PROVIDER,
    build_request,
    parse_response,
)

__all__ = ["OpenAIResponsesChatModelConnection", "OpenAIResponsesChatModelSetup"]

DEFAULT_MODEL = "gpt-6-luna"

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
ReasoningSummary = Literal["auto", "concise", "detailed"]


class OpenAIResponsesChatModelConnection(OpenAIConnection):
    """A connection to the OpenAI Responses API through the official async SDK.

    Settings (``api_key``, else ``OPENAI_API_KEY``; ``base_url``; ``timeout``;
    ``max_retries`` = 0; ``default_headers``; ``organization``; ``http_client``) come
    from the shared base. Unsupported blocks raise `UnsupportedContentBlockError`
    before anything is sent.
    """

    provider_name: ClassVar[str] = PROVIDER
    api: ClassVar[OpenAIApi] = OpenAIApi("/responses", Response, build_request, parse_response)


_TYPED_OPTIONS = (
    "max_output_tokens",
    "temperature",
    "reasoning_effort",
    "reasoning_summary",
    "tool_choice",
    "store",
)


class OpenAIResponsesChatModelSetup(BaseChatModelSetup):
    """Model and options for an `OpenAIResponsesChatModelConnection`.

    Typed options left at ``None`` are not sent (the API's defaults apply); ``params``
    carries any other request field. For stateless multi-turn reasoning set
    ``store=False`` and ``encrypted_reasoning=True``.
    """

    model: str | None = DEFAULT_MODEL
    """The model name."""
    max_output_tokens: int | None = Field(default=None, ge=1)
    """Upper bound on generated tokens, reasoning included."""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature."""
    reasoning_effort: ReasoningEffort | None = None
    """``reasoning.effort`` for reasoning models."""
    reasoning_summary: ReasoningSummary | None = None
    """``reasoning.summary``: ask for readable reasoning summaries."""
    tool_choice: str | dict[str, Any] | None = None
    """``auto``, ``none``, ``required``, a tool name (forces that tool), or the wire dict."""
    store: bool | None = None
    """Whether OpenAI stores the response (API default: true)."""
    encrypted_reasoning: bool = False
    """Ask for ``include=["reasoning.encrypted_content"]`` so reasoning can be sent back
    without server-side storage; implies ``store=False`` unless ``store`` is set."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        kwargs = super().model_kwargs
        kwargs.update(set_options(self, _TYPED_OPTIONS))
        if self.encrypted_reasoning:
            kwargs["encrypted_reasoning"] = True
        return kwargs
