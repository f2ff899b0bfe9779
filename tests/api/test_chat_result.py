"""ChatResult, Usage and ToolResponse."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from flink_agents.api import (
    CANONICAL_FINISH_REASONS,
    ChatMessage,
    ChatResult,
    ImageBlock,
    TextBlock,
    ToolResponse,
    ToolResultBlock,
    Usage,
)


def test_usage_tells_unknown_from_zero() -> None:
    usage = Usage(input_tokens=0, output_tokens=5)
    assert usage.input_tokens == 0
    assert usage.cache_read_tokens is None
    assert Usage().is_unknown
    assert not Usage(output_tokens=0).is_unknown
    again = Usage.model_validate_json(usage.model_dump_json())
    assert again.input_tokens == 0 and again.reasoning_tokens is None


def test_usage_sum_keeps_unknown_fields_unknown() -> None:
    total = Usage(input_tokens=3, cache_read_tokens=None) + Usage(input_tokens=4, output_tokens=0)
    assert total.input_tokens == 7
    assert total.output_tokens == 0
    assert total.cache_read_tokens is None


def test_chat_result_round_trip() -> None:
    result = ChatResult(
        message=ChatMessage.assistant("done"),
        model="m-1",
        response_id="r-1",
        usage=Usage(input_tokens=10, output_tokens=2, total_tokens=12),
        finish_reason="stop",
        metadata={"raw_finish_reason": "end_turn"},
    )
    assert ChatResult.model_validate_json(result.model_dump_json()) == result
    assert result.finish_reason in CANONICAL_FINISH_REASONS


def test_chat_result_defaults_are_unknown() -> None:
    result = ChatResult(message=ChatMessage.assistant("x"))
    assert result.usage == Usage()
    assert result.finish_reason is None and result.model is None


def test_chat_result_holds_an_assistant_message() -> None:
    with pytest.raises(ValueError, match="assistant"):
        ChatResult(message=ChatMessage.user("x"))


def test_tool_response_success_to_block() -> None:
    started = datetime(2026, 1, 1, tzinfo=timezone.utc)
    response = ToolResponse.from_output(
        "c1", "chart", [{"type": "input_text", "text": "see"}], started_at=started, duration_s=0.5
    )
    assert response.success and response.error is None
    assert response.to_result_block() == ToolResultBlock(
        call_id="c1", content=[TextBlock(text="see")]
    )
    assert ToolResponse.model_validate_json(response.model_dump_json()) == response


def test_tool_response_failure_is_an_error_result() -> None:
    response = ToolResponse.failure("c2", "lookup", "KeyError: 'x'")
    block = response.to_result_block()
    assert block.is_error
    assert block.call_id == "c2"
    assert block.content == [TextBlock(text="KeyError: 'x'")]


def test_tool_response_keeps_media() -> None:
    image = ImageBlock(mime_type="image/png", data="iVBORw0KGgo=")
    block = ToolResponse.from_output("c3", "shot", image).to_result_block()
    assert block.content == [image]
    message = ChatMessage.tool_result(block)
    assert message.tool_result_block == block
