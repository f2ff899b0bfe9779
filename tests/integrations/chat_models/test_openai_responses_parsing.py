"""Pure conversions of the OpenAI Responses adapter: recorded response JSON -> ChatResult,
and request options -> exact request fields."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from flink_agents.api.chat_result import ChatResult, Usage
from flink_agents.api.content_blocks import ReasoningBlock, TextBlock, ToolCallBlock
from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models.openai._responses_api import build_request
from flink_agents.integrations.chat_models.openai._responses_api import (
    parse_response as parse_sdk_response,
)
from tests.integrations.chat_models.sdk_responses import openai_response


def parse_response(body: Any) -> ChatResult:
    """`parse_response` of what the SDK makes of ``body``."""
    return parse_sdk_response(openai_response(body))


# A recorded reasoning-model turn: reasoning summary + encrypted content, two parallel calls.
TOOL_TURN: dict[str, Any] = {
    "id": "resp_0a1b2c",
    "object": "response",
    "created_at": 1764460800,
    "status": "completed",
    "error": None,
    "incomplete_details": None,
    "model": "gpt-6-luna-2026-09-01",
    "output": [
        {
            "id": "rs_0a1b",
            "type": "reasoning",
            "summary": [
                {"type": "summary_text", "text": "The user wants weather for two cities."},
                {"type": "summary_text", "text": "Call the tool twice."},
            ],
            "encrypted_content": "gAAAAABo-encrypted-blob==",
        },
        {
            "id": "fc_01",
            "type": "function_call",
            "status": "completed",
            "arguments": '{"city":"Paris"}',
            "call_id": "call_Paris01",
            "name": "weather",
        },
        {
            "id": "fc_02",
            "type": "function_call",
            "status": "completed",
            "arguments": '{"city":"Oslo","units":"metric"}',
            "call_id": "call_Oslo02",
            "name": "weather",
        },
    ],
    "service_tier": "default",
    "usage": {
        "input_tokens": 812,
        "input_tokens_details": {"cached_tokens": 512},
        "output_tokens": 133,
        "output_tokens_details": {"reasoning_tokens": 64},
        "total_tokens": 945,
    },
}

TEXT_TURN: dict[str, Any] = {
    "id": "resp_text",
    "status": "completed",
    "model": "gpt-6-luna",
    "output": [
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "Paris is sunny, ", "annotations": []},
                {"type": "output_text", "text": "Oslo is cold.", "annotations": []},
            ],
        }
    ],
    "usage": {
        "input_tokens": 20,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 27,
    },
}


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(base)
    for key, value in changes.items():
        if value is ...:
            body.pop(key, None)
        else:
            body[key] = value
    return body


# ------------------------------------------------------------------------- output items


def test_reasoning_and_parallel_tool_calls() -> None:
    result = parse_response(TOOL_TURN)
    assert result.message.blocks == [
        ReasoningBlock(
            text="The user wants weather for two cities.\n\nCall the tool twice.",
            provider="openai-responses",
            id="rs_0a1b",
            summary=["The user wants weather for two cities.", "Call the tool twice."],
            encrypted_content="gAAAAABo-encrypted-blob==",
        ),
        ToolCallBlock(id="call_Paris01", name="weather", input={"city": "Paris"}),
        ToolCallBlock(id="call_Oslo02", name="weather", input={"city": "Oslo", "units": "metric"}),
    ]
    assert result.finish_reason == "tool_calls"
    assert result.metadata["raw_finish_reason"] == "completed"
    assert result.metadata["service_tier"] == "default"
    assert result.model == "gpt-6-luna-2026-09-01"
    assert result.response_id == "resp_0a1b2c"
    assert result.usage == Usage(
        input_tokens=812,
        output_tokens=133,
        cache_read_tokens=512,
        reasoning_tokens=64,
        total_tokens=945,
    )


def test_text_message() -> None:
    result = parse_response(TEXT_TURN)
    assert result.message.blocks == [
        TextBlock(text="Paris is sunny, "),
        TextBlock(text="Oslo is cold."),
    ]
    assert result.message.text == "Paris is sunny, Oslo is cold."
    assert result.finish_reason == "stop"
    assert result.metadata["raw_finish_reason"] == "completed"


def test_parsed_assistant_message_is_sent_back_the_same_way() -> None:
    message = parse_response(TOOL_TURN).message
    items = build_request([ChatMessage.user("weather?"), message], **{"model": "m"})["input"]
    assert items[1:] == [
        {
            "type": "reasoning",
            "id": "rs_0a1b",
            "summary": [
                {"type": "summary_text", "text": "The user wants weather for two cities."},
                {"type": "summary_text", "text": "Call the tool twice."},
            ],
            "encrypted_content": "gAAAAABo-encrypted-blob==",
        },
        {
            "type": "function_call",
            "call_id": "call_Paris01",
            "name": "weather",
            "arguments": '{"city": "Paris"}',
        },
        {
            "type": "function_call",
            "call_id": "call_Oslo02",
            "name": "weather",
            "arguments": '{"city": "Oslo", "units": "metric"}',
        },
    ]


def test_reasoning_without_summary_or_encrypted_content() -> None:
    body = _with(TEXT_TURN)
    body["output"].insert(0, {"id": "rs_9", "type": "reasoning", "summary": []})
    reasoning = parse_response(body).message.blocks[0]
    assert reasoning == ReasoningBlock(provider="openai-responses", id="rs_9", summary=[], text="")
    sent = build_request([ChatMessage.assistant([reasoning])], **{"model": "m"})["input"]
    assert sent == [{"type": "reasoning", "id": "rs_9", "summary": []}]


def test_reasoning_text_content_becomes_the_block_text() -> None:
    body = _with(TEXT_TURN)
    body["output"].insert(
        0,
        {
            "id": "rs_7",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "short"}],
            "content": [{"type": "reasoning_text", "text": "the full chain"}],
        },
    )
    reasoning = parse_response(body).message.blocks[0]
    assert isinstance(reasoning, ReasoningBlock)
    assert (reasoning.text, reasoning.summary) == ("the full chain", ["short"])


def test_tool_call_without_call_id_gets_a_generated_unique_id() -> None:
    body = _with(TOOL_TURN)
    for item in body["output"][1:]:
        del item["call_id"]
    calls = parse_response(body).message.tool_calls
    assert [c.name for c in calls] == ["weather", "weather"]
    for call in calls:
        assert re.fullmatch(r"call_[0-9a-f]{32}", call.id)
    assert calls[0].id != calls[1].id


def test_tool_call_with_empty_arguments_has_empty_input() -> None:
    body = _with(TOOL_TURN)
    body["output"][1]["arguments"] = ""
    assert parse_response(body).message.tool_calls[0].input == {}


def test_refusal_is_text_with_finish_reason_refusal() -> None:
    body = _with(TEXT_TURN)
    body["output"][0]["content"] = [{"type": "refusal", "refusal": "I can't help with that."}]
    result = parse_response(body)
    assert result.message.blocks == [TextBlock(text="I can't help with that.")]
    assert result.finish_reason == "refusal"
    assert result.metadata["refusal"] == "I can't help with that."
    assert result.metadata["raw_finish_reason"] == "completed"


def test_unknown_output_items_and_parts_are_kept_in_metadata() -> None:
    body = _with(TEXT_TURN)
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    audio_part = {"type": "output_audio", "transcript": "hi"}
    body["output"].append(search)
    body["output"][0]["content"].append(audio_part)
    result = parse_response(body)
    assert result.message.text == "Paris is sunny, Oslo is cold."
    assert result.metadata["unknown_blocks"] == [audio_part, search]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"city": "Paris"}', {"city": "Paris"}),
        ("", {}),
        (None, {}),
        ({"city": "Paris"}, {"city": "Paris"}),
        ("{not json", {"_raw_arguments": "{not json"}),
        ("[1, 2]", {"_raw_arguments": "[1, 2]"}),
    ],
)
def test_function_call_arguments_that_are_not_an_object_keep_the_call(
    arguments: Any, expected: dict[str, Any]
) -> None:
    body = _with(TOOL_TURN)
    body["output"][2]["arguments"] = arguments
    calls = parse_response(body).message.tool_calls
    assert [(c.id, c.input) for c in calls] == [
        ("call_Paris01", {"city": "Paris"}),
        ("call_Oslo02", expected),
    ]


# ----------------------------------------------------------------------- finish reasons


@pytest.mark.parametrize(
    ("reason", "canonical"),
    [
        ("max_output_tokens", "length"),
        ("content_filter", "content_filter"),
        ("max_messages", "max_messages"),
    ],
)
def test_incomplete_status(reason: str, canonical: str) -> None:
    body = _with(TEXT_TURN, status="incomplete", incomplete_details={"reason": reason})
    result = parse_response(body)
    assert result.finish_reason == canonical
    assert result.metadata["raw_finish_reason"] == reason
    assert result.metadata["status"] == "incomplete"


def test_incomplete_with_tool_calls_is_length_not_tool_calls() -> None:
    body = _with(TOOL_TURN, status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    assert parse_response(body).finish_reason == "length"


def test_failed_status_raises() -> None:
    body = _with(
        TEXT_TURN,
        status="failed",
        error={"code": "server_error", "message": "The model failed."},
        output=[],
    )
    with pytest.raises(ChatModelError) as info:
        parse_response(body)
    assert info.value.kind == "response_failed"
    assert info.value.retryable is True
    assert "The model failed." in info.value.message
    body["error"] = {"code": "invalid_prompt", "message": "bad"}
    with pytest.raises(ChatModelError) as info:
        parse_response(body)
    assert info.value.retryable is False


# ------------------------------------------------------------------------------- usage


def test_usage_absent_is_unknown_not_zero() -> None:
    result = parse_response(_with(TEXT_TURN, usage=...))
    assert result.usage == Usage()
    assert result.usage.is_unknown
    assert parse_response(_with(TEXT_TURN, usage=None)).usage.is_unknown


def test_usage_zero_stays_zero() -> None:
    zero = {
        "input_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 0,
    }
    assert parse_response(_with(TEXT_TURN, usage=zero)).usage == Usage(
        input_tokens=0, output_tokens=0, cache_read_tokens=0, reasoning_tokens=0, total_tokens=0
    )


def test_usage_without_details_leaves_them_unknown() -> None:
    usage = {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}
    assert parse_response(_with(TEXT_TURN, usage=usage)).usage == Usage(
        input_tokens=5, output_tokens=3, total_tokens=8
    )


def test_cache_write_tokens_when_reported() -> None:
    usage = copy.deepcopy(TOOL_TURN["usage"])
    usage["input_tokens_details"]["cache_write_tokens"] = 300
    assert parse_response(_with(TOOL_TURN, usage=usage)).usage.cache_write_tokens == 300


def test_usage_that_cannot_be_read_is_unknown_not_an_error() -> None:
    usage = {"input_tokens": "many", "output_tokens": 7, "total_tokens": 27}
    result = parse_response(_with(TEXT_TURN, usage=usage))
    assert result.message.text == "Paris is sunny, Oslo is cold."
    assert result.usage == Usage(output_tokens=7, total_tokens=27)


# ------------------------------------------------------------------------ malformed


def _bad_call(**fields: Any) -> dict[str, Any]:
    body = _with(TOOL_TURN)
    body["output"][1].update(fields)
    return body


@pytest.mark.parametrize(
    "body",
    [
        ["not", "an", "object"],
        "text",
        _with(TEXT_TURN, output=...),
        _with(TEXT_TURN, output={"type": "message"}),
        _with(TEXT_TURN, output=["message"]),
        _with(TEXT_TURN, output=[{"type": "message", "role": "assistant"}]),
        _with(TEXT_TURN, output=[{"type": "message", "content": [{"type": "output_text"}]}]),
        _bad_call(name=None),
        _bad_call(call_id="call_Oslo02"),
    ],
    ids=[
        "list",
        "string",
        "no-output",
        "output-not-list",
        "item-not-object",
        "message-without-content",
        "text-part-without-text",
        "call-without-name",
        "duplicate-call-ids",
    ],
)
def test_malformed_bodies_raise_malformed_response(body: Any) -> None:
    with pytest.raises(ChatModelError) as info:
        parse_response(body)
    assert info.value.kind == "malformed_response"
    assert info.value.retryable is False


# ------------------------------------------------------------------ request options


def test_encrypted_reasoning_implies_store_false_unless_store_given() -> None:
    messages = [ChatMessage.user("hi")]
    plain = build_request(messages, **{"model": "m", "encrypted_reasoning": True})
    assert (plain["include"], plain["store"]) == (["reasoning.encrypted_content"], False)
    stored = build_request(messages, **{"model": "m", "encrypted_reasoning": True, "store": True})
    assert stored["store"] is True
    merged = build_request(
        messages,
        **{
            "model": "m",
            "encrypted_reasoning": True,
            "include": ["message.output_text.logprobs"],
        },
    )
    assert merged["include"] == ["message.output_text.logprobs", "reasoning.encrypted_content"]
    off = build_request(messages, **{"model": "m", "encrypted_reasoning": False})
    assert "include" not in off and "store" not in off and "encrypted_reasoning" not in off


def test_none_options_are_not_sent_and_reasoning_dict_merges() -> None:
    body = build_request(
        [ChatMessage.user("hi")],
        **{
            "model": "m",
            "temperature": None,
            "reasoning": {"summary": "concise"},
            "reasoning_effort": "high",
        },
    )
    assert body == {
        "model": "m",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
        ],
        "reasoning": {"summary": "concise", "effort": "high"},
    }


@pytest.mark.parametrize("key", ["input", "tools", "stream"])
def test_reserved_params_raise(key: str) -> None:
    # ``tools`` is build_request's own argument: a second one is a TypeError.
    with pytest.raises((ValueError, TypeError), match=key):
        build_request([ChatMessage.user("hi")], None, **{"model": "m", key: True})


def test_tool_choice_dict_passes_through() -> None:
    choice = {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "a"}]}
    body = build_request([ChatMessage.user("hi")], **{"model": "m", "tool_choice": choice})
    assert body["tool_choice"] == choice
