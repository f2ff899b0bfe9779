"""vLLM: `VLLMChatModelConnection` and `VLLMChatModelSetup` (upstream's module and names).

vLLM serves an OpenAI-compatible Chat Completions API, so both classes are the OpenAI
Chat Completions ones (`openai._chat_completions_api` is the wire module) with vLLM's
defaults and extras:

- the connection defaults to ``http://localhost:8000/v1`` (``vllm serve``) and the key
  ``"EMPTY"`` (a server started without ``--api-key`` takes any), and, as upstream's,
  reads neither ``OPENAI_API_KEY`` nor ``OPENAI_BASE_URL``; upstream's ``api_base_url``
  is accepted for ``base_url``;
- the setup requires ``model`` (the name the server serves) and has typed fields for
  vLLM's request extras (``top_k``, ``min_p``, ``repetition_penalty``,
  ``chat_template_kwargs``, ``structured_outputs``); any other extra
  (``guided_json``, ``guided_choice``... on older servers) goes in ``params``. Fields
  the ``openai`` SDK does not know travel in ``extra_body``: the JSON is the same.
- reasoning (``reasoning_content`` or ``reasoning``, from a server started with
  ``--reasoning-parser``) is kept as a `ReasoningBlock` and never sent back.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import AliasChoices, Field, field_validator

from flink_agents.integrations.chat_models._setup_options import add_options
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)

__all__ = [
    "DEFAULT_VLLM_API_BASE_URL",
    "DEFAULT_VLLM_API_KEY",
    "VLLMChatModelConnection",
    "VLLMChatModelSetup",
]

DEFAULT_VLLM_API_BASE_URL = "http://localhost:8000/v1"
"""Where ``vllm serve`` listens by default."""
DEFAULT_VLLM_API_KEY = "EMPTY"
"""The key sent to a server started without ``--api-key`` (the SDK requires one)."""


_VLLM_OPTIONS = (
    "top_k",
    "min_p",
    "repetition_penalty",
    "chat_template_kwargs",
    "structured_outputs",
)
"""vLLM's own typed options, sent after the OpenAI setup's (``params`` win)."""


class VLLMChatModelConnection(OpenAIChatModelConnection):
    """A connection to a vLLM server's Chat Completions API.

    ``base_url`` (also ``api_base_url``, upstream's name; default
    ``http://localhost:8000/v1``) and ``api_key`` (default ``"EMPTY"``; the server's
    ``--api-key`` when it has one): a blank value means the default, and the OpenAI
    environment variables are not read. Other settings as `OpenAIChatModelConnection`.
    """

    provider_name: ClassVar[str] = "vllm"
    sdk_environment: ClassVar[tuple[str, ...]] = ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID")

    base_url: str | None = Field(
        default=DEFAULT_VLLM_API_BASE_URL,
        validation_alias=AliasChoices("base_url", "api_base_url"),
    )
    """The server's OpenAI-compatible root (``.../v1``)."""
    api_key: str | None = Field(default=DEFAULT_VLLM_API_KEY, exclude=True, repr=False)
    """The server's ``--api-key``; ``"EMPTY"`` for a server without one. Never dumped or
    shown."""

    @field_validator("base_url")
    @classmethod
    def _default_base_url(cls, value: str | None) -> str:
        return value if value and value.strip() else DEFAULT_VLLM_API_BASE_URL

    @field_validator("api_key")
    @classmethod
    def _default_api_key(cls, value: str | None) -> str:
        return value if value and value.strip() else DEFAULT_VLLM_API_KEY

    @property
    def api_base_url(self) -> str | None:
        """Upstream's name of ``base_url``."""
        return self.base_url


class VLLMChatModelSetup(OpenAIChatModelSetup):
    """A model served by vLLM and its options: those of `OpenAIChatModelSetup` (sent when
    set; ``params`` / ``additional_kwargs`` win), ``model`` required, and vLLM's extras."""

    model: str | None = Field(default=None, validate_default=True)
    """The name the server serves (``vllm serve <model>``, ``GET /v1/models``); required."""
    top_k: int | None = None
    """Sample from the k most likely tokens (-1: all)."""
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    """Least probability of a token, relative to the most likely one."""
    repetition_penalty: float | None = Field(default=None, gt=0.0)
    """Penalty for tokens already in the prompt or the output (1: none)."""
    chat_template_kwargs: dict[str, Any] | None = None
    """Arguments of the model's chat template, e.g. ``{"enable_thinking": False}`` (Qwen3)."""
    structured_outputs: dict[str, Any] | None = None
    """Guided decoding (vLLM 0.10.2+): ``{"json": schema}``, ``{"regex": ...}``,
    ``{"choice": [...]}``, ``{"grammar": ...}``. Older servers take ``guided_json``...
    in ``params``."""

    @field_validator("model")
    @classmethod
    def _model_required(cls, value: str | None) -> str:
        if value is None or not value.strip():
            raise ValueError(
                "model is required for vLLM: it must match the model name served by the "
                "vLLM server (see `vllm serve <model>` or GET /v1/models)"
            )
        return value

    @property
    def model_kwargs(self) -> dict[str, Any]:
        return add_options(super().model_kwargs, self, _VLLM_OPTIONS)
