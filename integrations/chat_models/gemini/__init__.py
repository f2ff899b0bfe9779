"""Gemini chat models (the Gemini API's generateContent, through google-genai)."""

from flink_agents.integrations.chat_models.gemini.gemini_chat_model import (
    GeminiChatModelConnection,
    GeminiChatModelSetup,
)

__all__ = ["GeminiChatModelConnection", "GeminiChatModelSetup"]
