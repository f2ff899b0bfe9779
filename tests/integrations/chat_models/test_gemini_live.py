"""Live: the Gemini API answers, calls a tool with its thought signature and gets it back
after a JSON round trip of the history, and sees an image a tool returned.

Skipped unless ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY`` is set. ``GEMINI_LIVE_MODEL``
names the model (default ``gemini-3.1-pro-preview``; a Gemini 3 model for the tool image,
which goes in the function response).
"""

from __future__ import annotations

import os

import pytest

from flink_agents.api.message import ChatMessage
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.gemini import GeminiChatModelConnection
from tests.fakes.images import red_png
from tests.integrations.chat_models.provider_helpers import (
    WEATHER_TOOL,
    answer_the_weather_call,
    through_state,
)

MODEL = os.environ.get("GEMINI_LIVE_MODEL", "gemini-3.1-pro-preview")

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not (os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")),
        reason="GOOGLE_API_KEY / GEMINI_API_KEY is not set",
    ),
]

WEATHER = WEATHER_TOOL


async def test_tool_call_with_signature_and_answer() -> None:
    connection = GeminiChatModelConnection(timeout=120)
    history = [ChatMessage.user("What is the weather in Oslo? Use the tool.")]
    first = await connection.achat(history, [WEATHER], model=MODEL, include_thoughts=True)
    [call] = first.message.tool_calls
    assert call.name == "get_weather" and "oslo" in str(call.input).lower()
    assert first.usage.input_tokens is not None and first.usage.input_tokens > 0
    second = await answer_the_weather_call(
        connection, history, first, [WEATHER], model=MODEL, include_thoughts=True
    )
    assert "21" in second.message.text
    assert second.finish_reason == "stop"


async def test_model_sees_the_tool_image() -> None:
    connection = GeminiChatModelConnection(timeout=120)
    tools = [ToolMetadata(name="get_picture", description="Returns the picture to describe.")]
    history = [ChatMessage.user("Call get_picture, then tell me in one word which color fills it.")]
    first = await connection.achat(history, tools, model=MODEL)
    [call] = first.message.tool_calls
    result = ToolResponse.from_output(call.id, call.name, red_png()).to_result_block()
    history = through_state([*history, first.message, ChatMessage.tool_result(result)])
    second = await connection.achat(history, tools, model=MODEL)
    assert "red" in second.message.text.lower()
