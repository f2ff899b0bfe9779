"""Azure OpenAI Chat Completions: `AzureOpenAIChatModelConnection` and `AzureOpenAIChatModelSetup`.

Upstream's module path, class names and fields (connection: ``api_key``,
``api_version``, ``azure_endpoint``, ``timeout``, ``max_retries``; setup: ``model`` (the
deployment), ``model_of_azure_deployment``, ``temperature``, ``max_tokens``,
``logprobs``, ``additional_kwargs``), so upstream descriptors work unchanged. The
request and the answer are the OpenAI Chat Completions wire module's
(`openai._chat_completions_api`): what `OpenAIChatModelConnection` sends and accepts, an
Azure deployment sends and accepts.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from flink_agents.integrations.chat_models._setup_options import add_options
from flink_agents.integrations.chat_models.azure._connection import (
    AzureDeploymentSetup,
    AzureOpenAIConnection,
)
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)

__all__ = ["AzureOpenAIChatModelConnection", "AzureOpenAIChatModelSetup"]


class AzureOpenAIChatModelConnection(AzureOpenAIConnection, OpenAIChatModelConnection):
    """Chat Completions on an Azure OpenAI deployment
    (``POST {azure_endpoint}/openai/deployments/{model}/chat/completions?api-version=...``).

    Settings: see `AzureOpenAIConnection` (``api_key`` or an Entra ID token,
    ``api_version``, ``azure_endpoint``...) and the shared ones (``timeout`` 60 s,
    ``max_retries`` 0: the built-in chat action retries; ``default_headers``,
    ``http_client``).
    """


class AzureOpenAIChatModelSetup(AzureDeploymentSetup, OpenAIChatModelSetup):
    """A deployment and its options for an `AzureOpenAIChatModelConnection`.

    The options of `OpenAIChatModelSetup` (``max_tokens``, ``temperature``,
    ``tool_choice``, ``response_format``, ``tool_media``, ``params`` /
    ``additional_kwargs``), with ``model`` required: the deployment's name.
    """

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature (reasoning models take none)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Most tokens to generate (``max_tokens_param`` names the field it is sent as)."""
    logprobs: bool | None = None
    """Ask for log probabilities of the output tokens."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        return add_options(super().model_kwargs, self, ("logprobs",))
