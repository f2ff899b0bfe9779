"""Upstream's text form of a message: ``content=`` in, ``message.content`` out."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from flink_agents.api import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

PNG = "iVBORw0KGgo="


def test_content_text_is_one_text_block() -> None:
    message = ChatMessage(role=MessageRole.USER, content="hello")
    assert message == ChatMessage.user("hello")
    assert message.blocks == [TextBlock(text="hello")]
    assert message.content == "hello" == message.text
    assert ChatMessage(role="system", content="be brief") == ChatMessage.system("be brief")
    assert ChatMessage(role="assistant", content="done") == ChatMessage.assistant("done")


def test_role_defaults_to_user_and_empty_content_is_no_block() -> None:
    assert ChatMessage(content="hi").role is MessageRole.USER
    empty = ChatMessage(role=MessageRole.USER)
    assert empty.blocks == [] and empty.content == ""
    assert ChatMessage(role=MessageRole.USER, content="").blocks == []


def test_content_may_be_blocks() -> None:
    blocks = [TextBlock(text="Describe:"), ImageBlock(mime_type="image/png", data=PNG)]
    assert ChatMessage(role="user", content=blocks).blocks == blocks


def test_the_json_form_is_unchanged_and_round_trips_exactly() -> None:
    message = ChatMessage(role="user", content="hi", extra_args={"lang": "en"})
    data = json.loads(message.model_dump_json())
    assert data == {
        "role": "user",
        "blocks": [{"type": "text", "text": "hi"}],
        "metadata": {"lang": "en"},
    }
    assert ChatMessage.model_validate_json(message.model_dump_json()) == message
    # An upstream-shaped dict reads too.
    upstream = ChatMessage.model_validate({"role": "assistant", "content": "ok"})
    assert upstream == ChatMessage.assistant("ok")
    assert message.extra_args == {"lang": "en"} == message.metadata


def test_content_reads_the_text_of_a_mixed_message() -> None:
    message = ChatMessage.assistant(
        [ReasoningBlock(text="thinking"), TextBlock(text="The answer "), TextBlock(text="is 4")],
        tool_calls=[ToolCallBlock(id="c1", name="calc")],
    )
    assert message.content == "The answer is 4"  # reasoning and tool calls are not text


def test_setting_content_replaces_the_text_and_keeps_other_blocks() -> None:
    call = ToolCallBlock(id="c1", name="calc")
    message = ChatMessage.assistant("first", tool_calls=[call])
    message.content = "second"
    assert message.blocks == [TextBlock(text="second"), call]
    message.content = ""
    assert message.blocks == [call]
    message.content = "again"
    assert message.blocks == [TextBlock(text="again"), call]
    with pytest.raises(TypeError, match="content is a string"):
        message.content = 3  # type: ignore[assignment]


def test_what_content_cannot_express_is_refused_clearly() -> None:
    with pytest.raises(ValidationError, match="content or its blocks, not both"):
        ChatMessage(role="user", content="a", blocks=[TextBlock(text="b")])
    with pytest.raises(ValidationError, match=r"use ChatMessage\.tool_result"):
        ChatMessage(role="tool", content="42")
    with pytest.raises(ValidationError, match="metadata or its extra_args"):
        ChatMessage(content="a", metadata={}, extra_args={})
    with pytest.raises(ValidationError, match="cannot hold a image block"):
        ChatMessage(role="system", content=[ImageBlock(mime_type="image/png", data=PNG)])
    tool = ChatMessage.tool_result(ToolResultBlock(call_id="c1", content=[TextBlock(text="4")]))
    assert tool.content == "4"  # read as upstream's tool messages hold it: the result's text
    with pytest.raises(ValueError, match="tool message"):
        tool.content = "x"
