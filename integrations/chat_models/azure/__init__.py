"""Azure OpenAI chat models: Chat Completions and Responses on an Azure deployment."""

from flink_agents.integrations.chat_models.azure.azure_openai_chat_model import (
    AzureOpenAIChatModelConnection,
    AzureOpenAIChatModelSetup,
)
from flink_agents.integrations.chat_models.azure.azure_openai_responses_chat_model import (
    AzureOpenAIResponsesChatModelConnection,
    AzureOpenAIResponsesChatModelSetup,
)

__all__ = [
    "AzureOpenAIChatModelConnection",
    "AzureOpenAIChatModelSetup",
    "AzureOpenAIResponsesChatModelConnection",
    "AzureOpenAIResponsesChatModelSetup",
]
