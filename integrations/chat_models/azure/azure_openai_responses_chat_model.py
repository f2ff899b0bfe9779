"""Azure OpenAI Responses API: `AzureOpenAIResponsesChatModelConnection` and its setup.

Upstream has no Python class for it; the names follow the same pattern. The request and
the answer are the OpenAI Responses wire module's (`openai._responses_api`), reasoning
items included (kept and sent back as received).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from flink_agents.api.chat_models.chat_model import ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models.azure._connection import AzureOpenAIConnection
from flink_agents.integrations.chat_models.openai.openai_responses_chat_model import (
    OpenAIResponsesChatModelConnection,
    OpenAIResponsesChatModelSetup,
)

__all__ = ["AzureOpenAIResponsesChatModelConnection", "AzureOpenAIResponsesChatModelSetup"]


class AzureOpenAIResponsesChatModelConnection(
    AzureOpenAIConnection, OpenAIResponsesChatModelConnection
):
    """The Responses API of an Azure OpenAI resource
    (``POST {azure_endpoint}/openai/responses?api-version=...``, the deployment in
    ``model``; use an ``api_version`` that has it, e.g. ``2025-04-01-preview``).

    Settings: see `AzureOpenAIConnection` and the shared ones.
    """

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation to the deployment named by ``model`` (parameters as
        `OpenAIResponsesChatModelConnection.achat`'s, plus ``model_of_azure_deployment``,
        which is not sent)."""
        return await self._achat_on_azure(super().achat, messages, tools, params)


class AzureOpenAIResponsesChatModelSetup(OpenAIResponsesChatModelSetup):
    """A deployment and its options for an `AzureOpenAIResponsesChatModelConnection`: the
    options of `OpenAIResponsesChatModelSetup`, with ``model`` required (the deployment)."""

    model: str | None = Field(default=None, validate_default=True)
    """The deployment's name; required."""
    model_of_azure_deployment: str | None = None
    """The model behind the deployment: the result's ``model`` when the response names
    none. Not sent."""

    @field_validator("model")
    @classmethod
    def _deployment_required(cls, value: str | None) -> str:
        if value is None or not value.strip():
            raise ValueError("model is required: the name of the Azure OpenAI deployment")
        return value

    @property
    def model_kwargs(self) -> dict[str, Any]:
        kwargs = super().model_kwargs
        if self.model_of_azure_deployment is not None:
            kwargs.setdefault("model_of_azure_deployment", self.model_of_azure_deployment)
        return kwargs
