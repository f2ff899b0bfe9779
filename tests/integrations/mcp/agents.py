"""Agents whose tools and prompt come from an MCP server, shared by the local-runner tests
and the mini-cluster tests (e2e_tests/test_mcp.py).

The model is a function: on its first turn it calls four tools of the server (an image,
structured content, a tool error, a sum); on its second it answers with what it got, as
JSON, so a test reads exactly what reached the model.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from flink_agents.api import (
    Agent,
    BaseChatModelSetup,
    ChatMessage,
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    FunctionChatModelConnection,
    ImageBlock,
    InputEvent,
    MessageRole,
    OutputEvent,
    ResourceDescriptor,
    ResourceType,
    RunnerContext,
    TextBlock,
    ToolCallBlock,
    ToolMetadata,
)
from flink_agents.integrations.mcp import MCPServer

SERVER = "warehouse"
CONNECTION = "scripted"
MODEL = "assistant"
TOOLS = ["chart", "stock", "refuse", "add"]
PROMPT = "ask_sum"

FIRST_TURN = [
    ToolCallBlock(id="c1", name="chart", input={"metric": "errors"}),
    ToolCallBlock(id="c2", name="stock", input={"sku": "a-1"}),
    ToolCallBlock(id="c3", name="refuse", input={"order": 7}),
    ToolCallBlock(id="c4", name="add", input={"a": 1, "b": 2}),
]


def describe_results(messages: list[ChatMessage]) -> dict[str, Any]:
    """What the model got back from each tool call: errors, texts, image bytes (base64)."""
    seen: dict[str, Any] = {}
    for message in messages:
        block = message.tool_result_block
        if message.role is not MessageRole.TOOL or block is None:
            continue
        images = [b.data for b in block.content if isinstance(b, ImageBlock)]
        seen[block.call_id] = {
            "is_error": block.is_error,
            "text": "".join(b.text for b in block.content if isinstance(b, TextBlock)),
            "images": images,
        }
    return seen


def warehouse_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    """First turn: call the four tools. Second: report the prompt, the tools offered and
    the results, as JSON."""
    if not any(m.role is MessageRole.TOOL for m in messages):
        return ChatMessage.assistant("Checking.", tool_calls=list(FIRST_TURN))
    return json.dumps(
        {
            "prompt": messages[0].text,
            "tools": sorted(t.name for t in tools),
            "results": describe_results(messages),
        }
    )


class WarehouseAgent(Agent):
    """Asks its model with the server's prompt (``ask_sum``) and four of its tools."""

    def __init__(self, server: ResourceDescriptor) -> None:
        super().__init__()
        self.add_resource(SERVER, ResourceType.MCP_SERVER, server)
        self.add_resource(
            CONNECTION,
            ResourceType.CHAT_MODEL_CONNECTION,
            ResourceDescriptor(clazz=FunctionChatModelConnection, function=warehouse_model),
        )
        self.add_resource(
            MODEL,
            ResourceType.CHAT_MODEL,
            ResourceDescriptor(
                clazz=BaseChatModelSetup, connection=CONNECTION, tools=TOOLS, prompt=PROMPT
            ),
        )
        self.add_action("ask", [InputEvent], ask)
        self.add_action("answer", [ChatResponseEvent], answer)


def ask(event: Event, ctx: RunnerContext) -> None:
    value = event.attributes["input"]  # [a, b], or a record {"a": ..., "b": ...}
    a, b = (value["a"], value["b"]) if isinstance(value, dict) else value
    ctx.send_event(
        ChatRequestEvent(
            model=MODEL, messages=[ChatMessage.user("go")], prompt_args={"a": a, "b": b}
        )
    )


def answer(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ChatResponseEvent)
    if event.error is not None:
        ctx.send_event(OutputEvent(output={"error": event.error.message}))
        return
    assert event.response is not None
    ctx.send_event(OutputEvent(output=json.loads(event.response.text)))


def stdio_descriptor(command: str, args: list[str], **options: Any) -> ResourceDescriptor:
    return ResourceDescriptor(clazz=MCPServer, command=command, args=args, **options)


def http_descriptor(endpoint: str, **options: Any) -> ResourceDescriptor:
    return ResourceDescriptor(clazz=MCPServer, endpoint=endpoint, **options)


def expected_output(a: int, b: int, png: bytes) -> dict[str, Any]:
    """What `WarehouseAgent` outputs for the input ``(a, b)``."""
    return {
        "prompt": f"What is {a} + {b}? Use the add tool.",
        "tools": sorted(TOOLS),
        "results": {
            "c1": {"is_error": False, "text": "", "images": [base64.b64encode(png).decode()]},
            "c2": {"is_error": False, "text": '{"sku":"a-1","count":3}', "images": []},
            "c3": {
                "is_error": True,
                "text": "tool 'refuse' failed: MCPToolError: Error executing tool refuse: "
                "order 7 is already shipped",
                "images": [],
            },
            "c4": {"is_error": False, "text": "3", "images": []},
        },
    }
