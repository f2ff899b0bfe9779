"""Live: DashScope (Tongyi Qwen) answers, calls a tool, and a vision model sees a tool's image.

Skipped unless ``DASHSCOPE_API_KEY`` is set. ``TONGYI_MODEL`` (default ``qwen-plus``) and
``TONGYI_VISION_MODEL`` (default ``qwen-vl-max``) pick the models; ``DASHSCOPE_BASE_URL``
or ``DASHSCOPE_WORKSPACE`` / ``DASHSCOPE_REGION`` pick the gateway.
"""

from __future__ import annotations

import os

import pytest

from flink_agents.api.message import ChatMessage
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.tongyi_chat_model import TongyiChatModelConnection
from tests.fakes.images import red_png
from tests.integrations.chat_models.provider_helpers import (
    WEATHER_TOOL,
    answer_the_weather_call,
)

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not os.environ.get("DASHSCOPE_API_KEY"), reason="DASHSCOPE_API_KEY is not set"
    ),
]

MODEL = os.environ.get("TONGYI_MODEL", "qwen-plus")
VISION_MODEL = os.environ.get("TONGYI_VISION_MODEL", "qwen-vl-max")


async def test_tool_call_and_answer() -> None:
    connection = TongyiChatModelConnection(request_timeout=120)
    tools = [WEATHER_TOOL]
    history = [ChatMessage.user("What is the weather in Hangzhou? Use the tool.")]
    first = await connection.achat(history, tools, model=MODEL)
    [call] = first.message.tool_calls
    assert call.name == "get_weather"
    second = await answer_the_weather_call(connection, history, first, tools, model=MODEL)
    assert "21" in second.message.text
    assert second.usage.input_tokens is not None and second.usage.input_tokens > 0


async def test_vision_model_sees_the_tool_image() -> None:
    connection = TongyiChatModelConnection(request_timeout=120)
    tools = [ToolMetadata(name="get_picture", description="Returns the picture to describe.")]
    history = [ChatMessage.user("Call get_picture, then tell me in one word which color fills it.")]
    first = await connection.achat(history, tools, model=VISION_MODEL)
    [call] = first.message.tool_calls
    result = ToolResponse.from_output(call.id, call.name, red_png(64)).to_result_block()
    history += [first.message, ChatMessage.tool_result(result)]
    second = await connection.achat(history, tools, model=VISION_MODEL)
    assert "red" in second.message.text.lower()
