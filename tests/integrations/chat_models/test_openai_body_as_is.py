"""The OpenAI adapters send their wire module's JSON body through the SDK client's ``post``,
without the SDK's typed conversion of ``create``'s arguments (it leaves such a body as it is
and costs 0.16-0.6 ms of CPU per request): the body on the wire is exactly the one built,
the answer is still the SDK's typed model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai.resources.chat.completions.completions as completions_resource
import openai.resources.responses.responses as responses_resource
import pytest

from flink_agents.api.content_blocks import TextBlock, ToolCallBlock
from flink_agents.api.message import ChatMessage
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.openai import (
    OpenAIChatModelConnection,
    OpenAIResponsesChatModelConnection,
)
from flink_agents.integrations.chat_models.openai._chat_completions_api import (
    build_request as chat_request,
)
from flink_agents.integrations.chat_models.openai._responses_api import (
    build_request as responses_request,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.chat_models.provider_helpers import close_sdk_client

API_KEY = "sk-test-0123456789abcdef"

LOOKUP = ToolMetadata(
    name="lookup",
    description="Look up an order.",
    args_schema={
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
)

HISTORY = [
    ChatMessage.system("Be brief."),
    ChatMessage.user("Where is order A1?"),
    ChatMessage.assistant(
        tool_calls=[ToolCallBlock(id="call_1", name="lookup", input={"order_id": "A1"})]
    ),
    ChatMessage.tool_result(
        ToolResponse.from_output("call_1", "lookup", "shipped").to_result_block()
    ),
]

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-test-2026",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Shipped."},
            "finish_reason": "stop",
        }
    ],
}

RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1767225600,
    "model": "gpt-test-2026",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Shipped.", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}


@pytest.fixture
def no_sdk_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    """``create``'s typed conversion of its arguments fails if it is reached at all."""

    async def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the SDK's argument conversion ran")

    monkeypatch.setattr(completions_resource, "async_maybe_transform", refuse)
    monkeypatch.setattr(responses_resource, "async_maybe_transform", refuse)


@pytest.fixture
async def server() -> AsyncIterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.mark.usefixtures("no_sdk_conversion")
async def test_chat_completions_body_is_sent_as_built(server: FakeProviderServer) -> None:
    connection = OpenAIChatModelConnection(api_key=API_KEY, base_url=server.base_url)
    server.enqueue(ScriptedResponse(body=COMPLETION))
    try:
        result = await connection.achat(HISTORY, [LOOKUP], model="gpt-test", seed=7)
    finally:
        await close_sdk_client(connection)
    [request] = server.requests
    assert request.path == "/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == chat_request(HISTORY, [LOOKUP], model="gpt-test", seed=7)
    assert result.message.blocks == [TextBlock(text="Shipped.")]
    assert result.response_id == "chatcmpl-1"


@pytest.mark.usefixtures("no_sdk_conversion")
async def test_responses_body_is_sent_as_built(server: FakeProviderServer) -> None:
    connection = OpenAIResponsesChatModelConnection(api_key=API_KEY, base_url=server.base_url)
    server.enqueue(ScriptedResponse(body=RESPONSE))
    try:
        result = await connection.achat(HISTORY, [LOOKUP], model="gpt-test", seed=7)
    finally:
        await close_sdk_client(connection)
    [request] = server.requests
    assert request.path == "/responses"
    assert request.body == responses_request(HISTORY, [LOOKUP], model="gpt-test", seed=7)
    assert result.message.blocks == [TextBlock(text="Shipped.")]
    assert result.response_id == "resp_1"
