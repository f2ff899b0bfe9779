"""Pure conversions of the Anthropic adapter: options, and recorded responses -> ChatResult.

Responses are parsed as the SDK hands them over (`sdk_responses.anthropic_message`)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from flink_agents.api import (
    ChatMessage,
    ChatModelError,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolMetadata,
    Usage,
)
from flink_agents.api.chat_result import ChatResult
from flink_agents.integrations.chat_models.anthropic._messages_api import (
    build_request,
    parse_response,
)
from tests.integrations.chat_models.sdk_responses import anthropic_message

HELLO = [ChatMessage.user("hello")]


def parse(body: Any) -> ChatResult:
    """`parse_response` of what the SDK makes of ``body``."""
    return parse_response(anthropic_message(body))


def _response(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "msg_01ABC",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "Hello!"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 5},
    }
    body.update(overrides)
    return body


# ------------------------------------------------------------------------ options


def test_model_is_required() -> None:
    with pytest.raises(ValueError, match="needs a model name"):
        build_request(HELLO)
    with pytest.raises(ValueError, match="needs a model name"):
        build_request(HELLO, model="")


def test_minimal_request_defaults_max_tokens() -> None:
    assert build_request(HELLO, model="m") == {
        "model": "m",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("any", {"type": "any"}),
        ("none", {"type": "none"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
        (
            {"type": "auto", "disable_parallel_tool_use": True},
            {"type": "auto", "disable_parallel_tool_use": True},
        ),
    ],
)
def test_tool_choice(choice: Any, wire: dict[str, Any]) -> None:
    request = build_request(HELLO, model="m", tool_choice=choice)
    assert request["tool_choice"] == wire


@pytest.mark.parametrize("bad", ["", 3, ["auto"]])
def test_bad_tool_choice_raises(bad: Any) -> None:
    with pytest.raises(ValueError, match="tool_choice"):
        build_request(HELLO, model="m", tool_choice=bad)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"max_tokens": -1}, "max_tokens"),
        ({"max_tokens": "10"}, "max_tokens"),
        ({"thinking_budget_tokens": 0}, "thinking_budget_tokens"),
        ({"thinking_budget_tokens": 2048, "thinking": {"type": "adaptive"}}, "not both"),
        ({"stream": True}, "streaming"),
    ],
)
def test_bad_options_raise(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_request(HELLO, model="m", **params)


def test_a_passthrough_field_the_adapter_sets_raises() -> None:
    messages = [ChatMessage.system("be brief"), *HELLO]
    with pytest.raises(ValueError, match="'system' conflicts"):
        build_request(messages, model="m", system="be long")


def test_none_options_are_left_out_and_stop_sequence_string_becomes_a_list() -> None:
    request = build_request(HELLO, model="m", temperature=None, top_k=None, stop_sequences="END")
    assert request == {
        "model": "m",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
        "stop_sequences": ["END"],
    }


def test_tools_from_metadata() -> None:
    tool = ToolMetadata(
        name="get_weather",
        description="Weather for a city",
        args_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    assert build_request(HELLO, [tool], model="m")["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]


def test_empty_texts_are_not_sent() -> None:
    messages = [
        ChatMessage.system(""),
        ChatMessage.user([TextBlock(text=""), TextBlock(text="hi")]),
        ChatMessage.assistant(
            [TextBlock(text="")], tool_calls=[ToolCallBlock(id="t1", name="f", input={"a": 1})]
        ),
    ]
    assert build_request(messages, model="m")["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}],
        },
    ]
    assert "system" not in build_request(messages, model="m")


def test_anthropic_thinking_without_signature_is_not_replayed() -> None:
    messages = [
        ChatMessage.user("q"),
        ChatMessage.assistant(
            [ReasoningBlock(text="unsigned", provider="anthropic"), TextBlock(text="a")]
        ),
    ]
    assert build_request(messages, model="m")["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}],
    }


# ----------------------------------------------------------------------- response


def test_text_response() -> None:
    result = parse(_response())
    assert result.message == ChatMessage.assistant("Hello!")
    assert result.model == "claude-sonnet-4-5-20250929"
    assert result.response_id == "msg_01ABC"
    assert result.finish_reason == "stop"
    assert result.metadata == {"raw_finish_reason": "end_turn"}
    assert result.usage == Usage(input_tokens=12, output_tokens=5, total_tokens=17)


def test_tool_use_and_thinking_response() -> None:
    body = _response(
        content=[
            {"type": "thinking", "thinking": "I should check the weather.", "signature": "sig=="},
            {"type": "redacted_thinking", "data": "EncryptedBlob=="},
            {"type": "text", "text": "Let me look."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
            {"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {}},
        ],
        stop_reason="tool_use",
    )

    result = parse(body)

    assert result.message.blocks == [
        ReasoningBlock(text="I should check the weather.", signature="sig==", provider="anthropic"),
        ReasoningBlock(redacted_data="EncryptedBlob==", provider="anthropic"),
        TextBlock(text="Let me look."),
        ToolCallBlock(id="toolu_01", name="get_weather", input={"city": "Paris"}),
        ToolCallBlock(id="toolu_02", name="get_time", input={}),
    ]
    assert result.finish_reason == "tool_calls"
    assert result.metadata["raw_finish_reason"] == "tool_use"


def test_tool_use_without_id_gets_a_generated_one() -> None:
    body = _response(content=[{"type": "tool_use", "name": "f", "input": {}}])
    (call,) = parse(body).message.tool_calls
    assert re.fullmatch(r"call_[0-9a-f]{32}", call.id)


def test_unknown_content_blocks_are_kept_in_metadata() -> None:
    server_block = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}
    body = _response(content=[{"type": "text", "text": "x"}, server_block])
    result = parse(body)
    assert result.message.blocks == [TextBlock(text="x")]
    assert result.metadata["unknown_blocks"] == [server_block]


@pytest.mark.parametrize(
    ("call_input", "expected"),
    [
        ({"city": "Paris"}, {"city": "Paris"}),
        (None, {}),
        ('{"city": "Paris"}', {"city": "Paris"}),
        ('{"city": ', {"_raw_arguments": '{"city": '}),
        ("[1, 2]", {"_raw_arguments": "[1, 2]"}),
        (7, {"_raw_arguments": "7"}),
    ],
)
def test_tool_use_input_that_is_not_an_object_keeps_the_call(
    call_input: Any, expected: dict[str, Any]
) -> None:
    block: dict[str, Any] = {"type": "tool_use", "id": "t", "name": "f"}
    if call_input is not None:
        block["input"] = call_input
    (call,) = parse(_response(content=[block])).message.tool_calls
    assert (call.id, call.name, call.input) == ("t", "f", expected)


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "refusal"),
        ("model_context_window_exceeded", "model_context_window_exceeded"),
        ("pause_turn", "pause_turn"),
        (None, None),
    ],
)
def test_finish_reasons(raw: str | None, canonical: str | None) -> None:
    result = parse(_response(stop_reason=raw))
    assert result.finish_reason == canonical
    assert result.metadata["raw_finish_reason"] == raw


def test_stop_sequence_and_details_are_kept() -> None:
    result = parse(
        _response(
            stop_reason="stop_sequence",
            stop_sequence="END",
            stop_details={"type": "refusal", "category": None},
        )
    )
    assert result.metadata == {
        "raw_finish_reason": "stop_sequence",
        "stop_sequence": "END",
        "stop_details": {"type": "refusal", "category": None},
    }


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param(
            {
                "input_tokens": 100,
                "output_tokens": 50,
                "cache_read_input_tokens": 30,
                "cache_creation_input_tokens": 20,
                "output_tokens_details": {"thinking_tokens": 40},
            },
            Usage(
                input_tokens=100,
                output_tokens=50,
                cache_read_tokens=30,
                cache_write_tokens=20,
                reasoning_tokens=40,
                total_tokens=200,
            ),
            id="full",
        ),
        pytest.param(
            {
                "input_tokens": 0,
                "output_tokens": 0,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
            Usage(
                input_tokens=0,
                output_tokens=0,
                cache_read_tokens=0,
                cache_write_tokens=0,
                total_tokens=0,
            ),
            id="zero-stays-zero",
        ),
        pytest.param(
            {"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": None},
            Usage(input_tokens=7, output_tokens=3, total_tokens=10),
            id="cache-null",
        ),
        pytest.param({"output_tokens": 3}, Usage(output_tokens=3), id="input-missing-no-total"),
        pytest.param(None, Usage(), id="usage-null"),
    ],
)
def test_usage(usage: Any, expected: Usage) -> None:
    assert parse(_response(usage=usage)).usage == expected


def test_usage_absent_is_unknown() -> None:
    body = _response()
    del body["usage"]
    usage = parse(body).usage
    assert usage == Usage()
    assert usage.is_unknown


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(["not", "an", "object"], id="list"),
        pytest.param({"id": "msg", "model": "m"}, id="no-content"),
        pytest.param(_response(content="Hello"), id="content-string"),
        pytest.param(_response(content=["Hello"]), id="content-entry-not-object"),
        pytest.param(_response(content=[{"type": "text"}]), id="text-missing"),
        pytest.param(_response(content=[{"type": "thinking", "thinking": "x"}]), id="no-signature"),
        pytest.param(_response(content=[{"type": "redacted_thinking"}]), id="no-redacted-data"),
        pytest.param(
            _response(
                content=[
                    {"type": "tool_use", "id": "t", "name": "f", "input": {}},
                    {"type": "tool_use", "id": "t", "name": "g", "input": {}},
                ]
            ),
            id="duplicate-tool-ids",
        ),
        pytest.param(_response(content=[{"type": "tool_use", "id": "t"}]), id="tool-no-name"),
        pytest.param(_response(stop_reason=3), id="stop-reason-number"),
    ],
)
def test_malformed_responses(body: Any) -> None:
    with pytest.raises(ChatModelError) as caught:
        parse(body)
    assert caught.value.kind == "malformed_response"
    assert caught.value.retryable is False
    assert caught.value.provider == "anthropic"


def test_service_tier_is_kept_in_metadata() -> None:
    usage = {"input_tokens": 1, "output_tokens": 1, "service_tier": "priority"}
    result = parse(_response(usage=usage))
    assert result.metadata == {"raw_finish_reason": "end_turn", "service_tier": "priority"}
    assert result.usage.total_tokens == 2
