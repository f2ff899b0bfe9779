"""normalize_tool_output: what a tool returns becomes model-facing blocks."""

from __future__ import annotations

import base64
import hashlib
import json

from pydantic import BaseModel

from flink_agents.api import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ToolResultBlock,
    VideoBlock,
    normalize_tool_output,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PNG_B64 = base64.b64encode(PNG).decode()
PDF_B64 = base64.b64encode(b"%PDF-1.4 hello").decode()


class Weather(BaseModel):
    city: str
    celsius: float


def test_none_gives_no_blocks() -> None:
    assert normalize_tool_output(None) == []


def test_strings_pass_through() -> None:
    assert normalize_tool_output("sunny") == [TextBlock(text="sunny")]
    assert normalize_tool_output("") == [TextBlock(text="")]


def test_blocks_pass_through() -> None:
    image = ImageBlock(mime_type="image/png", data=PNG_B64)
    assert normalize_tool_output(image) == [image]
    assert normalize_tool_output([TextBlock(text="a"), image]) == [TextBlock(text="a"), image]
    result = ToolResultBlock(call_id="x", content=[image])
    assert normalize_tool_output(result) == [image]


def test_structured_values_become_json_text() -> None:
    assert normalize_tool_output({"a": 1}) == [TextBlock(text='{"a":1}')]
    assert normalize_tool_output([1, 2]) == [TextBlock(text="[1,2]")]
    assert normalize_tool_output([{"id": 1}, {"id": 2}]) == [TextBlock(text='[{"id":1},{"id":2}]')]
    assert normalize_tool_output(["a", "b"]) == [TextBlock(text='["a","b"]')]
    assert normalize_tool_output([]) == [TextBlock(text="[]")]
    assert normalize_tool_output(3.5) == [TextBlock(text="3.5")]
    assert normalize_tool_output(True) == [TextBlock(text="true")]
    weather = Weather(city="Oslo", celsius=-3.0)
    assert json.loads(normalize_tool_output(weather)[0].text) == {"city": "Oslo", "celsius": -3.0}  # type: ignore[union-attr]
    assert normalize_tool_output({"type": "input_text", "text": "a dict is data"}) == [
        TextBlock(text='{"type":"input_text","text":"a dict is data"}')
    ]


def test_openai_responses_parts() -> None:
    blocks = normalize_tool_output(
        [
            {"type": "input_text", "text": "chart:"},
            {
                "type": "input_image",
                "image_url": f"data:image/png;base64,{PNG_B64}",
                "detail": "auto",
            },
            {"type": "input_image", "image_url": {"url": "https://example.com/a.jpg"}},
            {
                "type": "input_file",
                "file_data": f"data:application/pdf;base64,{PDF_B64}",
                "filename": "r.pdf",
            },
            {"type": "input_file", "file_url": "https://example.com/doc.pdf"},
        ]
    )
    assert blocks == [
        TextBlock(text="chart:"),
        ImageBlock(mime_type="image/png", data=PNG_B64),
        ImageBlock(mime_type="image/jpeg", url="https://example.com/a.jpg"),
        DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="r.pdf"),
        DocumentBlock(mime_type="application/pdf", url="https://example.com/doc.pdf"),
    ]


def test_openai_chat_parts() -> None:
    blocks = normalize_tool_output(
        [
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
            {"type": "file", "file": {"file_data": PDF_B64, "filename": "x.pdf"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "mp3"}},
        ]
    )
    assert blocks == [
        TextBlock(text="see"),
        ImageBlock(mime_type="image/png", data=PNG_B64),
        DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="x.pdf"),
        AudioBlock(mime_type="audio/mpeg", data="UklGRg=="),
    ]


def test_mcp_parts() -> None:
    blocks = normalize_tool_output(
        [
            {"type": "text", "text": "result"},
            {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {
                "type": "resource",
                "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "body"},
            },
            {
                "type": "resource",
                "resource": {
                    "uri": "file:///d/r.pdf",
                    "mimeType": "application/pdf",
                    "blob": PDF_B64,
                },
            },
        ]
    )
    assert blocks == [
        TextBlock(text="result"),
        ImageBlock(mime_type="image/png", data=PNG_B64),
        AudioBlock(mime_type="audio/wav", data="AAAA"),
        TextBlock(text="body"),
        DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="r.pdf"),
    ]


def test_anthropic_and_own_block_dicts() -> None:
    blocks = normalize_tool_output(
        [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"},
            },
            {
                "type": "document",
                "source": {"type": "url", "url": "https://example.com/x.pdf"},
                "title": "X",
            },
            {"type": "video", "mime_type": "video/mp4", "url": "https://example.com/v.mp4"},
        ]
    )
    assert blocks == [
        ImageBlock(mime_type="image/gif", data="R0lG"),
        DocumentBlock(mime_type="application/pdf", url="https://example.com/x.pdf", name="X"),
        VideoBlock(mime_type="video/mp4", url="https://example.com/v.mp4"),
    ]


def test_all_text_list_collapses_to_one_block() -> None:
    parts = [
        {"type": "input_text", "text": "a"},
        {"type": "text", "text": "b"},
        TextBlock(text="c"),
    ]
    assert normalize_tool_output(parts) == [TextBlock(text="a\nb\nc")]


def test_unknown_parts_become_json_text_not_dropped() -> None:
    unknown = {"type": "hologram", "payload": [1, 2]}
    malformed = {"type": "input_image"}  # no image_url
    blocks = normalize_tool_output(
        [{"type": "input_image", "image_url": "https://example.com/i.png"}, unknown, malformed]
    )
    assert len(blocks) == 3
    assert isinstance(blocks[0], ImageBlock)
    assert blocks[1] == TextBlock(text=json.dumps(unknown))
    assert blocks[2] == TextBlock(text=json.dumps(malformed))


def test_all_unknown_typed_dicts_are_structured_data() -> None:
    rows = [{"type": "order", "id": 1}, {"type": "order", "id": 2}]
    assert normalize_tool_output(rows) == [TextBlock(text=json.dumps(rows, separators=(",", ":")))]


def test_bytes_with_a_signature_become_media() -> None:
    [png] = normalize_tool_output(PNG)
    assert isinstance(png, ImageBlock)
    assert png.mime_type == "image/png"
    assert base64.b64decode(png.data or "") == PNG
    assert png.size_bytes == len(PNG)
    assert png.sha256 == hashlib.sha256(PNG).hexdigest()
    [jpeg] = normalize_tool_output(b"\xff\xd8\xff\xe0rest")
    assert isinstance(jpeg, ImageBlock) and jpeg.mime_type == "image/jpeg"
    [gif] = normalize_tool_output(b"GIF89a....")
    assert isinstance(gif, ImageBlock) and gif.mime_type == "image/gif"
    [webp] = normalize_tool_output(b"RIFF\x00\x00\x00\x00WEBPVP8 ")
    assert isinstance(webp, ImageBlock) and webp.mime_type == "image/webp"
    [pdf] = normalize_tool_output(bytearray(b"%PDF-1.7 ..."))
    assert isinstance(pdf, DocumentBlock) and pdf.mime_type == "application/pdf"


def test_other_bytes_are_text_or_opaque_documents() -> None:
    assert normalize_tool_output(b"plain words") == [TextBlock(text="plain words")]
    [blob] = normalize_tool_output(b"\x00\xff\xfe\x01")
    assert isinstance(blob, DocumentBlock)
    assert blob.mime_type == "application/octet-stream"


def test_bytes_inside_a_part_list_are_parts() -> None:
    blocks = normalize_tool_output([{"type": "text", "text": "chart"}, PNG])
    assert blocks[0] == TextBlock(text="chart")
    assert isinstance(blocks[1], ImageBlock) and blocks[1].mime_type == "image/png"


def test_bytes_inside_structured_data_become_base64_json() -> None:
    [block] = normalize_tool_output({"raw": b"\x00\xff"})
    assert block == TextBlock(text='{"raw":"AP8="}')
