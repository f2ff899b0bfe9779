"""OpenAI chat models: Responses API and Chat Completions (also OpenAI-compatible servers)."""

from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.integrations.chat_models.openai.openai_responses_chat_model import (
    OpenAIResponsesChatModelConnection,
    OpenAIResponsesChatModelSetup,
)

__all__ = [
    "OpenAIChatModelConnection",
    "OpenAIChatModelSetup",
    "OpenAIResponsesChatModelConnection",
    "OpenAIResponsesChatModelSetup",
]
