"""Chat Completions response JSON -> `ChatResult` (pure function, recorded responses).

Responses are parsed as the SDK hands them over (`sdk_responses.chat_completion`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from flink_agents.api.chat_result import ChatResult, Usage
from flink_agents.api.content_blocks import ReasoningBlock, TextBlock, ToolCallBlock
from flink_agents.api.errors import ChatModelError
from flink_agents.integrations.chat_models.openai._chat_completions_api import parse_response
from tests.integrations.chat_models.sdk_responses import chat_completion


def parse_chat_completion(body: Any) -> ChatResult:
    """`parse_response` of what the SDK makes of ``body``."""
    return parse_response(chat_completion(body))


# A response as OpenAI sends it (tool calls, usage with details).
TOOL_CALL_RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-abc123",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-4.1-mini-2025-04-14",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {
                        "id": "call_Wx1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_Wx2",
                        "type": "function",
                        "function": {"name": "now", "arguments": ""},
                    },
                ],
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 82,
        "completion_tokens": 17,
        "total_tokens": 99,
        "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 5, "audio_tokens": 0},
    },
    "service_tier": "default",
    "system_fingerprint": "fp_abc",
}

# A response as vLLM sends it with a reasoning parser on.
VLLM_REASONING_RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-vllm-1",
    "object": "chat.completion",
    "created": 1767225601,
    "model": "Qwen/Qwen3-8B",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "reasoning_content": "The user greets me.",
                "content": "Hello!",
                "tool_calls": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
            "stop_reason": None,
        }
    ],
    "usage": {"prompt_tokens": 10, "total_tokens": 25, "completion_tokens": 15},
}


def with_message(**message: Any) -> dict[str, Any]:
    body = copy.deepcopy(VLLM_REASONING_RESPONSE)
    body["choices"][0]["message"] = {"role": "assistant", **message}
    return body


def test_tool_calls_usage_and_metadata() -> None:
    result = parse_chat_completion(TOOL_CALL_RESPONSE)
    assert result.message.blocks == [
        ToolCallBlock(id="call_Wx1", name="weather", input={"city": "Paris"}),
        ToolCallBlock(id="call_Wx2", name="now", input={}),
    ]
    assert result.model == "gpt-4.1-mini-2025-04-14"
    assert result.response_id == "chatcmpl-abc123"
    assert result.finish_reason == "tool_calls"
    assert result.usage == Usage(
        input_tokens=82,
        output_tokens=17,
        total_tokens=99,
        cache_read_tokens=64,
        reasoning_tokens=5,
    )
    assert result.metadata == {
        "raw_finish_reason": "tool_calls",
        "system_fingerprint": "fp_abc",
        "service_tier": "default",
        "created": 1767225600,
    }


def test_vllm_reasoning_content_comes_first() -> None:
    result = parse_chat_completion(VLLM_REASONING_RESPONSE)
    assert result.message.blocks == [
        ReasoningBlock(text="The user greets me.", provider="openai-chat"),
        TextBlock(text="Hello!"),
    ]
    assert result.finish_reason == "stop"
    assert result.usage == Usage(input_tokens=10, output_tokens=15, total_tokens=25)


def test_reasoning_field_of_other_servers() -> None:
    result = parse_chat_completion(with_message(content="4", reasoning="2+2"))
    assert result.message.blocks == [
        ReasoningBlock(text="2+2", provider="openai-chat"),
        TextBlock(text="4"),
    ]
    result = parse_chat_completion(with_message(content="4", reasoning_content="", reasoning=None))
    assert result.message.blocks == [TextBlock(text="4")]


def test_refusal_becomes_text_and_finish_refusal() -> None:
    body = copy.deepcopy(TOOL_CALL_RESPONSE)
    body["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that.",
    }
    body["choices"][0]["finish_reason"] = "stop"
    result = parse_chat_completion(body)
    assert result.message.blocks == [TextBlock(text="I can't help with that.")]
    assert result.finish_reason == "refusal"
    assert result.metadata["raw_finish_reason"] == "stop"
    assert result.metadata["refusal"] == "I can't help with that."


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool_calls"),
        ("content_filter", "content_filter"),
        ("function_call", "tool_calls"),
        ("abort", "abort"),
        (None, None),
    ],
)
def test_finish_reasons(raw: str | None, canonical: str | None) -> None:
    body = with_message(content="x")
    body["choices"][0]["finish_reason"] = raw
    result = parse_chat_completion(body)
    assert result.finish_reason == canonical
    assert result.metadata["raw_finish_reason"] == raw


def test_tool_call_ids_are_generated_when_missing_or_empty() -> None:
    body = with_message(
        content=None,
        tool_calls=[
            {"type": "function", "function": {"name": "a", "arguments": "{}"}},
            {"id": "", "type": "function", "function": {"name": "b", "arguments": "{}"}},
            {"id": None, "function": {"name": "c", "arguments": "{}"}},
        ],
    )
    calls = parse_chat_completion(body).message.tool_calls
    assert [c.name for c in calls] == ["a", "b", "c"]
    ids = [c.id for c in calls]
    assert all(i.startswith("call_") and len(i) == len("call_") + 32 for i in ids)
    assert len(set(ids)) == 3


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": [1, 2]}', {"a": [1, 2]}),
        ({"a": 1}, {"a": 1}),
        ("", {}),
        ("   ", {}),
        (None, {}),
        ('{"a": 1', {"_raw_arguments": '{"a": 1'}),
        ("[1, 2]", {"_raw_arguments": "[1, 2]"}),
        ('"text"', {"_raw_arguments": '"text"'}),
        (3, {"_raw_arguments": "3"}),
    ],
)
def test_tool_call_arguments(arguments: Any, expected: dict[str, Any]) -> None:
    body = with_message(
        content=None,
        tool_calls=[
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        ],
    )
    assert parse_chat_completion(body).message.tool_calls[0].input == expected


def test_legacy_function_call() -> None:
    body = with_message(content=None, function_call={"name": "f", "arguments": '{"x": 1}'})
    body["choices"][0]["finish_reason"] = "function_call"
    result = parse_chat_completion(body)
    [call] = result.message.tool_calls
    assert (call.name, call.input) == ("f", {"x": 1})
    assert call.id.startswith("call_")
    assert result.finish_reason == "tool_calls"


def test_text_with_tool_calls_keeps_order_text_first() -> None:
    body = with_message(
        content="Let me check.",
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    )
    assert parse_chat_completion(body).message.blocks == [
        TextBlock(text="Let me check."),
        ToolCallBlock(id="c1", name="f"),
    ]


def test_content_as_text_parts() -> None:
    body = with_message(content=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    assert parse_chat_completion(body).message.blocks == [TextBlock(text="a"), TextBlock(text="b")]


def test_empty_message() -> None:
    result = parse_chat_completion(with_message(content=""))
    assert result.message.blocks == []


# -------------------------------------------------------------------------------- usage


def test_usage_absent_is_unknown() -> None:
    body = with_message(content="x")
    del body["usage"]
    assert parse_chat_completion(body).usage == Usage()
    body["usage"] = None
    assert parse_chat_completion(body).usage.is_unknown


def test_usage_zero_stays_zero() -> None:
    body = with_message(content="x")
    body["usage"] = {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
        "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    assert parse_chat_completion(body).usage == Usage(
        input_tokens=0,
        output_tokens=0,
        total_tokens=0,
        cache_read_tokens=0,
        cache_write_tokens=0,
        reasoning_tokens=0,
    )


def test_usage_details_null() -> None:
    body = with_message(content="x")
    body["usage"] = {
        "prompt_tokens": 3,
        "completion_tokens": 4,
        "total_tokens": 7,
        "prompt_tokens_details": None,
        "completion_tokens_details": None,
    }
    assert parse_chat_completion(body).usage == Usage(
        input_tokens=3, output_tokens=4, total_tokens=7
    )


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param(5, Usage(), id="not-an-object"),
        pytest.param({"prompt_tokens": "5"}, Usage(), id="count-a-string"),
        pytest.param(
            {"prompt_tokens": 1, "completion_tokens": 2, "prompt_tokens_details": []},
            Usage(input_tokens=1, output_tokens=2, total_tokens=3),
            id="details-a-list-total-computed",
        ),
    ],
)
def test_usage_that_cannot_be_read_is_unknown_not_an_error(usage: Any, expected: Usage) -> None:
    body = with_message(content="x")
    body["usage"] = usage
    result = parse_chat_completion(body)
    assert result.message.text == "x"
    assert result.usage == expected


# ---------------------------------------------------------------------------- malformed


@pytest.mark.parametrize(
    "body",
    [
        [],
        "text",
        {},
        {"choices": []},
        {"choices": "x"},
        {"choices": [{"index": 0}]},
        {"choices": [{"message": "hi"}]},
        {"error": {"message": "overloaded"}},
        {"choices": [{"message": {"content": 5}}]},
        {"choices": [{"message": {"content": ["text"]}}]},
        {"choices": [{"message": {"content": [{"type": "text", "text": 5}]}}]},
        {"choices": [{"message": {"content": "x", "refusal": 3}}]},
        {"choices": [{"message": {"tool_calls": "x"}}]},
        {"choices": [{"message": {"tool_calls": [{"id": "c", "type": "function"}]}}]},
        {"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"name": ""}}]}}]},
        {
            "choices": [
                {
                    "message": {
                        "tool_calls": [
                            {"id": "c", "function": {"name": "a"}},
                            {"id": "c", "function": {"name": "b"}},
                        ]
                    }
                }
            ]
        },
        {"choices": [{"message": {"content": "x"}, "finish_reason": 1}]},
    ],
)
def test_malformed_bodies_raise_chat_model_error(body: Any) -> None:
    with pytest.raises(ChatModelError) as info:
        parse_chat_completion(body)
    assert info.value.kind == "malformed_response"
    assert info.value.retryable is False
    assert info.value.provider == "openai-chat"


def test_error_body_message_is_kept() -> None:
    with pytest.raises(ChatModelError, match="overloaded"):
        parse_chat_completion({"error": {"message": "overloaded"}})
