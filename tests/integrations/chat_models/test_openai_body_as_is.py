"""The OpenAI adapters send their wire module's JSON body through the SDK client's ``post``,
without the SDK's typed conversion of ``create``'s arguments (it leaves such a body as it is
and costs 0.16-0.6 ms of CPU per request): the body on the wire is exactly the one built,
the answer is still the SDK's typed model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai.resources.chat.completions.completions as completions_resource
import openai.resources.responses.responses as responses_resource
import pytest

from flink_agents.api.content_blocks import TextBlock, ToolCallBlock
from flink_agents.api.message import ChatMessage
from flink_agents.api.tool_response import ToolResponse
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
from tests.integrations.chat_models.provider_helpers import (
    WEATHER_TOOL,
    close_sdk_client,
    completion_body,
    response_body,
)

API_KEY = "sk-test-0123456789abcdef"

HISTORY = [
    ChatMessage.system("Be brief."),
    ChatMessage.user("Weather in Paris?"),
    ChatMessage.assistant(
        tool_calls=[ToolCallBlock(id="call_1", name="get_weather", input={"city": "Paris"})]
    ),
    ChatMessage.tool_result(
        ToolResponse.from_output("call_1", "get_weather", "Sunny, 21 C").to_result_block()
    ),
]

COMPLETION = completion_body({"content": "Sunny."})
RESPONSE = response_body("Sunny.")


@pytest.fixture
def no_sdk_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    """``create``'s typed conversion of its arguments fails if it is reached at all."""

    async def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the SDK's argument conversion ran")

    monkeypatch.setattr(completions_resource, "async_maybe_transform", refuse)
    monkeypatch.setattr(responses_resource, "async_maybe_transform", refuse)


# Per API: its connection, the path it posts to, the wire module's request builder, the
# answer the server sends and that answer's id.
APIS = [
    (OpenAIChatModelConnection, "/chat/completions", chat_request, COMPLETION, "chatcmpl-1"),
    (OpenAIResponsesChatModelConnection, "/responses", responses_request, RESPONSE, "resp_1"),
]


@pytest.mark.usefixtures("no_sdk_conversion")
@pytest.mark.parametrize(("connection_class", "path", "build_request", "answer", "answer_id"), APIS)
async def test_body_is_sent_as_built(
    server: FakeProviderServer,
    connection_class: type[OpenAIChatModelConnection | OpenAIResponsesChatModelConnection],
    path: str,
    build_request: Callable[..., dict[str, Any]],
    answer: dict[str, Any],
    answer_id: str,
) -> None:
    connection = connection_class(api_key=API_KEY, base_url=server.base_url)
    server.enqueue(ScriptedResponse(body=answer))
    try:
        result = await connection.achat(HISTORY, [WEATHER_TOOL], model="gpt-test", seed=7)
    finally:
        await close_sdk_client(connection)
    [request] = server.requests
    assert request.path == path
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == build_request(HISTORY, [WEATHER_TOOL], model="gpt-test", seed=7)
    assert result.message.blocks == [TextBlock(text="Sunny.")]
    assert result.response_id == answer_id
