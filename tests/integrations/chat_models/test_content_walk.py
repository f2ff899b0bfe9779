"""The shared walk of a message's blocks (`_content_walk`) and the reasoning replay rule
(`_reasoning_replay`) the Anthropic and Bedrock adapters send reasoning back by."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.api.content_blocks import ImageBlock, ReasoningBlock, TextBlock, ToolCallBlock
from flink_agents.api.errors import UnsupportedContentBlockError
from flink_agents.integrations.chat_models._content_walk import (
    assistant_items,
    assistant_text_and_calls,
    user_items,
)
from flink_agents.integrations.chat_models._media import ASSISTANT_MEDIA_REASON
from flink_agents.integrations.chat_models._reasoning_replay import replay_reasoning

IMAGE = ImageBlock(mime_type="image/png", data="iVBORw0KGgo=")


def replay(block: ReasoningBlock) -> Any:
    return replay_reasoning(
        block, "p", signed=lambda text, signature: ("signed", text, signature), redacted=str
    )


def test_user_items_keep_the_order_and_leave_empty_text_out() -> None:
    items = user_items(
        [TextBlock(text="a"), TextBlock(text=""), IMAGE, TextBlock(text="b")],
        provider="p",
        text=lambda text: ("text", text),
        media=lambda block: ("media", block.mime_type),
    )
    assert items == [("text", "a"), ("media", "image/png"), ("text", "b")]


def test_assistant_items_convert_each_kind_and_skip_reasoning_not_sent() -> None:
    blocks = [
        ReasoningBlock(text="r1", provider="p"),
        TextBlock(text=""),
        ReasoningBlock(text="r2", provider="p"),
        ToolCallBlock(id="c1", name="f"),
        TextBlock(text="t"),
    ]
    items = assistant_items(
        blocks,
        provider="p",
        text=lambda text: ("text", text),
        tool_call=lambda block: ("call", block.id),
        reasoning=lambda block: None if block.text == "r1" else ("reasoning", block.text),
    )
    assert items == [("reasoning", "r2"), ("call", "c1"), ("text", "t")]


def test_assistant_media_raise_with_the_shared_reason() -> None:
    with pytest.raises(UnsupportedContentBlockError, match="only user messages") as caught:
        assistant_items(
            [TextBlock(text="t"), IMAGE],
            provider="p",
            text=str,
            tool_call=str,
            reasoning=str,
        )
    assert ASSISTANT_MEDIA_REASON in str(caught.value)


def test_text_and_calls_join_every_text_and_leave_reasoning_out() -> None:
    call = ToolCallBlock(id="c1", name="f")
    blocks = [
        TextBlock(text="a"),
        ReasoningBlock(text="r", provider="p"),
        call,
        TextBlock(text="b"),
    ]
    assert assistant_text_and_calls(blocks, provider="p") == ("ab", [call])
    with pytest.raises(UnsupportedContentBlockError, match="only user messages"):
        assistant_text_and_calls([IMAGE], provider="p")


def test_only_the_providers_own_signed_or_redacted_reasoning_is_replayed() -> None:
    assert replay(ReasoningBlock(text="x", signature="s", provider="p")) == ("signed", "x", "s")
    assert replay(ReasoningBlock(redacted_data="enc", signature="s", provider="p")) == "enc"
    assert replay(ReasoningBlock(text="x", provider="p")) is None  # unsigned
    assert replay(ReasoningBlock(text="x", signature="s", provider="other")) is None
    assert replay(ReasoningBlock(redacted_data="enc", provider=None)) is None
