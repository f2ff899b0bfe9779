"""End to end: a tool returns an image and the model's next call receives it."""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from typing import Any

import pytest

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
    RunnerContext,
    TextBlock,
    ToolCallBlock,
    ToolMetadata,
    ToolResultBlock,
    action,
    chat_model_connection,
    chat_model_setup,
    tool,
)
from flink_agents.api.tool_output import media_block_from_bytes
from flink_agents.runtime.local_runner import LocalExecutionEnvironment


def red_png(size: int = 4) -> bytes:
    """A small solid red PNG, made without an imaging library."""
    row = b"\x00" + b"\xff\x00\x00" * size
    raw = zlib.compress(row * size)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


PNG = red_png()
IMAGE = media_block_from_bytes(PNG, "image/png", name="errors.png")
TOOL_OUTPUT: dict[str, Any] = {}
MODEL_CALLS: dict[str, list[list[ChatMessage]]] = {}
"""``"calls"``: the messages of each model call (the engine's resources go when it closes)."""


def vision_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    """Asks for the chart first; then describes the colour of the image it was given."""
    MODEL_CALLS.setdefault("calls", []).append(list(messages))
    last = messages[-1]
    if last.role is MessageRole.USER:
        return ChatMessage.assistant(
            "Let me render the chart.",
            tool_calls=[
                ToolCallBlock(id="call_chart", name="render_chart", input={"metric": "errors"})
            ],
        )
    result = last.tool_result_block
    assert result is not None
    images = [b for b in result.content if isinstance(b, ImageBlock)]
    if images and images[0].data is not None and base64.b64decode(images[0].data) == PNG:
        return "The chart is solid red."
    return "I could not see an image."


class ChartAgent(Agent):
    @action(InputEvent)
    @staticmethod
    async def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(model="vision", messages=[ChatMessage.user(event.attributes["input"])])
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ChatResponseEvent) and event.response is not None
        ctx.send_event(OutputEvent(output=event.response.text))

    @tool
    @staticmethod
    def render_chart(metric: str) -> Any:
        """Render a chart of a metric.

        Args:
            metric: Which metric to plot.
        """
        return TOOL_OUTPUT["value"]

    @chat_model_connection
    @staticmethod
    def local_vision() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=FunctionChatModelConnection, function=vision_model)

    @chat_model_setup
    @staticmethod
    def vision() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=BaseChatModelSetup, connection="local_vision", tools=["render_chart"]
        )


@pytest.mark.parametrize(
    ("tool_output", "expected_content"),
    [
        pytest.param(IMAGE, [IMAGE], id="image-block"),
        pytest.param(
            [TextBlock(text="Chart of errors:"), IMAGE],
            [TextBlock(text="Chart of errors:"), IMAGE],
            id="text-and-image",
        ),
        pytest.param(
            PNG,
            [
                ImageBlock(
                    mime_type="image/png",
                    data=base64.b64encode(PNG).decode("ascii"),
                    size_bytes=len(PNG),
                    sha256=hashlib.sha256(PNG).hexdigest(),
                )
            ],
            id="png-bytes",
        ),
    ],
)
def test_image_returned_by_a_tool_reaches_the_model(
    tool_output: Any, expected_content: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(TOOL_OUTPUT, "value", tool_output)
    monkeypatch.setitem(MODEL_CALLS, "calls", [])
    env = LocalExecutionEnvironment()
    builder = env.from_list([{"key": "dash-1", "value": "What colour is the errors chart?"}])
    output = builder.apply(ChartAgent()).to_list()
    env.execute()

    assert output == [{"dash-1": "The chart is solid red."}]
    calls = MODEL_CALLS["calls"]
    assert len(calls) == 2
    tool_message = calls[1][-1]
    assert tool_message.role is MessageRole.TOOL
    assert tool_message.tool_result_block == ToolResultBlock(
        call_id="call_chart", content=expected_content, is_error=False
    )
