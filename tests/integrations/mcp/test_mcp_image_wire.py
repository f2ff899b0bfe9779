"""An image an MCP tool returns reaches the model as an image, on the wire: an agent on the
local runner, a real MCP server over stdio, and the Anthropic and OpenAI Responses
adapters (the real SDKs) against a scripted provider on 127.0.0.1. The second request
carries the tool's PNG as an image block in the tool result."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from flink_agents.api import (
    Agent,
    AgentsExecutionEnvironment,
    ChatMessage,
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    InputEvent,
    OutputEvent,
    ResourceDescriptor,
    ResourceType,
    RunnerContext,
)
from flink_agents.integrations.chat_models.anthropic import (
    AnthropicChatModelConnection,
    AnthropicChatModelSetup,
)
from flink_agents.integrations.chat_models.openai.openai_responses_chat_model import (
    OpenAIResponsesChatModelConnection,
    OpenAIResponsesChatModelSetup,
)
from flink_agents.integrations.mcp import MCPServer
from tests.fakes.http_server import FakeProviderServer, RecordedRequest, ScriptedResponse
from tests.integrations.mcp.servers import PNG, stdio_command

PNG_B64 = base64.b64encode(PNG).decode("ascii")


def anthropic_reply(request: RecordedRequest) -> ScriptedResponse:
    first = len(request.body["messages"]) == 1
    content: list[dict[str, Any]] = (
        [{"type": "tool_use", "id": "toolu_1", "name": "chart", "input": {"metric": "errors"}}]
        if first
        else [{"type": "text", "text": "The chart is red."}]
    )
    return ScriptedResponse(
        body={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": "tool_use" if first else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def responses_reply(request: RecordedRequest) -> ScriptedResponse:
    first = len(request.body["input"]) == 1
    item: dict[str, Any] = (
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "chart",
            "arguments": '{"metric": "errors"}',
            "status": "completed",
        }
        if first
        else {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "The chart is red.", "annotations": []}],
        }
    )
    return ScriptedResponse(
        body={
            "id": "resp_1",
            "object": "response",
            "model": "gpt-test",
            "status": "completed",
            "output": [item],
            "usage": {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 5,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 15,
            },
        }
    )


@pytest.fixture(scope="module")
def stdio_descriptor() -> Iterator[ResourceDescriptor]:
    command, args = stdio_command()
    yield ResourceDescriptor(clazz=MCPServer, command=command, args=args, timeout=20)
    MCPServer(command=command, args=args, timeout=20).close()


def chart_agent(server: ResourceDescriptor, connection: Any, setup: Any) -> Agent:
    async def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(model="model", messages=[ChatMessage.user("What colour is it?")])
        )

    async def answer(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ChatResponseEvent) and event.response is not None
        ctx.send_event(OutputEvent(output=event.response.text))

    agent = Agent()
    agent.add_resource("charts", ResourceType.MCP_SERVER, server)
    agent.add_resource("provider", ResourceType.CHAT_MODEL_CONNECTION, connection)
    agent.add_resource("model", ResourceType.CHAT_MODEL, setup)
    agent.add_action("ask", [InputEvent], ask)
    agent.add_action("answer", [ChatResponseEvent], answer)
    return agent


def run(agent: Agent) -> list[Any]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    output = env.from_list([{"key": "dash", "value": "q"}]).apply(agent).to_list()
    env.execute()
    return output


def test_anthropic_receives_the_mcp_image_as_an_image_block(
    stdio_descriptor: ResourceDescriptor,
) -> None:
    with FakeProviderServer(responder=anthropic_reply) as provider:
        agent = chart_agent(
            stdio_descriptor,
            ResourceDescriptor(
                clazz=AnthropicChatModelConnection,
                api_key="sk-ant-test-0000",
                base_url=provider.base_url,
            ),
            ResourceDescriptor(
                clazz=AnthropicChatModelSetup,
                connection="provider",
                model="claude-test",
                tools=["chart"],
            ),
        )
        assert run(agent) == [{"dash": "The chart is red."}]
    first, second = provider.bodies
    [tool] = first["tools"]
    assert tool["name"] == "chart"
    assert tool["input_schema"]["properties"]["metric"]["type"] == "string"
    assert second["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
                    }
                ],
            }
        ],
    }


def test_openai_responses_receives_the_mcp_image_as_an_input_image(
    stdio_descriptor: ResourceDescriptor,
) -> None:
    with FakeProviderServer(responder=responses_reply) as provider:
        agent = chart_agent(
            stdio_descriptor,
            ResourceDescriptor(
                clazz=OpenAIResponsesChatModelConnection,
                api_key="sk-test-0000",
                base_url=provider.base_url,
            ),
            ResourceDescriptor(
                clazz=OpenAIResponsesChatModelSetup,
                connection="provider",
                model="gpt-test",
                tools=["chart"],
            ),
        )
        assert run(agent) == [{"dash": "The chart is red."}]
    first, second = provider.bodies
    [tool] = first["tools"]
    assert (tool["type"], tool["name"]) == ("function", "chart")
    assert second["input"][-1] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [
            {
                "type": "input_image",
                "image_url": f"data:image/png;base64,{PNG_B64}",
                "detail": "auto",
            }
        ],
    }
