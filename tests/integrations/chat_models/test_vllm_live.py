"""Live: a real vLLM server answers, calls a tool and takes its result back.

Skipped unless ``VLLM_BASE_URL`` (``http://host:8000/v1``) and ``VLLM_MODEL`` are set; the
server needs ``--enable-auto-tool-choice`` and a ``--tool-call-parser`` for the tool test.
``VLLM_API_KEY`` is the server's ``--api-key`` when it has one.
"""

from __future__ import annotations

import os

import pytest

from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models.vllm import VLLMChatModelConnection
from tests.integrations.chat_models.provider_helpers import (
    WEATHER_TOOL,
    answer_the_weather_call,
)

BASE_URL = os.environ.get("VLLM_BASE_URL")
MODEL = os.environ.get("VLLM_MODEL", "")

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not (BASE_URL and MODEL), reason="VLLM_BASE_URL or VLLM_MODEL is not set"),
]


async def test_tool_call_and_answer() -> None:
    connection = VLLMChatModelConnection(
        base_url=BASE_URL, api_key=os.environ.get("VLLM_API_KEY"), timeout=120.0
    )
    tools = [WEATHER_TOOL]
    history = [ChatMessage.user("What is the weather in Oslo? Use the tool.")]
    first = await connection.achat(history, tools, model=MODEL)
    [call] = first.message.tool_calls
    assert call.name == "get_weather"
    second = await answer_the_weather_call(connection, history, first, tools, model=MODEL)
    assert "21" in second.message.text
    assert second.usage.input_tokens is not None and second.usage.input_tokens > 0
