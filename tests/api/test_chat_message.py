"""The message model: role matrix, conveniences, serialization, sanitizing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from flink_agents.api import (
    AudioBlock,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    UnsupportedContentBlockError,
    VideoBlock,
)
from flink_agents.api import chat_message as chat_message_module

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
SECRET_URL = "https://example.com/secret-image.png?token=abc123"

TEXT = TextBlock(text="hi")
IMAGE = ImageBlock(mime_type="image/png", data=PNG_B64)
AUDIO = AudioBlock(mime_type="audio/wav", url="https://example.com/a.wav")
VIDEO = VideoBlock(mime_type="video/mp4", url="https://example.com/v.mp4")
DOC = DocumentBlock(mime_type="application/pdf", data="JVBERi0=", name="r.pdf")
REASONING = ReasoningBlock(text="thinking", provider="anthropic", signature="sig")
CALL = ToolCallBlock(id="c1", name="lookup", input={"q": 1})
RESULT = ToolResultBlock(call_id="c1", content=[TEXT])

ALL_BLOCKS = {
    "text": TEXT,
    "image": IMAGE,
    "audio": AUDIO,
    "video": VIDEO,
    "document": DOC,
    "reasoning": REASONING,
    "tool_call": CALL,
    "tool_result": RESULT,
}

ALLOWED = {
    MessageRole.SYSTEM: {"text"},
    MessageRole.USER: {"text", "image", "audio", "video", "document"},
    MessageRole.ASSISTANT: {
        "text",
        "image",
        "audio",
        "video",
        "document",
        "reasoning",
        "tool_call",
    },
    MessageRole.TOOL: {"tool_result"},
}


@pytest.mark.parametrize("role", list(MessageRole))
@pytest.mark.parametrize("block_type", list(ALL_BLOCKS))
def test_role_matrix(role: MessageRole, block_type: str) -> None:
    block = ALL_BLOCKS[block_type]
    if block_type in ALLOWED[role]:
        message = ChatMessage(role=role, blocks=[block])
        assert message.blocks == [block]
    else:
        with pytest.raises(ValueError) as info:
            ChatMessage(role=role, blocks=[block])
        assert isinstance(info.value, ValidationError)
        assert role.value in str(info.value)
        assert block_type in str(info.value)


def test_tool_message_holds_exactly_one_result() -> None:
    with pytest.raises(ValueError, match="exactly one tool_result"):
        ChatMessage(role=MessageRole.TOOL, blocks=[])
    with pytest.raises(ValueError, match="exactly one tool_result"):
        ChatMessage(role=MessageRole.TOOL, blocks=[RESULT, RESULT])


def test_duplicate_tool_call_ids_are_rejected() -> None:
    other = ToolCallBlock(id="c1", name="other")
    with pytest.raises(ValueError, match="'c1'"):
        ChatMessage.assistant("x", tool_calls=[CALL, other])


def test_media_block_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one of data"):
        ImageBlock(mime_type="image/png")
    with pytest.raises(ValueError, match="exactly one of data"):
        ImageBlock(mime_type="image/png", data=PNG_B64, url=SECRET_URL)


def test_media_block_checks_its_mime_family() -> None:
    with pytest.raises(ValueError, match="image/"):
        ImageBlock(mime_type="application/pdf", data="AA==")
    with pytest.raises(ValueError, match="audio/"):
        AudioBlock(mime_type="video/mp4", data="AA==")
    # documents take any type
    assert DocumentBlock(mime_type="text/plain", data="aGk=").mime_type == "text/plain"


def test_tool_result_content_takes_only_text_and_media() -> None:
    with pytest.raises(ValueError, match="Input tag 'tool_call' found using 'type' does not"):
        ToolResultBlock(call_id="c1", content=[CALL])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="Input tag 'reasoning' found using 'type' does not"):
        ToolResultBlock(call_id="c1", content=[REASONING])  # type: ignore[list-item]


def test_conveniences() -> None:
    assert ChatMessage.system("be brief").blocks == [TextBlock(text="be brief")]
    assert ChatMessage.user("hi").role is MessageRole.USER
    user = ChatMessage.user([TEXT, IMAGE])
    assert user.blocks == [TEXT, IMAGE]
    assistant = ChatMessage.assistant(
        [TextBlock(text="a"), REASONING, TextBlock(text="b")],
        tool_calls=[CALL, ToolCallBlock(id="c2", name="x")],
    )
    assert assistant.text == "ab"
    assert [c.id for c in assistant.tool_calls] == ["c1", "c2"]
    tool = ChatMessage.tool_result(RESULT)
    assert tool.role is MessageRole.TOOL
    assert tool.tool_result_block == RESULT
    assert user.tool_result_block is None
    assert ChatMessage.assistant().blocks == []


def test_block_order_survives() -> None:
    blocks = [TextBlock(text="1"), CALL, TextBlock(text="2"), REASONING, IMAGE]
    message = ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)
    again = ChatMessage.model_validate_json(message.model_dump_json())
    assert [b.type for b in again.blocks] == ["text", "tool_call", "text", "reasoning", "image"]
    assert again == message


def test_json_round_trip_of_nested_blocks() -> None:
    result = ToolResultBlock(call_id="c9", content=[TEXT, IMAGE, DOC, AUDIO, VIDEO], is_error=True)
    message = ChatMessage.tool_result(result)
    data = json.loads(message.model_dump_json())
    assert data["blocks"][0]["content"][1] == {
        "type": "image",
        "mime_type": "image/png",
        "data": PNG_B64,
        "url": None,
        "name": None,
        "size_bytes": None,
        "sha256": None,
        "redacted": False,
    }
    again = ChatMessage.model_validate_json(message.model_dump_json())
    assert again == message
    assert isinstance(again.blocks[0], ToolResultBlock)
    assert isinstance(again.blocks[0].content[1], ImageBlock)


def test_sanitize_drops_data_and_urls_but_keeps_descriptions() -> None:
    image = ImageBlock(mime_type="image/png", data=PNG_B64, name="chart.png", sha256="ff")
    by_url = ImageBlock(mime_type="image/png", url=SECRET_URL)
    message = ChatMessage.user([TEXT, image, by_url])
    safe = message.sanitize()
    dumped = safe.model_dump_json()
    assert PNG_B64 not in dumped
    assert SECRET_URL not in dumped
    assert "secret-image" not in dumped
    sanitized_image = safe.blocks[1]
    assert isinstance(sanitized_image, ImageBlock)
    assert sanitized_image.redacted
    assert (sanitized_image.mime_type, sanitized_image.name, sanitized_image.sha256) == (
        "image/png",
        "chart.png",
        "ff",
    )
    assert sanitized_image.size_bytes == 70  # decoded size of PNG_B64
    # the original is untouched, and the sanitized form still round-trips
    assert message.blocks[1] == image
    assert ChatMessage.model_validate_json(dumped) == safe


def test_sanitize_keeps_reasoning_tool_input_and_metadata() -> None:
    message = ChatMessage(
        role=MessageRole.ASSISTANT,
        blocks=[REASONING, CALL, IMAGE],
        metadata={"trace": "t1"},
    )
    safe = message.sanitize()
    assert safe.blocks[0] == REASONING
    assert safe.blocks[1] == CALL
    assert safe.metadata == {"trace": "t1"}


def test_sanitize_reaches_into_tool_results() -> None:
    result = ToolResultBlock(
        call_id="c1",
        content=[TEXT, IMAGE, DocumentBlock(mime_type="application/pdf", url=SECRET_URL)],
    )
    safe = ChatMessage.tool_result(result).sanitize()
    dumped = safe.model_dump_json()
    assert PNG_B64 not in dumped and SECRET_URL not in dumped
    block = safe.blocks[0]
    assert isinstance(block, ToolResultBlock)
    assert block.content[0] == TEXT


def test_redacted_block_cannot_carry_data() -> None:
    with pytest.raises(ValueError, match="redacted"):
        ImageBlock(mime_type="image/png", data=PNG_B64, redacted=True)


def test_tool_result_projections() -> None:
    assert RESULT.is_text_only and RESULT.text == "hi"
    mixed = ToolResultBlock(call_id="c", content=[TEXT, IMAGE, TextBlock(text="!")])
    assert not mixed.is_text_only and mixed.text == "hi!"
    assert ToolResultBlock(call_id="c").is_text_only


def test_unsupported_content_block_error_names_type_and_reason_only() -> None:
    error = UnsupportedContentBlockError(
        "audio", "audio input is not accepted", provider="anthropic"
    )
    assert isinstance(error, ValueError)
    assert str(error) == "audio block is not supported by anthropic: audio input is not accepted"


def test_find_first_system_message_is_upstreams_helper() -> None:
    from flink_agents.api.chat_message import find_first_system_message

    messages = [
        ChatMessage.user("hi"),
        ChatMessage.system("be brief"),
        ChatMessage.assistant("ok"),
        ChatMessage(role=MessageRole.SYSTEM, content="again"),  # upstream's form
    ]
    assert find_first_system_message(messages) == 1
    assert find_first_system_message(messages[2:]) == 1
    assert find_first_system_message([ChatMessage.user("hi")]) == -1
    assert find_first_system_message([]) == -1


def test_everything_is_importable_from_both_modules() -> None:
    import flink_agents.api as api

    for name in chat_message_module.__all__:
        assert getattr(api, name) is getattr(chat_message_module, name)


@pytest.mark.parametrize(
    ("factory", "role"),
    [
        (ChatMessage.system, "system"),
        (ChatMessage.user, "user"),
        (ChatMessage.assistant, "assistant"),
    ],
)
def test_text_factories_match_the_validating_constructor(factory: Any, role: str) -> None:
    # The text factories skip validation; what they build must not differ in any way.
    built = factory("hello")
    validated = ChatMessage(role=role, blocks=[TextBlock(text="hello")])
    assert built == validated
    assert built.model_fields_set == validated.model_fields_set
    assert built.blocks[0].model_fields_set == validated.blocks[0].model_fields_set
    assert built.model_dump_json() == validated.model_dump_json()
    assert ChatMessage.model_validate_json(built.model_dump_json()) == built
    built.metadata["note"] = 1  # its own mutable fields
    assert factory("hello").metadata == {}


def test_text_factories_still_validate_what_is_not_a_str() -> None:
    with pytest.raises(ValidationError):
        ChatMessage.system(None)  # type: ignore[arg-type]

    class Text(str):
        pass

    assert ChatMessage.user(Text("hello")) == ChatMessage.user("hello")
