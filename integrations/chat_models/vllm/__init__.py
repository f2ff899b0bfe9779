"""vLLM chat models: its OpenAI-compatible Chat Completions API, with vLLM's extras."""

from flink_agents.integrations.chat_models.vllm.vllm_chat_model import (
    VLLMChatModelConnection,
    VLLMChatModelSetup,
)

__all__ = ["VLLMChatModelConnection", "VLLMChatModelSetup"]
