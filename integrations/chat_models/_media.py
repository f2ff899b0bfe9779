"""Media blocks on the wire: media types, ``data:`` URIs, and the reasons all adapters share.

A `MediaBlock` carries exactly one of ``data`` (base64) or ``url``, and a ``url`` may
itself be a ``data:`` URI. Each API wants one of three forms: the bare base64 payload
(Anthropic sources, Chat Completions audio and files), a URL or ``data:`` URI
(OpenAI images and files), or the payload decoded (Anthropic text documents).
"""

from __future__ import annotations

import base64
import binascii

from flink_agents.api.content_blocks import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    MediaBlock,
    VideoBlock,
)
from flink_agents.api.tool_output import parse_data_uri

__all__ = [
    "ASSISTANT_MEDIA_REASON",
    "MEDIA_TYPES",
    "REDACTED_MEDIA_REASON",
    "Media",
    "bare_mime",
    "decode_base64",
    "inline_base64",
    "is_data_uri",
    "url_or_data_uri",
]

Media = ImageBlock | AudioBlock | VideoBlock | DocumentBlock
"""Every kind of media block (what a media conversion takes)."""

MEDIA_TYPES = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)
"""The media block classes, for ``isinstance``."""

ASSISTANT_MEDIA_REASON = (
    "only user messages and tool results can carry media, not assistant messages"
)
"""Why a media block in an assistant message is not sent (every adapter)."""

REDACTED_MEDIA_REASON = "the block was redacted for logging and has no data or URL to send"
"""Why a block from `ChatMessage.sanitize` is not sent (every adapter)."""


def bare_mime(mime_type: str) -> str:
    """``image/PNG; charset=x`` -> ``image/png``."""
    return mime_type.split(";", 1)[0].strip().lower()


def inline_base64(block: MediaBlock) -> str | None:
    """The base64 payload of a block given as ``data`` or as a ``data:`` URL, else None."""
    if block.data is not None:
        return block.data
    if block.url is not None:
        parsed = parse_data_uri(block.url)
        if parsed is not None:
            return parsed[1]
    return None


def url_or_data_uri(block: MediaBlock) -> str:
    """The block's URL, or its ``data`` as a ``data:`` URI with the block's media type."""
    if block.data is not None:
        return f"data:{block.mime_type};base64,{block.data}"
    if block.url is None:
        raise ValueError("a media block without data or url has nothing to send")
    return block.url


def is_data_uri(url: str | None) -> bool:
    """True for a ``data:`` URI (any case)."""
    return url is not None and url[:5].lower() == "data:"


def decode_base64(data: str, what: str) -> bytes:
    """The bytes of base64 ``data`` (for an API that takes bytes); ``ValueError`` naming
    ``what`` when it is not valid base64 (before anything is sent)."""
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} is not valid base64") from None
