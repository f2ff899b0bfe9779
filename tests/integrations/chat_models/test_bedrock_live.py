"""Live: Amazon Bedrock answers through the Converse API, calls a tool (with extended
thinking, replayed after a JSON round trip of the history), and sees an image a tool
returned.

Skipped unless ``BEDROCK_LIVE_MODEL`` names a model or inference profile the account may
call (e.g. ``us.anthropic.claude-sonnet-4-20250514-v1:0``) and AWS credentials are set
(``AWS_ACCESS_KEY_ID`` or ``AWS_PROFILE``; a Bedrock API key in
``AWS_BEARER_TOKEN_BEDROCK``). The region is ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``).
``BEDROCK_LIVE_THINKING=1`` turns extended thinking on (Anthropic models).
"""

from __future__ import annotations

import os

import pytest

from flink_agents.api.content_blocks import ReasoningBlock
from flink_agents.api.message import ChatMessage
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.bedrock import BedrockChatModelConnection
from tests.fakes.images import red_png
from tests.integrations.chat_models.provider_helpers import (
    WEATHER_TOOL,
    answer_the_weather_call,
    through_state,
)

MODEL = os.environ.get("BEDROCK_LIVE_MODEL")
CREDENTIALS = any(
    os.environ.get(name)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK")
)
THINKING = os.environ.get("BEDROCK_LIVE_THINKING") == "1"

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not (MODEL and CREDENTIALS), reason="BEDROCK_LIVE_MODEL or AWS credentials not set"
    ),
]

WEATHER = WEATHER_TOOL


def options() -> dict[str, object]:
    if THINKING:
        return {"model": MODEL, "max_tokens": 4096, "thinking_budget_tokens": 1024}
    return {"model": MODEL, "max_tokens": 1024}


async def test_tool_call_and_answer() -> None:
    connection = BedrockChatModelConnection(timeout=120)
    history = [ChatMessage.user("What is the weather in Oslo? Use the tool.")]
    first = await connection.achat(history, [WEATHER], **options())
    [call] = first.message.tool_calls
    assert call.name == "get_weather" and "oslo" in str(call.input).lower()
    assert first.finish_reason == "tool_calls"
    if THINKING:
        assert any(isinstance(block, ReasoningBlock) for block in first.message.blocks)
    second = await answer_the_weather_call(connection, history, first, [WEATHER], **options())
    assert "21" in second.message.text
    assert second.usage.input_tokens is not None and second.usage.input_tokens > 0


async def test_model_sees_the_tool_image() -> None:
    connection = BedrockChatModelConnection(timeout=120)
    tools = [ToolMetadata(name="get_picture", description="Returns the picture to describe.")]
    history = [ChatMessage.user("Call get_picture, then tell me in one word which color fills it.")]
    first = await connection.achat(history, tools, **options())
    [call] = first.message.tool_calls
    result = ToolResponse.from_output(call.id, call.name, red_png()).to_result_block()
    history = through_state([*history, first.message, ChatMessage.tool_result(result)])
    second = await connection.achat(history, tools, **options())
    assert "red" in second.message.text.lower()
