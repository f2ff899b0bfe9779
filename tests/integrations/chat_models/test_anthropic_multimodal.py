"""Media in Anthropic requests: the seed's interaction table and numbered contracts.

Every test drives the real ``anthropic`` SDK against a local server and asserts
the exact JSON body it received (or that nothing was sent).
"""

from __future__ import annotations

import base64

import pytest

from flink_agents.api import (
    AudioBlock,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultContent,
    UnsupportedContentBlockError,
    VideoBlock,
)
from flink_agents.integrations.chat_models.anthropic import AnthropicChatModelConnection
from tests.fakes.http_server import FakeProviderServer

MODEL = "claude-test"
PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\nfake-png").decode()
PDF_B64 = base64.b64encode(b"%PDF-1.4 fake").decode()
NOTES_TEXT = "Zeile 1: Grüße\nline 2"
NOTES_B64 = base64.b64encode(NOTES_TEXT.encode("utf-8")).decode()
SECRET_URL = "https://media.example.com/secret-token-123/file"

Media = ImageBlock | AudioBlock | VideoBlock | DocumentBlock

ASSISTANT_REASON = "only user messages and tool results can carry media, not assistant messages"

OK_RESPONSE = {
    "id": "msg_ok",
    "type": "message",
    "role": "assistant",
    "model": MODEL,
    "content": [{"type": "text", "text": "done"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 10, "output_tokens": 2},
}

# Each supported media block with the exact Anthropic block it becomes.
SUPPORTED_MEDIA: list[tuple[ToolResultContent, dict]] = [
    (
        ImageBlock(mime_type="image/png", data=PNG_B64),
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
    ),
    (
        ImageBlock(mime_type="image/jpeg", url="https://img.example.com/a.jpg"),
        {"type": "image", "source": {"type": "url", "url": "https://img.example.com/a.jpg"}},
    ),
    (
        ImageBlock(mime_type="image/gif", data=PNG_B64),
        {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": PNG_B64}},
    ),
    (
        ImageBlock(mime_type="image/webp", url="https://img.example.com/b.webp"),
        {"type": "image", "source": {"type": "url", "url": "https://img.example.com/b.webp"}},
    ),
    (
        DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="report.pdf"),
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64},
            "title": "report.pdf",
        },
    ),
    (
        DocumentBlock(mime_type="application/pdf", url="https://docs.example.com/x.pdf"),
        {"type": "document", "source": {"type": "url", "url": "https://docs.example.com/x.pdf"}},
    ),
    (
        DocumentBlock(mime_type="text/plain", data=NOTES_B64, name="notes.txt"),
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": NOTES_TEXT},
            "title": "notes.txt",
        },
    ),
]

# Shared by the user-message and tool-result tests: each must fail the same way.
UNSUPPORTED_MEDIA: list[tuple[str, Media]] = [
    ("audio", AudioBlock(mime_type="audio/wav", data=PNG_B64)),
    ("video", VideoBlock(mime_type="video/mp4", url=SECRET_URL)),
    ("bmp image", ImageBlock(mime_type="image/bmp", data=PNG_B64)),
    ("svg image by url", ImageBlock(mime_type="image/svg+xml", url=SECRET_URL)),
    (
        "docx document",
        DocumentBlock(
            mime_type="application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            data=PDF_B64,
        ),
    ),
    ("plain text by url", DocumentBlock(mime_type="text/plain", url=SECRET_URL)),
]


@pytest.fixture
def connection(server: FakeProviderServer) -> AnthropicChatModelConnection:
    return AnthropicChatModelConnection(api_key="test-key", base_url=server.base_url)


def _call_history(*calls: tuple[str, str]) -> list[ChatMessage]:
    return [
        ChatMessage.user("look at these"),
        ChatMessage.assistant(
            tool_calls=[ToolCallBlock(id=call_id, name=name) for call_id, name in calls]
        ),
    ]


async def _sent_body(
    server: FakeProviderServer,
    connection: AnthropicChatModelConnection,
    messages: list[ChatMessage],
) -> dict:
    server.enqueue(OK_RESPONSE)
    await connection.achat(messages, model=MODEL)
    assert len(server.requests) == 1
    return server.bodies[-1]


# ------------------------------------------------------------- contracts 1, 2, 3


async def test_tool_result_media_is_sent_in_order(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    content: list[ToolResultContent] = [TextBlock(text="Here is what I found:")]
    expected_blocks: list[dict] = [{"type": "text", "text": "Here is what I found:"}]
    for block, wire in SUPPORTED_MEDIA:
        content.append(block)
        expected_blocks.append(wire)
    content.append(TextBlock(text="end of results"))
    expected_blocks.append({"type": "text", "text": "end of results"})
    result = ToolResultBlock(call_id="toolu_01", content=content)

    body = await _sent_body(
        server, connection, [*_call_history(("toolu_01", "fetch")), ChatMessage.tool_result(result)]
    )

    assert body["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": expected_blocks}],
    }
    assert len(body["messages"]) == 3


async def test_error_tool_result_with_media(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    result = ToolResultBlock(
        call_id="toolu_err",
        content=[
            TextBlock(text="render failed, partial output:"),
            ImageBlock(mime_type="image/png", data=PNG_B64),
        ],
        is_error=True,
    )

    body = await _sent_body(
        server,
        connection,
        [*_call_history(("toolu_err", "render")), ChatMessage.tool_result(result)],
    )

    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_err",
                "content": [
                    {"type": "text", "text": "render failed, partial output:"},
                    SUPPORTED_MEDIA[0][1],
                ],
                "is_error": True,
            }
        ],
    }


async def test_user_message_media_is_sent_like_tool_result_media(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    """Table row "User | Supported media": the same blocks, the same wire form."""
    blocks = [TextBlock(text="compare"), *(block for block, _ in SUPPORTED_MEDIA)]

    body = await _sent_body(server, connection, [ChatMessage.user(blocks)])

    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "compare"},
                *(wire for _, wire in SUPPORTED_MEDIA),
            ],
        }
    ]


async def test_data_uri_media_is_sent_as_base64(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    result = ToolResultBlock(
        call_id="toolu_01",
        content=[
            ImageBlock(mime_type="image/png", url=f"data:image/png;base64,{PNG_B64}"),
            DocumentBlock(mime_type="text/plain", url="data:text/plain,hello%20world"),
        ],
    )

    body = await _sent_body(
        server, connection, [*_call_history(("toolu_01", "f")), ChatMessage.tool_result(result)]
    )

    assert body["messages"][2]["content"][0]["content"] == [
        SUPPORTED_MEDIA[0][1],
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "hello world"},
        },
    ]


# -------------------------------------------------------------------- contract 4


@pytest.mark.parametrize(
    ("content", "is_error", "expected"),
    [
        ([TextBlock(text="42 degrees")], False, {"content": "42 degrees"}),
        ([TextBlock(text="a"), TextBlock(text="b")], False, {"content": "ab"}),
        ([], False, {"content": ""}),
        ([TextBlock(text="boom")], True, {"content": "boom", "is_error": True}),
    ],
    ids=["one-text", "texts-concatenated", "empty", "error"],
)
async def test_text_only_tool_result_is_unchanged(
    server: FakeProviderServer,
    connection: AnthropicChatModelConnection,
    content: list[ToolResultContent],
    is_error: bool,
    expected: dict,
) -> None:
    result = ToolResultBlock(call_id="toolu_t", content=content, is_error=is_error)

    body = await _sent_body(
        server,
        connection,
        [*_call_history(("toolu_t", "weather")), ChatMessage.tool_result(result)],
    )

    assert body["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_t", **expected}],
    }


# -------------------------------------------------------------------- contract 5


def _unsupported_error(
    connection: AnthropicChatModelConnection, messages: list[ChatMessage]
) -> UnsupportedContentBlockError:
    with pytest.raises(UnsupportedContentBlockError) as caught:
        connection.chat(messages, model=MODEL)
    return caught.value


@pytest.mark.parametrize(
    ("label", "block"), UNSUPPORTED_MEDIA, ids=[x[0] for x in UNSUPPORTED_MEDIA]
)
def test_unsupported_tool_result_media_fails_as_for_user_messages(
    server: FakeProviderServer,
    connection: AnthropicChatModelConnection,
    label: str,
    block: Media,
) -> None:
    as_user = _unsupported_error(connection, [ChatMessage.user([TextBlock(text="see"), block])])
    result = ToolResultBlock(call_id="toolu_u", content=[TextBlock(text="see"), block])
    as_tool = _unsupported_error(
        connection, [*_call_history(("toolu_u", "f")), ChatMessage.tool_result(result)]
    )

    assert str(as_tool) == str(as_user)
    assert as_tool.block_type == as_user.block_type == block.type
    assert as_tool.reason == as_user.reason
    assert as_tool.provider == "anthropic"
    assert str(as_tool).startswith(f"{block.type} block is not supported by anthropic: ")
    assert SECRET_URL not in str(as_tool) and "secret-token" not in str(as_tool)
    assert PNG_B64 not in str(as_tool) and PDF_B64 not in str(as_tool)
    assert server.requests == []


def test_unsupported_reasons_name_the_problem(connection: AnthropicChatModelConnection) -> None:
    reasons = {
        label: _unsupported_error(connection, [ChatMessage.user([block])]).reason
        for label, block in UNSUPPORTED_MEDIA
    }
    assert reasons == {
        "audio": "the Anthropic Messages API does not accept audio",
        "video": "the Anthropic Messages API does not accept video",
        "bmp image": "image type 'image/bmp' is not accepted; "
        "use image/jpeg, image/png, image/gif or image/webp",
        "svg image by url": "image type 'image/svg+xml' is not accepted; "
        "use image/jpeg, image/png, image/gif or image/webp",
        "docx document": "document type "
        "'application/vnd.openxmlformats-officedocument.wordprocessingml.document' is not "
        "accepted; use application/pdf, or text/plain as base64 data",
        "plain text by url": "a text/plain document is accepted only as base64 data, not by URL",
    }


def test_redacted_media_is_not_sent(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    log_safe = ChatMessage.user([ImageBlock(mime_type="image/png", data=PNG_B64)]).sanitize()
    error = _unsupported_error(connection, [log_safe])
    assert error.reason == "the block was redacted for logging and has no data or URL to send"
    assert server.requests == []


# -------------------------------------------------------------------- contract 6

INVALID_TEXT_DOCUMENTS = [
    ("not-base64", "this is not base64!!"),
    ("not-utf8", base64.b64encode(b"\xff\xfe\xfa bytes").decode()),
]


@pytest.mark.parametrize(
    ("label", "data"), INVALID_TEXT_DOCUMENTS, ids=[x[0] for x in INVALID_TEXT_DOCUMENTS]
)
def test_invalid_base64_text_document_in_tool_result_fails(
    server: FakeProviderServer,
    connection: AnthropicChatModelConnection,
    label: str,
    data: str,
) -> None:
    document = DocumentBlock(mime_type="text/plain", data=data)
    result = ToolResultBlock(call_id="toolu_d", content=[document])
    tool_messages = [*_call_history(("toolu_d", "read")), ChatMessage.tool_result(result)]
    user_messages = [ChatMessage.user([document])]

    errors = []
    for messages in (tool_messages, user_messages):
        with pytest.raises(ValueError) as caught:
            connection.chat(messages, model=MODEL)
        assert not isinstance(caught.value, UnsupportedContentBlockError)
        assert data not in str(caught.value)
        errors.append(str(caught.value))

    assert errors[0] == errors[1]
    expected = "not valid base64" if label == "not-base64" else "not valid UTF-8"
    assert expected in errors[0]
    assert server.requests == []


# -------------------------------------------------------------------- contract 7

ASSISTANT_MEDIA: list[Media] = [
    ImageBlock(mime_type="image/png", data=PNG_B64),
    ImageBlock(mime_type="image/jpeg", url=SECRET_URL),
    DocumentBlock(mime_type="application/pdf", data=PDF_B64),
    DocumentBlock(mime_type="text/plain", data="this is not base64!!"),
    AudioBlock(mime_type="audio/wav", data=PNG_B64),
    VideoBlock(mime_type="video/mp4", url=SECRET_URL),
]


@pytest.mark.parametrize("block", ASSISTANT_MEDIA, ids=lambda b: f"{b.type}-{b.mime_type}")
def test_media_in_assistant_messages_fails(
    server: FakeProviderServer, connection: AnthropicChatModelConnection, block: Media
) -> None:
    messages = [
        ChatMessage.user("draw"),
        ChatMessage.assistant([TextBlock(text="here"), block]),
        ChatMessage.user("thanks"),
    ]

    error = _unsupported_error(connection, messages)

    assert error.reason == ASSISTANT_REASON
    assert str(error) == f"{block.type} block is not supported by anthropic: {ASSISTANT_REASON}"
    assert server.requests == []


# -------------------------------------------------------------------- contract 8


async def test_parallel_tool_results_keep_their_correlation(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    messages = [
        *_call_history(("toolu_a", "weather"), ("toolu_b", "chart"), ("toolu_c", "weather")),
        ChatMessage.tool_result(
            ToolResultBlock(call_id="toolu_a", content=[TextBlock(text="Paris: 21C")])
        ),
        ChatMessage.tool_result(
            ToolResultBlock(
                call_id="toolu_b",
                content=[TextBlock(text="chart:"), ImageBlock(mime_type="image/png", data=PNG_B64)],
            )
        ),
        ChatMessage.tool_result(
            ToolResultBlock(call_id="toolu_c", content=[TextBlock(text="no data")], is_error=True)
        ),
        ChatMessage.user("and now?"),
    ]

    body = await _sent_body(server, connection, messages)

    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "look at these"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {}},
                {"type": "tool_use", "id": "toolu_b", "name": "chart", "input": {}},
                {"type": "tool_use", "id": "toolu_c", "name": "weather", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "Paris: 21C"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": [{"type": "text", "text": "chart:"}, SUPPORTED_MEDIA[0][1]],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_c",
                    "content": "no data",
                    "is_error": True,
                },
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "and now?"}]},
    ]
