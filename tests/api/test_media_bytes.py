"""Raw bytes in a media block are base64-encoded, never kept as text."""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter

from flink_agents.api import AudioBlock, ChatMessage, DocumentBlock, ImageBlock, VideoBlock
from flink_agents.api.content_blocks import ContentBlock, MediaBlock

_RAW_SHA256 = "d7439bee24773bcbfa2d0a97947ee36227b10d1022b1a55847e928965bb6bfde"  # of b"raw"


@pytest.mark.parametrize(
    ("block_class", "kind", "mime_type"),
    [
        (ImageBlock, "image", "image/png"),
        (AudioBlock, "audio", "audio/wav"),
        (VideoBlock, "video", "video/mp4"),
        (DocumentBlock, "document", "application/pdf"),
    ],
)
@pytest.mark.parametrize("raw", [b"raw", bytearray(b"raw"), memoryview(b"raw")], ids=type)
def test_bytes_are_encoded_with_their_size_and_digest(
    block_class: type[MediaBlock], kind: str, mime_type: str, raw: bytes
) -> None:
    block = block_class(mime_type=mime_type, data=raw)  # pyright: ignore[reportArgumentType]
    assert block.data == "cmF3"  # base64 of b"raw", not the text 'raw'
    assert json.loads(block.model_dump_json()) == {
        "type": kind,
        "mime_type": mime_type,
        "data": "cmF3",
        "url": None,
        "name": None,
        "size_bytes": 3,
        "sha256": _RAW_SHA256,
        "redacted": False,
    }
    again = TypeAdapter(ContentBlock).validate_json(block.model_dump_json())
    assert again == block and type(again) is block_class


def test_given_size_and_digest_are_kept() -> None:
    block = ImageBlock(mime_type="image/png", data=b"raw", size_bytes=9, sha256="abc")  # pyright: ignore[reportArgumentType]
    assert (block.data, block.size_bytes, block.sha256) == ("cmF3", 9, "abc")


def test_base64_text_is_kept_as_it_is() -> None:
    block = ImageBlock(mime_type="image/png", data="cmF3")
    assert (block.data, block.size_bytes, block.sha256) == ("cmF3", None, None)


def test_bytes_in_a_message_and_its_log_safe_form() -> None:
    message = ChatMessage.user([ImageBlock.from_bytes(b"\x89PNG\r\n", "image/png")])
    image = message.blocks[0]
    assert isinstance(image, ImageBlock) and image.data == "iVBORw0K"
    assert "iVBORw0K" not in message.sanitize().model_dump_json()


def test_bytes_and_a_url_are_still_refused() -> None:
    with pytest.raises(ValueError, match="exactly one of data"):
        ImageBlock(mime_type="image/png", data=b"raw", url="https://example.com/a.png")  # pyright: ignore[reportArgumentType]


def test_from_bytes_is_the_typed_spelling() -> None:
    block = DocumentBlock.from_bytes(b"raw", "application/pdf", name="a.pdf")
    assert block == DocumentBlock(
        mime_type="application/pdf", data="cmF3", name="a.pdf", size_bytes=3, sha256=_RAW_SHA256
    )
    with pytest.raises(ValueError, match="image/"):
        ImageBlock.from_bytes(b"raw", "application/pdf")
