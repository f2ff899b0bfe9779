"""Live: a real Azure OpenAI deployment answers and sees an image a tool returned.

Skipped unless ``AZURE_OPENAI_API_KEY``, ``AZURE_OPENAI_ENDPOINT`` and
``AZURE_OPENAI_DEPLOYMENT`` are set. ``OPENAI_API_VERSION`` picks the API version
(default ``2025-04-01-preview``); ``AZURE_OPENAI_RESPONSES=1`` also runs the Responses test.
"""

from __future__ import annotations

import os

import pytest

from flink_agents.api.message import ChatMessage
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.azure import (
    AzureOpenAIChatModelConnection,
    AzureOpenAIResponsesChatModelConnection,
)
from tests.fakes.images import red_png
from tests.integrations.chat_models.provider_helpers import through_state

DEPLOYMENT = os.environ.get("AZURE_OPENAI_DEPLOYMENT", "")
VERSION = os.environ.get("OPENAI_API_VERSION", "2025-04-01-preview")

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not (
            os.environ.get("AZURE_OPENAI_API_KEY")
            and os.environ.get("AZURE_OPENAI_ENDPOINT")
            and DEPLOYMENT
        ),
        reason="AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT or AZURE_OPENAI_DEPLOYMENT is not set",
    ),
]

TOOLS = [ToolMetadata(name="get_picture", description="Returns the picture to describe.")]
ASK = "Call get_picture, then tell me in one word which color fills the picture."


@pytest.mark.parametrize(
    "connection_class",
    [
        AzureOpenAIChatModelConnection,
        pytest.param(
            AzureOpenAIResponsesChatModelConnection,
            marks=pytest.mark.skipif(
                not os.environ.get("AZURE_OPENAI_RESPONSES"), reason="AZURE_OPENAI_RESPONSES unset"
            ),
        ),
    ],
)
async def test_deployment_sees_the_tool_image(connection_class: type) -> None:
    connection = connection_class(api_version=VERSION, timeout=60.0)
    history = [ChatMessage.user(ASK)]
    first = await connection.achat(history, TOOLS, model=DEPLOYMENT, tool_choice="required")
    [call] = first.message.tool_calls
    result = ToolResponse.from_output(call.id, call.name, red_png()).to_result_block()
    history = through_state([*history, first.message, ChatMessage.tool_result(result)])
    second = await connection.achat(history, TOOLS, model=DEPLOYMENT, tool_choice="none")
    assert "red" in second.message.text.lower()
    assert second.usage.input_tokens is not None and second.usage.input_tokens > 0
