"""Anthropic Messages API chat model."""

from flink_agents.integrations.chat_models.anthropic.anthropic_chat_model import (
    AnthropicChatModelConnection,
    AnthropicChatModelSetup,
)

__all__ = ["AnthropicChatModelConnection", "AnthropicChatModelSetup"]
