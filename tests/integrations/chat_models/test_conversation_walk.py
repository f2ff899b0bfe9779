"""The shared walks of a conversation (`_content_walk`), and of a response's content
(`_response_result`), that the wire modules build on."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.api.chat_result import Usage
from flink_agents.api.content_blocks import TextBlock, ToolCallBlock, ToolResultBlock
from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models._content_walk import (
    split_system,
    tool_calls_by_id,
    tool_result_runs,
)
from flink_agents.integrations.chat_models._response_result import (
    STOP_REASONS,
    assistant_result,
    canonical_finish_reason,
    finish_reason_with_calls,
    response_blocks,
)

CALL_A = ToolCallBlock(id="a", name="add", input={})
CALL_B = ToolCallBlock(id="b", name="mul", input={})


def result(call_id: str) -> ChatMessage:
    return ChatMessage.tool_result(ToolResultBlock(call_id=call_id, content=[TextBlock(text="1")]))


def test_a_run_of_tool_messages_is_one_turn_and_any_other_message_ends_it() -> None:
    asked = ChatMessage.user("go")
    called = ChatMessage.assistant("", [CALL_A, CALL_B])
    system = ChatMessage.system("be brief")
    messages = [asked, called, result("a"), result("b"), system, result("a")]
    turns = list(tool_result_runs(messages))
    assert turns[:2] == [asked, called]
    runs = [turn for turn in turns if isinstance(turn, list)]
    assert [[r.call_id for r in run] for run in runs] == [["a", "b"], ["a"]]
    assert turns[2] is runs[0]
    assert turns[4] is runs[1]
    assert turns[3] is system
    assert len(turns) == 5


def test_system_texts_apart_and_the_calls_by_id() -> None:
    messages = [
        ChatMessage.system("one"),
        ChatMessage.user("hi"),
        ChatMessage.system(""),
        ChatMessage.assistant("", [CALL_A, CALL_B]),
        ChatMessage.system("two"),
    ]
    system, rest = split_system(messages)
    assert system == ["one", "two"]
    assert rest == [messages[1], messages[3]]
    assert tool_calls_by_id(messages) == {"a": CALL_A, "b": CALL_B}


def test_response_items_become_blocks_and_unknown_json_in_order() -> None:
    def convert(item: dict[str, Any]) -> Any:
        if item["kind"] == "text":
            return TextBlock(text=item["text"])
        if item["kind"] == "two":
            return [TextBlock(text="x"), TextBlock(text="y")]
        return None

    items = [{"kind": "text", "text": "a"}, {"kind": "odd"}, {"kind": "two"}]
    blocks, unknown = response_blocks(items, convert, lambda item: {"type": item["kind"]})
    assert [block.text for block in blocks if isinstance(block, TextBlock)] == ["a", "x", "y"]
    assert unknown == [{"type": "odd"}]


def test_finish_reasons_are_canonical_or_the_providers_own() -> None:
    assert canonical_finish_reason("end_turn", STOP_REASONS) == "stop"
    assert canonical_finish_reason("pause_turn", STOP_REASONS) == "pause_turn"
    assert canonical_finish_reason(None, STOP_REASONS) is None


def test_a_stop_with_tool_calls_finishes_for_the_calls() -> None:
    assert finish_reason_with_calls("stop", True) == "tool_calls"
    assert finish_reason_with_calls(None, True) == "tool_calls"
    assert finish_reason_with_calls("stop", False) == "stop"
    assert finish_reason_with_calls("length", True) == "length"
    assert finish_reason_with_calls("null", True) == "null"
    assert finish_reason_with_calls("null", True, (None, "stop", "null")) == "tool_calls"


def test_blocks_that_form_no_assistant_message_are_a_malformed_response() -> None:
    same_id = [ToolCallBlock(id="a", name="f", input={}), ToolCallBlock(id="a", name="g", input={})]
    with pytest.raises(ChatModelError) as raised:
        assistant_result("p", same_id, [], "stop", Usage(), {}, model=None)
    assert raised.value.kind == "malformed_response"
    assert not raised.value.retryable
