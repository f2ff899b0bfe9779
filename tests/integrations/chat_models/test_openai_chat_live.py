"""Live: the real Chat Completions API sees an image a tool returned.

Skipped unless ``OPENAI_API_KEY`` is set. ``OPENAI_CHAT_MODEL`` picks the model
(default ``gpt-4.1-mini``); ``OPENAI_BASE_URL`` points the SDK at a compatible server.
"""

from __future__ import annotations

import os

import pytest

from flink_agents.api.message import ChatMessage
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.openai import OpenAIChatModelConnection
from tests.fakes.images import red_png

needs_key = pytest.mark.skipif(
    not os.environ.get("OPENAI_API_KEY"), reason="OPENAI_API_KEY is not set"
)


@pytest.mark.live
@needs_key
async def test_model_sees_the_tool_image() -> None:
    model = os.environ.get("OPENAI_CHAT_MODEL", "gpt-4.1-mini")
    connection = OpenAIChatModelConnection(timeout=60.0)
    tools = [ToolMetadata(name="get_picture", description="Returns the picture to describe.")]
    history = [
        ChatMessage.user(
            "Call get_picture, then tell me in one word which color fills the picture."
        )
    ]
    first = await connection.achat(history, tools, model=model, tool_choice="required")
    [call] = first.message.tool_calls
    result = ToolResponse.from_output(call.id, call.name, red_png()).to_result_block()
    history += [first.message, ChatMessage.tool_result(result)]
    second = await connection.achat(history, tools, model=model, tool_choice="none")
    assert "red" in second.message.text.lower()
    assert second.usage.input_tokens is not None and second.usage.input_tokens > 0
