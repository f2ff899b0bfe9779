"""Typed messages -> Chat Completions request JSON (pure functions, exact JSON)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from flink_agents.api.content_blocks import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from flink_agents.api.errors import UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.openai._chat_completions_api import (
    ASSISTANT_MEDIA_REASON,
    AUDIO_FORMAT_REASON,
    AUDIO_URL_REASON,
    DOCUMENT_TYPE_REASON,
    DOCUMENT_URL_REASON,
    REDACTED_MEDIA_REASON,
    TOOL_MEDIA_ERROR_REASON,
    VIDEO_REASON,
    build_request,
)

PNG_B64 = "iVBORw0KGgo="
PDF_B64 = "JVBERi0xLjQK"
WAV_B64 = "UklGRiQAAABXQVZF"
MP3_B64 = "SUQzBAAAAAAA"

Media = ImageBlock | AudioBlock | VideoBlock | DocumentBlock


def request(messages: list[ChatMessage], **params: Any) -> dict[str, Any]:
    params.setdefault("model", "gpt-test")
    return build_request(messages, **params)


def wire_messages(messages: list[ChatMessage], **params: Any) -> list[dict[str, Any]]:
    return request(messages, **params)["messages"]


def tool_call(call_id: str = "call_1", name: str = "lookup", **args: Any) -> ChatMessage:
    return ChatMessage.assistant(tool_calls=[ToolCallBlock(id=call_id, name=name, input=args)])


# Blocks this API refuses in user messages and in tool results, with the reason.
UNSUPPORTED: list[tuple[str, Media, str]] = [
    ("video_base64", VideoBlock(mime_type="video/mp4", data="AAAA"), VIDEO_REASON),
    ("video_url", VideoBlock(mime_type="video/mp4", url="https://x.test/v.mp4"), VIDEO_REASON),
    ("audio_url", AudioBlock(mime_type="audio/wav", url="https://x.test/a.wav"), AUDIO_URL_REASON),
    ("audio_ogg", AudioBlock(mime_type="audio/ogg", data="AAAA"), AUDIO_FORMAT_REASON),
    (
        "pdf_url",
        DocumentBlock(mime_type="application/pdf", url="https://x.test/r.pdf"),
        DOCUMENT_URL_REASON,
    ),
    ("text_plain", DocumentBlock(mime_type="text/plain", data="aGk="), DOCUMENT_TYPE_REASON),
    (
        "docx",
        DocumentBlock(
            mime_type="application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            data="UEsDBA==",
        ),
        DOCUMENT_TYPE_REASON,
    ),
    (
        "octet_stream",
        DocumentBlock(mime_type="application/octet-stream", data="AAEC"),
        DOCUMENT_TYPE_REASON,
    ),
]
UNSUPPORTED += [
    (f"redacted_{block.type}", cast(Media, block.redact()), REDACTED_MEDIA_REASON)
    for block in (
        ImageBlock(mime_type="image/png", data=PNG_B64),
        AudioBlock(mime_type="audio/wav", data=WAV_B64),
        DocumentBlock(mime_type="application/pdf", data=PDF_B64),
    )
]
UNSUPPORTED_IDS = [case[0] for case in UNSUPPORTED]


# ------------------------------------------------------------------ system and user


def test_system_and_text_only_user_are_strings() -> None:
    assert request([ChatMessage.system("Be brief."), ChatMessage.user("Hi")]) == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
    }


def test_user_with_two_text_blocks_is_a_part_list() -> None:
    message = ChatMessage.user([TextBlock(text="a"), TextBlock(text="b")])
    assert wire_messages([message]) == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        }
    ]


def test_user_media_parts_in_order() -> None:
    message = ChatMessage.user(
        [
            TextBlock(text="Look:"),
            ImageBlock(mime_type="image/png", data=PNG_B64),
            ImageBlock(mime_type="image/jpeg", url="https://x.test/cat.jpg"),
            AudioBlock(mime_type="audio/wav", data=WAV_B64),
            AudioBlock(mime_type="audio/mpeg", data=MP3_B64),
            DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="report.pdf"),
            DocumentBlock(mime_type="application/pdf", data=PDF_B64),
        ]
    )
    assert wire_messages([message]) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
                {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}},
                {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}},
                {"type": "input_audio", "input_audio": {"data": MP3_B64, "format": "mp3"}},
                {
                    "type": "file",
                    "file": {
                        "file_data": f"data:application/pdf;base64,{PDF_B64}",
                        "filename": "report.pdf",
                    },
                },
                {
                    "type": "file",
                    "file": {
                        "file_data": f"data:application/pdf;base64,{PDF_B64}",
                        "filename": "document.pdf",
                    },
                },
            ],
        }
    ]


def test_data_uri_urls_are_sent_as_base64_for_audio_and_pdf() -> None:
    message = ChatMessage.user(
        [
            AudioBlock(mime_type="audio/wav", url=f"data:audio/wav;base64,{WAV_B64}"),
            DocumentBlock(
                mime_type="application/pdf", url=f"data:application/pdf;base64,{PDF_B64}"
            ),
            ImageBlock(mime_type="image/png", url=f"data:image/png;base64,{PNG_B64}"),
        ]
    )
    assert wire_messages([message])[0]["content"] == [
        {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}},
        {
            "type": "file",
            "file": {
                "file_data": f"data:application/pdf;base64,{PDF_B64}",
                "filename": "document.pdf",
            },
        },
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
    ]


@pytest.mark.parametrize(("case", "block", "reason"), UNSUPPORTED, ids=UNSUPPORTED_IDS)
def test_unsupported_user_media_raise(case: str, block: Media, reason: str) -> None:
    message = ChatMessage.user([TextBlock(text="see"), block])
    with pytest.raises(UnsupportedContentBlockError) as info:
        request([message])
    assert info.value.block_type == block.type
    assert info.value.reason == reason
    assert info.value.provider == "openai-chat"
    assert "x.test" not in str(info.value) and "AAAA" not in str(info.value)


# ------------------------------------------------------------------------ assistant


def test_assistant_text_and_tool_calls() -> None:
    message = ChatMessage.assistant(
        "Checking.",
        [
            ToolCallBlock(id="call_a", name="weather", input={"city": "Zürich", "days": 2}),
            ToolCallBlock(id="call_b", name="time", input={}),
        ],
    )
    assert wire_messages([message]) == [
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Zürich", "days": 2}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "time", "arguments": "{}"},
                },
            ],
        }
    ]


def test_assistant_tool_calls_without_text_have_null_content() -> None:
    for message in (tool_call(q="x"), ChatMessage.assistant("", [ToolCallBlock(id="c", name="n")])):
        assert wire_messages([message])[0]["content"] is None


def test_assistant_text_only_and_empty() -> None:
    assert wire_messages([ChatMessage.assistant("Hello")]) == [
        {"role": "assistant", "content": "Hello"}
    ]
    assert wire_messages([ChatMessage.assistant()]) == [{"role": "assistant", "content": ""}]


def test_reasoning_is_never_replayed() -> None:
    message = ChatMessage.assistant(
        [
            ReasoningBlock(text="mine", provider="openai-chat"),
            ReasoningBlock(text="theirs", provider="anthropic", signature="sig"),
            ReasoningBlock(encrypted_content="enc", provider="openai-responses"),
            TextBlock(text="Answer"),
        ]
    )
    assert wire_messages([message]) == [{"role": "assistant", "content": "Answer"}]


def test_raw_arguments_go_back_verbatim() -> None:
    message = ChatMessage.assistant(
        tool_calls=[ToolCallBlock(id="c1", name="f", input={"_raw_arguments": '{"a": 1'})]
    )
    call = wire_messages([message])[0]["tool_calls"][0]
    assert call["function"]["arguments"] == '{"a": 1'


@pytest.mark.parametrize(
    "block",
    [
        ImageBlock(mime_type="image/png", data=PNG_B64),
        AudioBlock(mime_type="audio/wav", data=WAV_B64),
        VideoBlock(mime_type="video/mp4", url="https://x.test/v.mp4"),
        DocumentBlock(mime_type="application/pdf", data=PDF_B64),
    ],
    ids=["image", "audio", "video", "document"],
)
def test_media_in_assistant_raise_with_role_reason(block: Media) -> None:
    message = ChatMessage.assistant([TextBlock(text="here"), block])
    with pytest.raises(UnsupportedContentBlockError) as info:
        request([message])
    assert info.value.reason == (
        "only user messages and tool results can carry media, not assistant messages"
    )
    assert info.value.reason == ASSISTANT_MEDIA_REASON
    assert info.value.block_type == block.type


# ----------------------------------------------------------------------- tool results


def test_text_only_tool_results() -> None:
    messages = [
        ChatMessage.user("q"),
        ChatMessage.assistant(
            tool_calls=[
                ToolCallBlock(id="call_1", name="a"),
                ToolCallBlock(id="call_2", name="b"),
                ToolCallBlock(id="call_3", name="c"),
            ]
        ),
        ChatMessage.tool_result(
            ToolResultBlock(call_id="call_1", content=[TextBlock(text="x"), TextBlock(text="y")])
        ),
        ChatMessage.tool_result(ToolResultBlock(call_id="call_2")),
        ChatMessage.tool_result(
            ToolResultBlock(call_id="call_3", content=[TextBlock(text="boom")], is_error=True)
        ),
    ]
    assert wire_messages(messages)[2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "xy"},
        {"role": "tool", "tool_call_id": "call_2", "content": ""},
        {"role": "tool", "tool_call_id": "call_3", "content": "Error: boom"},
    ]


def test_empty_error_result_says_error() -> None:
    messages = [
        tool_call(),
        ChatMessage.tool_result(ToolResultBlock(call_id="call_1", is_error=True)),
    ]
    assert wire_messages(messages)[1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Error",
    }


def test_tool_media_go_to_one_user_message_after_the_tool_run() -> None:
    messages = [
        ChatMessage.user("Show me."),
        ChatMessage.assistant(
            tool_calls=[
                ToolCallBlock(id="call_1", name="screenshot"),
                ToolCallBlock(id="call_2", name="plain"),
                ToolCallBlock(id="call_3", name="fetch"),
            ]
        ),
        ChatMessage.tool_result(
            ToolResultBlock(
                call_id="call_1",
                content=[
                    TextBlock(text="Here it is."),
                    ImageBlock(mime_type="image/png", data=PNG_B64),
                    DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="report.pdf"),
                ],
            )
        ),
        ChatMessage.tool_result(ToolResultBlock(call_id="call_2", content=[TextBlock(text="ok")])),
        ChatMessage.tool_result(
            ToolResultBlock(
                call_id="call_3",
                content=[
                    ImageBlock(mime_type="image/jpeg", url="https://x.test/cat.jpg"),
                    AudioBlock(mime_type="audio/mpeg", data=MP3_B64),
                ],
                is_error=True,
            )
        ),
        ChatMessage.assistant("Seen."),
    ]
    assert wire_messages(messages)[2:] == [
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "Here it is.\n"
            "[attached below: image 1 (image/png), document 2 (application/pdf, report.pdf)]",
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "ok"},
        {
            "role": "tool",
            "tool_call_id": "call_3",
            "content": "Error: [attached below: image 1 (image/jpeg), audio 2 (audio/mpeg)]",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "image 1 from tool call call_1:"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
                {"type": "text", "text": "document 2 from tool call call_1:"},
                {
                    "type": "file",
                    "file": {
                        "file_data": f"data:application/pdf;base64,{PDF_B64}",
                        "filename": "report.pdf",
                    },
                },
                {"type": "text", "text": "image 1 from tool call call_3:"},
                {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}},
                {"type": "text", "text": "audio 2 from tool call call_3:"},
                {"type": "input_audio", "input_audio": {"data": MP3_B64, "format": "mp3"}},
            ],
        },
        {"role": "assistant", "content": "Seen."},
    ]


def test_each_tool_run_gets_its_own_user_message() -> None:
    image = ImageBlock(mime_type="image/png", data=PNG_B64)
    messages = [
        tool_call("call_1"),
        ChatMessage.tool_result(ToolResultBlock(call_id="call_1", content=[image])),
        ChatMessage.user("and now?"),
        tool_call("call_2"),
        ChatMessage.tool_result(ToolResultBlock(call_id="call_2", content=[image])),
    ]
    wire = wire_messages(messages)
    assert [m["role"] for m in wire] == [
        "assistant",
        "tool",
        "user",
        "user",
        "assistant",
        "tool",
        "user",
    ]
    assert wire[1]["content"] == "[attached below: image 1 (image/png)]"
    assert wire[2]["content"][0] == {"type": "text", "text": "image 1 from tool call call_1:"}
    assert wire[3] == {"role": "user", "content": "and now?"}
    assert wire[6]["content"][0] == {"type": "text", "text": "image 1 from tool call call_2:"}
    assert len(wire[6]["content"]) == 2


@pytest.mark.parametrize(("case", "block", "reason"), UNSUPPORTED, ids=UNSUPPORTED_IDS)
def test_unsupported_tool_media_raise_like_in_user_messages(
    case: str, block: Media, reason: str
) -> None:
    with pytest.raises(UnsupportedContentBlockError) as in_user:
        request([ChatMessage.user([TextBlock(text="see"), block])])
    messages = [
        tool_call(),
        ChatMessage.tool_result(
            ToolResultBlock(call_id="call_1", content=[TextBlock(text="see"), block])
        ),
    ]
    with pytest.raises(UnsupportedContentBlockError) as in_tool:
        request(messages)
    assert in_tool.value.reason == reason
    assert str(in_tool.value) == str(in_user.value)


@pytest.mark.parametrize(
    "block",
    [
        ImageBlock(mime_type="image/png", data=PNG_B64),
        DocumentBlock(mime_type="application/pdf", data=PDF_B64),
        AudioBlock(mime_type="audio/wav", data=WAV_B64),
        VideoBlock(mime_type="video/mp4", data="AAAA"),
    ],
    ids=["image", "pdf", "audio", "video"],
)
def test_tool_media_error_mode_raises(block: Media) -> None:
    messages = [
        tool_call(),
        ChatMessage.tool_result(ToolResultBlock(call_id="call_1", content=[block])),
    ]
    with pytest.raises(UnsupportedContentBlockError) as info:
        request(messages, tool_media="error")
    assert info.value.block_type == block.type
    assert info.value.reason == TOOL_MEDIA_ERROR_REASON


def test_tool_media_error_mode_keeps_text_results() -> None:
    messages = [
        tool_call(),
        ChatMessage.tool_result(ToolResultBlock(call_id="call_1", content=[TextBlock(text="t")])),
    ]
    assert wire_messages(messages, tool_media="error")[1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "t",
    }


# ----------------------------------------------------------------- tools and options


def test_tools_and_options() -> None:
    tools = [
        ToolMetadata(
            name="weather",
            description="Weather for a city.",
            args_schema={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        ),
        ToolMetadata(name="now"),
    ]
    body = build_request(
        [ChatMessage.user("hi")],
        tools,
        model="gpt-test",
        max_tokens=50,
        temperature=0.2,
        tool_choice="required",
        response_format={"type": "json_object"},
        seed=7,
        top_k=40,
        top_p=None,
    )
    assert body == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Weather for a city.",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            },
            {
                "type": "function",
                "function": {"name": "now", "parameters": {"type": "object", "properties": {}}},
            },
        ],
        "max_tokens": 50,
        "temperature": 0.2,
        "tool_choice": "required",
        "response_format": {"type": "json_object"},
        "seed": 7,
        "top_k": 40,
    }


def test_max_tokens_param_and_tool_choice_forms() -> None:
    body = request(
        [ChatMessage.user("hi")],
        max_tokens=9,
        max_tokens_param="max_completion_tokens",
        tool_choice="weather",
    )
    assert body["max_completion_tokens"] == 9
    assert "max_tokens" not in body and "max_tokens_param" not in body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    named = {"type": "function", "function": {"name": "x"}}
    assert request([ChatMessage.user("hi")], tool_choice=named)["tool_choice"] == named
    assert request([ChatMessage.user("hi")], tool_choice="none")["tool_choice"] == "none"
    assert "tools" not in request([ChatMessage.user("hi")], tools=[])
    assert "tool_media" not in request([ChatMessage.user("hi")], tool_media="error")


@pytest.mark.parametrize(
    "params",
    [
        {"model": None},
        {"model": ""},
        {"tool_media": "drop"},
        {"max_tokens_param": "max_output_tokens"},
        {"stream": True},
    ],
)
def test_bad_options_raise_value_error(params: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        request([ChatMessage.user("hi")], **params)
