"""MCP content to typed blocks: each kind of tool result content, structured content and
prompt messages, exactly."""

from __future__ import annotations

import base64

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    PromptMessage,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from flink_agents.api.content_blocks import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    VideoBlock,
)
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.integrations.mcp._content import (
    content_block,
    prompt_messages,
    tool_result_content,
)
from tests.fakes.images import red_png

PNG = red_png(2)
PNG_B64 = base64.b64encode(PNG).decode("ascii")
PDF_B64 = base64.b64encode(b"%PDF-1.4 tiny").decode("ascii")


def test_text_is_a_text_block() -> None:
    assert content_block(TextContent(type="text", text="21 C")) == TextBlock(text="21 C")


def test_image_and_audio_are_media_blocks_with_their_size() -> None:
    image = content_block(ImageContent(type="image", data=PNG_B64, mime_type="image/png"))
    assert image == ImageBlock(mime_type="image/png", data=PNG_B64, size_bytes=len(PNG))
    audio = content_block(AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"))
    assert audio == AudioBlock(mime_type="audio/wav", data="UklGRg==", size_bytes=4)


def test_media_whose_type_is_of_another_kind_becomes_a_document() -> None:
    block = content_block(
        ImageContent(type="image", data=PDF_B64, mime_type="application/octet-stream")
    )
    assert block == DocumentBlock(mime_type="application/octet-stream", data=PDF_B64, size_bytes=13)


def test_embedded_resources_by_mime_type() -> None:
    text = EmbeddedResource(
        type="resource",
        resource=TextResourceContents(uri="memo://today", mime_type="text/plain", text="Ship."),
    )
    pdf = EmbeddedResource(
        type="resource",
        resource=BlobResourceContents(
            uri="file:///reports/march.pdf", mime_type="application/pdf", blob=PDF_B64
        ),
    )
    png = EmbeddedResource(
        type="resource",
        resource=BlobResourceContents(uri="file:///c.png", mime_type="image/png", blob=PNG_B64),
    )
    video = EmbeddedResource(
        type="resource",
        resource=BlobResourceContents(uri="file:///v.mp4", mime_type="video/mp4", blob="AAAA"),
    )
    untyped = EmbeddedResource(
        type="resource", resource=BlobResourceContents(uri="blob://x/", blob="AAAA")
    )
    assert content_block(text) == TextBlock(text="Ship.")
    assert content_block(pdf) == DocumentBlock(
        mime_type="application/pdf", data=PDF_B64, name="march.pdf", size_bytes=13
    )
    assert content_block(png) == ImageBlock(
        mime_type="image/png", data=PNG_B64, name="c.png", size_bytes=len(PNG)
    )
    assert content_block(video) == VideoBlock(
        mime_type="video/mp4", data="AAAA", name="v.mp4", size_bytes=3
    )
    assert content_block(untyped) == DocumentBlock(
        mime_type="application/octet-stream", data="AAAA", name="x", size_bytes=3
    )


def test_a_resource_link_is_kept_as_json_text() -> None:
    link = ResourceLink(type="resource_link", uri="file:///big.csv", name="big.csv")
    assert content_block(link) == TextBlock(
        text='{"name":"big.csv","uri":"file:///big.csv","type":"resource_link"}'
    )


def test_structured_content_alone_becomes_json_text() -> None:
    result = CallToolResult(content=[], structured_content={"sku": "a-1", "count": 3})
    assert tool_result_content(result) == [TextBlock(text='{"sku":"a-1","count":3}')]


def test_structured_content_is_not_repeated_when_the_server_sent_text() -> None:
    result = CallToolResult(
        content=[TextContent(type="text", text='{"count": 3}')], structured_content={"count": 3}
    )
    assert tool_result_content(result) == [TextBlock(text='{"count": 3}')]


def test_structured_content_goes_first_before_media() -> None:
    result = CallToolResult(
        content=[ImageContent(type="image", data=PNG_B64, mime_type="image/png")],
        structured_content={"title": "errors"},
    )
    assert tool_result_content(result) == [
        TextBlock(text='{"title":"errors"}'),
        ImageBlock(mime_type="image/png", data=PNG_B64, size_bytes=len(PNG)),
    ]


def test_content_keeps_its_order() -> None:
    result = CallToolResult(
        content=[
            TextContent(type="text", text="Chart:"),
            ImageContent(type="image", data=PNG_B64, mime_type="image/png"),
            TextContent(type="text", text="(red)"),
        ]
    )
    assert [type(b) for b in tool_result_content(result)] == [TextBlock, ImageBlock, TextBlock]


def test_prompt_messages_keep_roles_and_media() -> None:
    result = GetPromptResult(
        messages=[
            PromptMessage(role="user", content=TextContent(type="text", text="What is 1 + 2?")),
            PromptMessage(role="assistant", content=TextContent(type="text", text="Let me add.")),
            PromptMessage(
                role="user", content=ImageContent(type="image", data=PNG_B64, mime_type="image/png")
            ),
        ]
    )
    assert prompt_messages(result) == [
        ChatMessage.user("What is 1 + 2?"),
        ChatMessage.assistant("Let me add."),
        ChatMessage(
            role=MessageRole.USER,
            blocks=[ImageBlock(mime_type="image/png", data=PNG_B64, size_bytes=len(PNG))],
        ),
    ]
