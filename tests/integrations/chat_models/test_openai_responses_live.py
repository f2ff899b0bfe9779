"""Live test against the real OpenAI Responses API (needs ``OPENAI_API_KEY``).

A tool returns a small red PNG in its result; the model must say the image is red.
``OPENAI_MULTIMODAL_MODEL`` overrides the model.
"""

from __future__ import annotations

import os

import pytest

from flink_agents.api.content_blocks import ImageBlock, TextBlock, ToolResultBlock
from flink_agents.api.message import ChatMessage
from flink_agents.api.tool_output import media_block_from_bytes
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.openai import (
    OpenAIResponsesChatModelConnection,
    OpenAIResponsesChatModelSetup,
)
from tests.fakes.images import red_png

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="OPENAI_API_KEY is not set"),
]


def test_tool_returning_a_red_png_is_seen_as_red() -> None:
    setup = OpenAIResponsesChatModelSetup(
        connection="openai",
        model=os.environ.get("OPENAI_MULTIMODAL_MODEL", "gpt-6-luna"),
        max_output_tokens=2000,
    )
    connection = OpenAIResponsesChatModelConnection(timeout=120.0)
    tool = ToolMetadata(name="get_image", description="Returns the image the user asks about.")
    history = [
        ChatMessage.user("Call get_image, then tell me in one word the colour of the image.")
    ]
    first = connection.chat(history, [tool], **setup.model_kwargs, tool_choice="get_image")
    assert first.finish_reason == "tool_calls"
    call = first.message.tool_calls[0]
    image = media_block_from_bytes(red_png(), "image/png", name="square.png")
    assert isinstance(image, ImageBlock)
    history += [
        first.message,
        ChatMessage.tool_result(
            ToolResultBlock(call_id=call.id, content=[TextBlock(text="The image:"), image])
        ),
    ]
    final = connection.chat(history, [tool], **setup.model_kwargs)
    assert "red" in final.message.text.lower()
