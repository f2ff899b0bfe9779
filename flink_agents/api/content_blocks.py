"""Typed content blocks: the ordered parts that make up a `ChatMessage`.

Every block is a small pydantic model with a ``type`` discriminator, so a list of
blocks round-trips through JSON exactly. Media blocks carry either base64 ``data``
or a ``url`` (exactly one), plus optional descriptive fields that stay when a
message is sanitized for logs. Raw ``bytes`` given as ``data`` are base64-encoded (and
``size_bytes`` and ``sha256`` filled in when not given).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "MEDIA_BLOCK_CLASSES",
    "AudioBlock",
    "ContentBlock",
    "DocumentBlock",
    "ImageBlock",
    "MediaBlock",
    "ReasoningBlock",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "ToolResultContent",
    "VideoBlock",
    "base64_decoded_size",
    "media_block_class",
]


class _Block(BaseModel):
    model_config = ConfigDict(frozen=False, extra="forbid")

    def __repr_args__(self) -> Any:
        # Omit defaults so test failures read well.
        for name, value in super().__repr_args__():
            field = type(self).model_fields.get(name) if name else None
            if field is not None and not field.is_required() and value == field.default:
                continue
            yield name, value


class TextBlock(_Block):
    """Plain text."""

    type: Literal["text"] = "text"
    text: str
    """The text itself."""


class MediaBlock(_Block):
    """Common shape of image, audio, video and document blocks.

    Exactly one of ``data`` (base64) or ``url`` is set, except in the log-safe form
    made by `ChatMessage.sanitize`, where both are dropped and ``redacted`` is true.
    """

    mime_type: str = Field(min_length=1)
    """IANA media type, for example ``image/png`` or ``application/pdf``."""
    data: str | None = None
    """Base64-encoded content (no ``data:`` prefix); raw ``bytes`` given here are encoded."""
    url: str | None = None
    """Where the content can be fetched (``https:``, ``gs:``, ``data:``...)."""
    name: str | None = None
    """A file name or title, when known."""
    size_bytes: int | None = Field(default=None, ge=0)
    """Size of the decoded content, when known."""
    sha256: str | None = None
    """Hex SHA-256 of the decoded content, when known."""
    redacted: bool = False
    """True in the log-safe form: ``data`` and ``url`` were removed."""

    _mime_prefix: str = ""

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str, *, name: str | None = None) -> Self:
        """A block of raw ``data``: base64-encoded, with ``size_bytes`` and ``sha256``.
        (``data=b"..."`` in the constructor does the same; this is the typed spelling.)"""
        return cls(mime_type=mime_type, data=data, name=name)  # pyright: ignore[reportArgumentType]

    @model_validator(mode="before")
    @classmethod
    def _encode_bytes(cls, values: Any) -> Any:
        # Without this, pydantic would read b"raw" as the text 'raw' (not base64).
        if not isinstance(values, dict):
            return values
        raw = values.get("data")
        if not isinstance(raw, (bytes, bytearray, memoryview)):
            return values
        raw = bytes(raw)
        encoded = dict(values)
        encoded["data"] = base64.b64encode(raw).decode("ascii")
        if encoded.get("size_bytes") is None:
            encoded["size_bytes"] = len(raw)
        if encoded.get("sha256") is None:
            encoded["sha256"] = hashlib.sha256(raw).hexdigest()
        return encoded

    @model_validator(mode="after")
    def _check_source(self) -> MediaBlock:
        kind = type(self).model_fields["type"].default
        if self.redacted:
            if self.data is not None or self.url is not None:
                raise ValueError(f"a redacted {kind} block carries neither data nor url")
        elif (self.data is None) == (self.url is None):
            raise ValueError(f"a {kind} block needs exactly one of data (base64) or url")
        prefix = self._mime_prefix
        if prefix and not self.mime_type.lower().startswith(prefix):
            raise ValueError(f"a {kind} block needs a {prefix}* mime type, got {self.mime_type!r}")
        return self

    def redact(self) -> MediaBlock:
        """The log-safe copy: same descriptive fields, no data and no URL."""
        size = self.size_bytes
        if size is None and self.data is not None:
            size = base64_decoded_size(self.data)
        return self.model_copy(
            update={"data": None, "url": None, "size_bytes": size, "redacted": True}
        )


def base64_decoded_size(data: str) -> int:
    """Size in bytes of what a base64 string decodes to, without decoding it."""
    stripped = data.strip()
    padding = len(stripped) - len(stripped.rstrip("="))
    return max(0, (len(stripped) * 3) // 4 - padding)


class ImageBlock(MediaBlock):
    """An image (PNG, JPEG, GIF, WebP...)."""

    type: Literal["image"] = "image"
    _mime_prefix = "image/"


class AudioBlock(MediaBlock):
    """An audio clip."""

    type: Literal["audio"] = "audio"
    _mime_prefix = "audio/"


class VideoBlock(MediaBlock):
    """A video clip."""

    type: Literal["video"] = "video"
    _mime_prefix = "video/"


class DocumentBlock(MediaBlock):
    """A document: PDF, plain text, or another file type."""

    type: Literal["document"] = "document"


MEDIA_BLOCK_CLASSES: dict[str, type[MediaBlock]] = {
    "image": ImageBlock,
    "audio": AudioBlock,
    "video": VideoBlock,
    "document": DocumentBlock,
}
"""The media block class of each ``kind``."""


def media_block_class(mime_type: str) -> type[MediaBlock]:
    """The block class for ``mime_type``, by its major type (`DocumentBlock` for any other)."""
    return MEDIA_BLOCK_CLASSES.get(mime_type.split("/", 1)[0].lower(), DocumentBlock)


class ReasoningBlock(_Block):
    """Model reasoning, with the provider's opaque continuation data.

    Providers need their reasoning back, unchanged and in place, on later turns;
    ``provider`` says which one produced it so it is never sent to another.
    """

    type: Literal["reasoning"] = "reasoning"
    text: str = ""
    """Readable reasoning or its summary (may be empty when redacted)."""
    provider: str | None = None
    """Which provider API produced it: ``anthropic``, ``openai-responses``..."""
    signature: str | None = None
    """Anthropic's thinking signature."""
    redacted_data: str | None = None
    """Anthropic's redacted-thinking payload."""
    encrypted_content: str | None = None
    """OpenAI Responses' encrypted reasoning content."""
    id: str | None = None
    """The provider's id for the reasoning item, when it has one."""
    summary: list[str] | None = None
    """OpenAI Responses' summary texts, in order, when the reasoning came as a summary."""


class ToolCallBlock(_Block):
    """A request from the model to run a tool."""

    type: Literal["tool_call"] = "tool_call"
    id: str = Field(min_length=1)
    """Call id; the matching `ToolResultBlock` carries the same id."""
    name: str = Field(min_length=1)
    """The tool's name."""
    input: dict[str, Any] = Field(default_factory=dict)
    """Arguments, as a JSON object."""
    signature: str | None = None
    """The provider's opaque signature of the call (Gemini's thought signature, base64),
    sent back with the call on later turns."""

    @classmethod
    def from_upstream(cls, call: Mapping[str, Any]) -> ToolCallBlock:
        """Upstream's tool call dict, ``{"id", "type": "function", "function": {"name",
        "arguments"}}`` (``arguments`` a dict or its JSON text; the provider's
        ``original_id``, when there, is the call's id), as a block."""
        function = call.get("function")
        if not isinstance(function, Mapping):
            raise ValueError(
                f"a tool call dict needs a 'function' with 'name' and 'arguments', got {call!r}"
            )
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        call_id = call.get("original_id") or call.get("id")
        return cls(id=str(call_id), name=function.get("name", ""), input=arguments)

    def __getitem__(self, key: str) -> Any:
        """Upstream's dict view of the call (``call["function"]["name"]``...)."""
        view: dict[str, Any] = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.input},
            "original_id": self.id,
        }
        return view[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Upstream's dict view, as `dict.get`."""
        try:
            return self[key]
        except KeyError:
            return default


ToolResultContent = Annotated[
    TextBlock | ImageBlock | AudioBlock | VideoBlock | DocumentBlock,
    Field(discriminator="type"),
]
"""What a tool result may hold: text and media."""


class ToolResultBlock(_Block):
    """The model-facing result of one tool call."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str = Field(min_length=1)
    """Id of the `ToolCallBlock` this answers."""
    content: list[ToolResultContent] = Field(default_factory=list)
    """Text and media, in order."""
    is_error: bool = False
    """True when the tool failed; the content then says why."""

    @property
    def text(self) -> str:
        """The text blocks of the content, concatenated in order."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def is_text_only(self) -> bool:
        """True when every content block is text (also when there is none)."""
        return all(isinstance(b, TextBlock) for b in self.content)


ContentBlock = Annotated[
    TextBlock
    | ImageBlock
    | AudioBlock
    | VideoBlock
    | DocumentBlock
    | ReasoningBlock
    | ToolCallBlock
    | ToolResultBlock,
    Field(discriminator="type"),
]
"""Any block a `ChatMessage` can hold."""
