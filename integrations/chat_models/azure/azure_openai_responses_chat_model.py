"""Azure OpenAI Responses API: `AzureOpenAIResponsesChatModelConnection` and its setup.

Upstream has no Python class for it; the names follow the same pattern. The request and
the answer are the OpenAI Responses wire module's (`openai._responses_api`), reasoning
items included (kept and sent back as received).
"""

from __future__ import annotations

from flink_agents.integrations.chat_models.azure._connection import (
    AzureDeploymentSetup,
    AzureOpenAIConnection,
)
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


class AzureOpenAIResponsesChatModelSetup(AzureDeploymentSetup, OpenAIResponsesChatModelSetup):
    """A deployment and its options for an `AzureOpenAIResponsesChatModelConnection`: the
    options of `OpenAIResponsesChatModelSetup`, with ``model`` required (the deployment)."""
