"""Turning whatever a tool returned into model-facing content blocks.

Rules, in order:

* ``None`` gives no blocks; a string gives one text block.
* Text and media blocks pass through (a `ToolResultBlock` gives its content).
* ``bytes`` with an image (PNG, JPEG, GIF, WebP) or PDF signature become a media
  block; other bytes become UTF-8 text when they decode, else an
  ``application/octet-stream`` document (which providers then refuse clearly).
* A list of content parts (blocks, or dicts in the OpenAI Responses, OpenAI Chat,
  MCP or Anthropic dialects) becomes typed blocks in order. An all-text list
  collapses to one text block (joined with newlines). An unknown part becomes a
  text block carrying its JSON: nothing is dropped.
* Anything else (dicts, lists that are not content parts, pydantic models,
  numbers...) becomes one text block of JSON.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import mimetypes
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote_to_bytes

from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from flink_agents.api.content_blocks import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    MediaBlock,
    TextBlock,
    ToolResultBlock,
    ToolResultContent,
    VideoBlock,
    media_block_class,
)

__all__ = ["media_block_from_bytes", "normalize_tool_output", "parse_data_uri"]


def normalize_tool_output(value: Any) -> list[ToolResultContent]:
    """Model-facing blocks for a tool's return value (see the module doc for the rules)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [TextBlock(text=value)]
    if isinstance(value, (TextBlock, MediaBlock)):
        return [value]  # type: ignore[list-item]
    if isinstance(value, ToolResultBlock):
        return list(value.content)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return [_block_from_raw_bytes(bytes(value))]
    if isinstance(value, (list, tuple)) and _is_part_list(value):
        return _collapse_text([_part_to_block(part) for part in value])
    return [TextBlock(text=_to_json_text(value))]


def media_block_from_bytes(
    raw: bytes, mime_type: str, *, name: str | None = None
) -> ImageBlock | AudioBlock | VideoBlock | DocumentBlock:
    """A base64 media block for raw bytes, with size and SHA-256 filled in."""
    cls = media_block_class(mime_type)
    return cls(  # type: ignore[return-value]
        mime_type=mime_type,
        data=base64.b64encode(raw).decode("ascii"),
        name=name,
        size_bytes=len(raw),
        sha256=hashlib.sha256(raw).hexdigest(),
    )


def parse_data_uri(uri: str) -> tuple[str, str] | None:
    """``(mime_type, base64_data)`` of a ``data:`` URI, or None if it is not one."""
    if not uri.startswith("data:") or "," not in uri:
        return None
    header, payload = uri[5:].split(",", 1)
    params = header.split(";")
    mime = params[0] or "text/plain"
    if "base64" in params[1:]:
        return mime, payload
    return mime, base64.b64encode(unquote_to_bytes(payload)).decode("ascii")


# --------------------------------------------------------------------------- helpers


def _to_json_text(value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return to_json(value, fallback=str, bytes_mode="base64").decode("utf-8")


def _sniff_mime(raw: bytes) -> str | None:
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    if raw.startswith(b"%PDF-"):
        return "application/pdf"
    return None


def _block_from_raw_bytes(raw: bytes) -> ToolResultContent:
    mime = _sniff_mime(raw)
    if mime is not None:
        return media_block_from_bytes(raw, mime)
    try:
        return TextBlock(text=raw.decode("utf-8"))
    except UnicodeDecodeError:
        return media_block_from_bytes(raw, "application/octet-stream")


def _media_from_source(
    mime_type: str | None,
    *,
    data: str | None = None,
    url: str | None = None,
    name: str | None = None,
    kind: type[MediaBlock] | None = None,
) -> MediaBlock:
    """A media block from a base64 payload, a URL or a ``data:`` URI."""
    if url is not None:
        parsed = parse_data_uri(url)
        if parsed is not None:
            uri_mime, data = parsed
            mime_type = mime_type or uri_mime
            url = None
    if mime_type is None:
        guesses = (mimetypes.guess_type(hint)[0] for hint in (name, url) if hint)
        mime_type = next((g for g in guesses if g), None) or _default_mime(kind)
    cls = kind or media_block_class(mime_type)
    return cls(mime_type=mime_type, data=data, url=url, name=name)


def _default_mime(kind: type[MediaBlock] | None) -> str:
    return {
        ImageBlock: "image/png",
        AudioBlock: "audio/wav",
        VideoBlock: "video/mp4",
    }.get(kind, "application/octet-stream")  # type: ignore[arg-type]


def _url_of(value: Any) -> str | None:
    """``image_url`` and friends come as a string or as ``{"url": ...}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("url"), str):
        return value["url"]
    return None


def _file_part(spec: Mapping[str, Any]) -> MediaBlock | None:
    """OpenAI ``input_file`` / chat ``file``: ``file_data`` (data URI or base64) or ``file_url``."""
    name = spec.get("filename")
    file_data = spec.get("file_data")
    file_url = spec.get("file_url")
    if isinstance(file_data, str):
        if file_data.startswith("data:"):
            return _media_from_source(None, url=file_data, name=name)
        return _media_from_source(None, data=file_data, name=name)
    if isinstance(file_url, str):
        return _media_from_source(None, url=file_url, name=name)
    return None


def _audio_part(spec: Mapping[str, Any]) -> MediaBlock | None:
    """OpenAI ``input_audio``: ``{"data": base64, "format": "wav" | "mp3"}``."""
    data = spec.get("data")
    if not isinstance(data, str):
        return None
    fmt = str(spec.get("format") or "wav")
    mime = "audio/mpeg" if fmt == "mp3" else f"audio/{fmt}"
    return AudioBlock(mime_type=mime, data=data)


def _anthropic_source(part: Mapping[str, Any], kind: type[MediaBlock]) -> MediaBlock | None:
    source = part.get("source")
    if not isinstance(source, Mapping):
        return None
    name = part.get("title")
    if source.get("type") == "base64":
        return _media_from_source(
            source.get("media_type"), data=source.get("data"), name=name, kind=kind
        )
    if source.get("type") == "url":
        return _media_from_source(None, url=source.get("url"), name=name, kind=kind)
    if source.get("type") == "text" and isinstance(source.get("data"), str):
        raw = source["data"].encode("utf-8")
        return DocumentBlock(
            mime_type="text/plain", data=base64.b64encode(raw).decode("ascii"), name=name
        )
    return None


def _mcp_resource(part: Mapping[str, Any]) -> ToolResultContent | None:
    resource = part.get("resource")
    if not isinstance(resource, Mapping):
        return None
    if isinstance(resource.get("text"), str):
        return TextBlock(text=resource["text"])
    if isinstance(resource.get("blob"), str):
        mime = resource.get("mimeType") or "application/octet-stream"
        uri = resource.get("uri")
        name = uri.rsplit("/", 1)[-1] if isinstance(uri, str) else None
        return _media_from_source(mime, data=resource["blob"], name=name)  # type: ignore[return-value]
    return None


def _media_part(
    kind: type[MediaBlock], *, source: bool = False, data: bool = True
) -> Callable[[Mapping[str, Any]], MediaBlock | None]:
    """The converter of one media part type. Our own block: ``{"type", "mime_type", "data" |
    "url"}``; with ``source``, Anthropic's ``{"type", "source"}``; with ``data``, MCP's
    ``{"type", "data", "mimeType"}``."""

    def convert(part: Mapping[str, Any]) -> MediaBlock | None:
        if source and "source" in part:
            return _anthropic_source(part, kind)
        if "mime_type" in part:
            return kind.model_validate(part)
        if data and isinstance(part.get("data"), str):
            return _media_from_source(part.get("mimeType"), data=part["data"], kind=kind)
        return None

    return convert


def _text_part(part: Mapping[str, Any]) -> TextBlock | None:
    text = part.get("text")
    return TextBlock(text=text) if isinstance(text, str) else None


def _image_url_part(part: Mapping[str, Any]) -> MediaBlock | None:
    url = _url_of(part.get("image_url"))
    return None if url is None else _media_from_source(None, url=url, kind=ImageBlock)


def _video_url_part(part: Mapping[str, Any]) -> MediaBlock | None:
    url = _url_of(part.get("video_url"))
    return None if url is None else _media_from_source(None, url=url, kind=VideoBlock)


def _chat_file_part(part: Mapping[str, Any]) -> MediaBlock | None:
    spec = part.get("file")
    return _file_part(spec) if isinstance(spec, Mapping) else None


def _chat_audio_part(part: Mapping[str, Any]) -> MediaBlock | None:
    spec = part.get("input_audio")
    return _audio_part(spec) if isinstance(spec, Mapping) else None


_PART_CONVERTERS: dict[str, Callable[[Mapping[str, Any]], TextBlock | MediaBlock | None]] = {
    # shared by every dialect
    "text": _text_part,
    # OpenAI Responses
    "input_text": _text_part,
    "output_text": _text_part,
    "input_image": _image_url_part,
    "input_video": _video_url_part,
    "input_file": _file_part,
    # OpenAI Chat Completions (and compatible servers)
    "image_url": _image_url_part,
    "video_url": _video_url_part,
    "file": _chat_file_part,
    "input_audio": _chat_audio_part,
    # MCP, Anthropic and this project's own block dicts
    "image": _media_part(ImageBlock, source=True),
    "audio": _media_part(AudioBlock),
    "video": _media_part(VideoBlock),
    "document": _media_part(DocumentBlock, source=True, data=False),
    "resource": _mcp_resource,
}


def _is_part(item: Any) -> bool:
    if isinstance(item, (TextBlock, MediaBlock, bytes, bytearray)):
        return True
    return isinstance(item, Mapping) and item.get("type") in _PART_CONVERTERS


def _is_part_list(items: list[Any] | tuple[Any, ...]) -> bool:
    """A content-part list: every item a block or a typed dict, at least one known."""
    if not any(_is_part(item) for item in items):
        return False
    return all(
        isinstance(item, (TextBlock, MediaBlock, bytes, bytearray))
        or (isinstance(item, Mapping) and isinstance(item.get("type"), str))
        for item in items
    )


def _part_to_block(part: Any) -> ToolResultContent:
    if isinstance(part, (TextBlock, MediaBlock)):
        return part  # type: ignore[return-value]
    if isinstance(part, (bytes, bytearray)):
        return _block_from_raw_bytes(bytes(part))
    converter = _PART_CONVERTERS.get(part.get("type"))
    block: TextBlock | MediaBlock | None = None
    if converter is not None:
        try:
            block = converter(part)
        except (ValidationError, ValueError, TypeError, binascii.Error):
            block = None
    if block is None:
        # Unknown or malformed: keep it, as JSON the model can read.
        return TextBlock(text=json.dumps(part, ensure_ascii=False, default=str))
    return block  # type: ignore[return-value]


def _collapse_text(blocks: list[ToolResultContent]) -> list[ToolResultContent]:
    if blocks and all(isinstance(b, TextBlock) for b in blocks):
        return [TextBlock(text="\n".join(b.text for b in blocks))]  # type: ignore[union-attr]
    return blocks
