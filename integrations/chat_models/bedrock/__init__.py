"""Amazon Bedrock chat models (the Converse API, through boto3)."""

from flink_agents.integrations.chat_models.bedrock.bedrock_chat_model import (
    BedrockChatModelConnection,
    BedrockChatModelSetup,
)

__all__ = ["BedrockChatModelConnection", "BedrockChatModelSetup"]
