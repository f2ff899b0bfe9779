"""Pure conversions for the Anthropic Messages API.

`build_messages_request` turns typed messages, tools and options into exactly the
JSON body of ``POST /v1/messages``; `parse_messages_response` turns the response
JSON into a `ChatResult`. Nothing here does I/O, so both are tested on exact JSON.

Wire decisions (documented in ``docs/providers/anthropic.md``):

- System messages, wherever they appear, go to the top-level ``system``: a string
  when there is one non-empty text, else a list of ``text`` blocks in order.
- Consecutive tool messages become one ``user`` message holding one
  ``tool_result`` block per result, in order. A text-only result is one
  concatenated string (``""`` when empty); a result with media is a list of
  ``text`` / ``image`` / ``document`` blocks in order. ``is_error: true`` is sent
  only when the result is an error.
- Media follow one set of rules in user messages and tool results, and raise
  `UnsupportedContentBlockError` with the same reason in both.
- Anthropic reasoning (thinking / redacted thinking) is replayed unchanged in its
  place in assistant messages; reasoning from another provider is skipped.

Response decisions: a ``tool_use`` whose ``input`` is not an object (a string that is
not a JSON object, say) is kept with ``input == {"_raw_arguments": <as sent>}``, as in
every adapter; a block of an unknown type is kept, redacted, in
``metadata["unknown_blocks"]`` and warned about once per type (`_unknown_content`).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from flink_agents.api.chat_models.chat_model import ToolSpec
from flink_agents.api.chat_result import ChatResult, Usage
from flink_agents.api.content_blocks import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    MediaBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from flink_agents.api.errors import ChatModelError, UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.redaction import redact
from flink_agents.api.tool_output import parse_data_uri
from flink_agents.api.tools.tool import as_tool_metadata
from flink_agents.integrations.chat_models._tool_arguments import parse_tool_arguments
from flink_agents.integrations.chat_models._unknown_content import keep_unknown_blocks

__all__ = [
    "ASSISTANT_MEDIA_REASON",
    "AUDIO_REASON",
    "DEFAULT_MAX_TOKENS",
    "PROVIDER",
    "REDACTED_MEDIA_REASON",
    "SUPPORTED_IMAGE_TYPES",
    "TEXT_DOCUMENT_URL_REASON",
    "VIDEO_REASON",
    "build_messages_request",
    "document_type_reason",
    "finish_reason_from_stop_reason",
    "image_type_reason",
    "parse_messages_response",
    "usage_from_response",
]

PROVIDER = "anthropic"
"""`ReasoningBlock.provider` and `ChatModelError.provider` value of this adapter."""

DEFAULT_MAX_TOKENS = 1024
"""``max_tokens`` when the caller gives none (the API requires one)."""

SUPPORTED_IMAGE_TYPES: tuple[str, ...] = ("image/jpeg", "image/png", "image/gif", "image/webp")
"""Image media types the Messages API accepts."""

PDF_TYPE = "application/pdf"
TEXT_TYPE = "text/plain"

ASSISTANT_MEDIA_REASON = (
    "only user messages and tool results can carry media, not assistant messages"
)
AUDIO_REASON = "the Anthropic Messages API does not accept audio"
VIDEO_REASON = "the Anthropic Messages API does not accept video"
TEXT_DOCUMENT_URL_REASON = "a text/plain document is accepted only as base64 data, not by URL"
REDACTED_MEDIA_REASON = "the block was redacted for logging and has no data or URL to send"

_STOP_REASONS: dict[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
}

_TOOL_CHOICE_KEYWORDS = ("auto", "any", "none")


def image_type_reason(mime_type: str) -> str:
    """Why an image of this media type cannot be sent."""
    return (
        f"image type {_show_mime(mime_type)} is not accepted; "
        "use image/jpeg, image/png, image/gif or image/webp"
    )


def document_type_reason(mime_type: str) -> str:
    """Why a document of this media type cannot be sent."""
    return (
        f"document type {_show_mime(mime_type)} is not accepted; "
        "use application/pdf, or text/plain as base64 data"
    )


# ------------------------------------------------------------------------- request


def build_messages_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None = None,
    **params: Any,
) -> dict[str, Any]:
    """The JSON body of a ``POST /v1/messages`` call.

    Options: ``model`` (required), ``max_tokens`` (default `DEFAULT_MAX_TOKENS`),
    ``temperature``, ``thinking_budget_tokens`` (-> ``thinking``), ``tool_choice``
    (``"auto"``, ``"any"``, ``"none"``, a tool name, or the API's dict),
    ``stop_sequences``; any other non-None parameter is passed through as a
    top-level field. Raises `UnsupportedContentBlockError` for a block Anthropic
    cannot take and ``ValueError`` for bad options or undecodable text documents,
    before anything is sent.
    """
    options = {key: value for key, value in params.items() if value is not None}
    model = options.pop("model", None)
    if not isinstance(model, str) or not model:
        raise ValueError("an Anthropic request needs a model name: pass model=...")
    max_tokens = options.pop("max_tokens", DEFAULT_MAX_TOKENS)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
        raise ValueError(f"max_tokens must be a non-negative integer, got {max_tokens!r}")
    if options.pop("stream", False):
        raise ValueError("streaming is not supported here: the adapter reads whole responses")

    system, wire_messages = _convert_messages(messages)
    request: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": wire_messages}
    if system is not None:
        request["system"] = system
    if tools:
        request["tools"] = [_tool_definition(tool) for tool in tools]

    temperature = options.pop("temperature", None)
    if temperature is not None:
        request["temperature"] = temperature
    budget = options.pop("thinking_budget_tokens", None)
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
            raise ValueError(f"thinking_budget_tokens must be a positive integer, got {budget!r}")
        if "thinking" in options:
            raise ValueError("pass either thinking_budget_tokens or thinking, not both")
        request["thinking"] = {"type": "enabled", "budget_tokens": budget}
    tool_choice = options.pop("tool_choice", None)
    if tool_choice is not None:
        request["tool_choice"] = _tool_choice(tool_choice)
    stop_sequences = options.pop("stop_sequences", None)
    if stop_sequences is not None:
        request["stop_sequences"] = (
            [stop_sequences] if isinstance(stop_sequences, str) else list(stop_sequences)
        )

    for key, value in options.items():
        if key in request:
            raise ValueError(f"parameter {key!r} conflicts with a field the adapter sets")
        request[key] = value
    return request


def _convert_messages(
    messages: Sequence[ChatMessage],
) -> tuple[str | list[dict[str, Any]] | None, list[dict[str, Any]]]:
    system_texts: list[str] = []
    wire: list[dict[str, Any]] = []
    pending_results: list[dict[str, Any]] = []

    def flush_results() -> None:
        if pending_results:
            wire.append({"role": "user", "content": list(pending_results)})
            pending_results.clear()

    for message in messages:
        if message.role is MessageRole.SYSTEM:
            system_texts.extend(
                b.text for b in message.blocks if isinstance(b, TextBlock) and b.text
            )
        elif message.role is MessageRole.TOOL:
            result = message.tool_result_block
            assert result is not None
            pending_results.append(_tool_result(result))
        elif message.role is MessageRole.USER:
            flush_results()
            wire.append({"role": "user", "content": _user_content(message.blocks)})
        else:
            flush_results()
            wire.append({"role": "assistant", "content": _assistant_content(message.blocks)})
    flush_results()

    system: str | list[dict[str, Any]] | None
    if not system_texts:
        system = None
    elif len(system_texts) == 1:
        system = system_texts[0]
    else:
        system = [{"type": "text", "text": text} for text in system_texts]
    return system, wire


def _user_content(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            if block.text:
                content.append({"type": "text", "text": block.text})
        elif isinstance(block, MediaBlock):
            content.append(_media_block(block))
        else:  # pragma: no cover - the role matrix of ChatMessage forbids it
            raise UnsupportedContentBlockError(
                block.type, "a user message holds text and media only", provider=PROVIDER
            )
    return content


def _assistant_content(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            if block.text:
                content.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCallBlock):
            content.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
        elif isinstance(block, ReasoningBlock):
            thinking = _thinking_block(block)
            if thinking is not None:
                content.append(thinking)
        elif isinstance(block, MediaBlock):
            raise UnsupportedContentBlockError(
                block.type, ASSISTANT_MEDIA_REASON, provider=PROVIDER
            )
        else:  # pragma: no cover - the role matrix of ChatMessage forbids it
            raise UnsupportedContentBlockError(
                block.type, "an assistant message cannot hold it", provider=PROVIDER
            )
    return content


def _thinking_block(block: ReasoningBlock) -> dict[str, Any] | None:
    """Anthropic reasoning as it came; None (skipped) for any other reasoning."""
    if block.provider != PROVIDER:
        return None
    if block.redacted_data is not None:
        return {"type": "redacted_thinking", "data": block.redacted_data}
    if block.signature is None:
        # Without its signature the API rejects a thinking block: it is not replayable.
        return None
    return {"type": "thinking", "thinking": block.text, "signature": block.signature}


def _tool_result(result: ToolResultBlock) -> dict[str, Any]:
    wire: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id}
    if result.is_text_only:
        wire["content"] = result.text
    else:
        content: list[dict[str, Any]] = []
        for block in result.content:
            if isinstance(block, TextBlock):
                if block.text:
                    content.append({"type": "text", "text": block.text})
            else:
                content.append(_media_block(block))
        wire["content"] = content
    if result.is_error:
        wire["is_error"] = True
    return wire


def _media_block(block: MediaBlock) -> dict[str, Any]:
    """An ``image`` or ``document`` block (user messages and tool results alike)."""
    if isinstance(block, AudioBlock):
        raise UnsupportedContentBlockError(block.type, AUDIO_REASON, provider=PROVIDER)
    if isinstance(block, VideoBlock):
        raise UnsupportedContentBlockError(block.type, VIDEO_REASON, provider=PROVIDER)
    mime = _bare_mime(block.mime_type)
    if isinstance(block, ImageBlock):
        if mime not in SUPPORTED_IMAGE_TYPES:
            raise UnsupportedContentBlockError(
                block.type, image_type_reason(block.mime_type), provider=PROVIDER
            )
        return {"type": "image", "source": _binary_source(block, mime)}
    if isinstance(block, DocumentBlock):
        if mime == PDF_TYPE:
            source = _binary_source(block, mime)
        elif mime == TEXT_TYPE:
            source = _text_source(block)
        else:
            raise UnsupportedContentBlockError(
                block.type, document_type_reason(block.mime_type), provider=PROVIDER
            )
        document: dict[str, Any] = {"type": "document", "source": source}
        if block.name:
            document["title"] = block.name
        return document
    raise UnsupportedContentBlockError(  # pragma: no cover - no other media kinds exist
        str(getattr(block, "type", "media")), "unknown media kind", provider=PROVIDER
    )


def _inline_data(block: ImageBlock | DocumentBlock) -> str | None:
    """The base64 payload of a block given as data or as a ``data:`` URI, else None."""
    if block.data is not None:
        return block.data
    if block.url is not None:
        parsed = parse_data_uri(block.url)
        if parsed is not None:
            return parsed[1]
    return None


def _binary_source(block: ImageBlock | DocumentBlock, mime: str) -> dict[str, Any]:
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    data = _inline_data(block)
    if data is not None:
        return {"type": "base64", "media_type": mime, "data": data}
    return {"type": "url", "url": block.url}


def _text_source(block: DocumentBlock) -> dict[str, Any]:
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    data = _inline_data(block)
    if data is None:
        raise UnsupportedContentBlockError(block.type, TEXT_DOCUMENT_URL_REASON, provider=PROVIDER)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("document block: the text/plain data is not valid base64") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("document block: the text/plain data is not valid UTF-8") from None
    return {"type": "text", "media_type": TEXT_TYPE, "data": text}


def _tool_definition(tool: ToolSpec) -> dict[str, Any]:
    metadata = as_tool_metadata(tool)
    return {
        "name": metadata.name,
        "description": metadata.description,
        "input_schema": metadata.args_schema,
    }


def _tool_choice(choice: Any) -> dict[str, Any]:
    if isinstance(choice, Mapping):
        return dict(choice)
    if isinstance(choice, str) and choice:
        if choice in _TOOL_CHOICE_KEYWORDS:
            return {"type": choice}
        return {"type": "tool", "name": choice}
    raise ValueError(
        f"tool_choice must be 'auto', 'any', 'none', a tool name or a dict, got {choice!r}"
    )


def _bare_mime(mime_type: str) -> str:
    """``image/PNG; charset=x`` -> ``image/png``."""
    return mime_type.split(";", 1)[0].strip().lower()


def _show_mime(mime_type: str) -> str:
    """The media type for an error message: bare, and short."""
    return repr(_bare_mime(mime_type)[:80])


# ------------------------------------------------------------------------ response


def parse_messages_response(body: Any) -> ChatResult:
    """The `ChatResult` of a Messages API response body (parsed JSON).

    Raises `ChatModelError` with ``kind="malformed_response"`` when the body does not
    have the shape of a message.
    """
    if not isinstance(body, Mapping):
        raise _malformed(f"expected a JSON object, got {type(body).__name__}")
    content = body.get("content")
    if not isinstance(content, list):
        raise _malformed("the response has no 'content' list")

    blocks: list[ContentBlock] = []
    unknown: list[Mapping[str, Any]] = []
    for item in content:
        if not isinstance(item, Mapping):
            raise _malformed("a content entry is not an object")
        block = _response_block(item)
        if block is None:
            unknown.append(item)
        else:
            blocks.append(block)

    stop_reason = body.get("stop_reason")
    if stop_reason is not None and not isinstance(stop_reason, str):
        raise _malformed("'stop_reason' is not a string")
    metadata: dict[str, Any] = {"raw_finish_reason": stop_reason}
    if body.get("stop_sequence") is not None:
        metadata["stop_sequence"] = body["stop_sequence"]
    if body.get("stop_details") is not None:
        metadata["stop_details"] = body["stop_details"]
    usage_body = body.get("usage")
    if isinstance(usage_body, Mapping) and usage_body.get("service_tier") is not None:
        metadata["service_tier"] = usage_body["service_tier"]

    model = body.get("model")
    response_id = body.get("id")
    try:
        result = ChatResult(
            message=ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks),
            model=model if isinstance(model, str) else None,
            response_id=response_id if isinstance(response_id, str) else None,
            usage=usage_from_response(usage_body),
            finish_reason=finish_reason_from_stop_reason(stop_reason),
            metadata=metadata,
        )
    except ValueError:  # pydantic: two tool calls with one id
        raise _malformed("the content blocks do not form a valid assistant message") from None
    return keep_unknown_blocks(PROVIDER, result, unknown)


def finish_reason_from_stop_reason(stop_reason: str | None) -> str | None:
    """The canonical finish reason, or Anthropic's own value when none fits."""
    if stop_reason is None:
        return None
    return _STOP_REASONS.get(stop_reason, stop_reason)


def usage_from_response(usage: Any) -> Usage:
    """`Usage` from the response's ``usage`` object; unknown counts stay None.

    ``total_tokens`` is input + output + cache read + cache write, set only when
    input and output are both known (a missing cache count adds nothing).
    """
    if not isinstance(usage, Mapping):
        return Usage()
    input_tokens = _count(usage.get("input_tokens"))
    output_tokens = _count(usage.get("output_tokens"))
    cache_read = _count(usage.get("cache_read_input_tokens"))
    cache_write = _count(usage.get("cache_creation_input_tokens"))
    details = usage.get("output_tokens_details")
    reasoning = _count(details.get("thinking_tokens")) if isinstance(details, Mapping) else None
    total = None
    if input_tokens is not None and output_tokens is not None:
        total = input_tokens + output_tokens + (cache_read or 0) + (cache_write or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        total_tokens=total,
    )


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _response_block(item: Mapping[str, Any]) -> ContentBlock | None:
    kind = item.get("type")
    if kind == "text":
        text = item.get("text")
        if not isinstance(text, str):
            raise _malformed("a text block has no 'text' string")
        return TextBlock(text=text)
    if kind == "thinking":
        thinking, signature = item.get("thinking"), item.get("signature")
        if not isinstance(thinking, str) or not isinstance(signature, str):
            raise _malformed("a thinking block needs 'thinking' and 'signature' strings")
        return ReasoningBlock(text=thinking, signature=signature, provider=PROVIDER)
    if kind == "redacted_thinking":
        data = item.get("data")
        if not isinstance(data, str):
            raise _malformed("a redacted_thinking block has no 'data' string")
        return ReasoningBlock(redacted_data=data, provider=PROVIDER)
    if kind == "tool_use":
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise _malformed("a tool_use block has no 'name'")
        call_id = item.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = "call_" + uuid.uuid4().hex
        return ToolCallBlock(id=call_id, name=name, input=parse_tool_arguments(item.get("input")))
    return None


def _malformed(detail: str) -> ChatModelError:
    return ChatModelError(
        redact(f"{PROVIDER} sent a malformed response: {detail}"),
        retryable=False,
        provider=PROVIDER,
        kind="malformed_response",
    )
