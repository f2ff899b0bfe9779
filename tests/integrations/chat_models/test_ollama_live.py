"""Live: a real Ollama server answers, calls a tool, thinks, and sees a tool's image.

Skipped unless ``OLLAMA_LIVE_MODEL`` names a model the server has pulled (a tool-calling
one, e.g. ``qwen3:8b``). The server is ``OLLAMA_HOST`` (default ``localhost:11434``);
``OLLAMA_API_KEY`` is sent for ollama.com. ``OLLAMA_LIVE_VISION_MODEL`` (e.g.
``qwen2.5vl:7b``) adds the image test.
"""

from __future__ import annotations

import os

import pytest

from flink_agents.api.message import ChatMessage
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.ollama_chat_model import OllamaChatModelConnection
from tests.fakes.images import red_png
from tests.integrations.chat_models.provider_helpers import (
    WEATHER_TOOL,
    answer_the_weather_call,
)

MODEL = os.environ.get("OLLAMA_LIVE_MODEL")
VISION_MODEL = os.environ.get("OLLAMA_LIVE_VISION_MODEL")

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not MODEL, reason="OLLAMA_LIVE_MODEL is not set"),
]


def connect() -> OllamaChatModelConnection:
    return OllamaChatModelConnection(base_url=None, request_timeout=300)


async def test_tool_call_and_answer() -> None:
    assert MODEL is not None
    connection = connect()
    tools = [WEATHER_TOOL]
    history = [ChatMessage.user("What is the weather in Oslo? Use the tool.")]
    first = await connection.achat(history, tools, model=MODEL, think=True)
    [call] = first.message.tool_calls
    assert call.name == "get_weather" and "oslo" in str(call.input).lower()
    assert first.usage.output_tokens is not None and first.usage.output_tokens > 0
    second = await answer_the_weather_call(
        connection, history, first, tools, model=MODEL, think=True
    )
    assert "21" in second.message.text


@pytest.mark.skipif(not VISION_MODEL, reason="OLLAMA_LIVE_VISION_MODEL is not set")
async def test_model_sees_the_tool_image() -> None:
    assert VISION_MODEL is not None
    connection = connect()
    tools = [ToolMetadata(name="get_picture", description="Returns the picture to describe.")]
    history = [ChatMessage.user("Call get_picture, then tell me in one word which color fills it.")]
    first = await connection.achat(history, tools, model=VISION_MODEL)
    [call] = first.message.tool_calls
    result = ToolResponse.from_output(call.id, call.name, red_png()).to_result_block()
    history += [first.message, ChatMessage.tool_result(result)]
    second = await connection.achat(history, tools, model=VISION_MODEL)
    assert "red" in second.message.text.lower()
