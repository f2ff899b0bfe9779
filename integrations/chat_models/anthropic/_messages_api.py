"""Pure conversions for the Anthropic Messages API.

`build_request` turns typed messages, tools and options into exactly the JSON body
of ``POST /v1/messages``; `parse_response` turns the SDK's `anthropic.types.Message`
into a `ChatResult`. Nothing here does I/O, so both are tested on exact JSON.

Wire decisions (documented in ``docs/providers.md``):

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

from collections.abc import Mapping, Sequence
from typing import Any

from anthropic.types import Message

from flink_agents.api.chat_models.chat_model import ToolSpec
from flink_agents.api.chat_result import ChatResult
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
from flink_agents.api.tools.tool import as_tool_metadata
from flink_agents.integrations._sdk_errors import malformed_response
from flink_agents.integrations.chat_models._content_walk import (
    assistant_items,
    split_system,
    tool_result_runs,
    user_items,
)
from flink_agents.integrations.chat_models._media import (
    ASSISTANT_MEDIA_REASON,
    REDACTED_MEDIA_REASON,
    bare_mime,
    decode_base64,
    inline_base64,
)
from flink_agents.integrations.chat_models._reasoning_replay import replay_reasoning
from flink_agents.integrations.chat_models._request_options import pass_through, request_options
from flink_agents.integrations.chat_models._response_result import (
    STOP_REASONS,
    canonical_finish_reason,
    response_blocks,
    sdk_response_result,
)
from flink_agents.integrations.chat_models._sdk_objects import (
    as_json,
    field,
    is_object,
)
from flink_agents.integrations.chat_models._tool_arguments import (
    parse_tool_arguments,
    tool_call_id,
)
from flink_agents.integrations.chat_models._usage import UsageFields

__all__ = [
    "ASSISTANT_MEDIA_REASON",
    "AUDIO_REASON",
    "DEFAULT_MAX_TOKENS",
    "PROVIDER",
    "REDACTED_MEDIA_REASON",
    "SUPPORTED_IMAGE_TYPES",
    "TEXT_DOCUMENT_URL_REASON",
    "USAGE_FIELDS",
    "VIDEO_REASON",
    "build_request",
    "document_type_reason",
    "image_type_reason",
    "parse_response",
]

PROVIDER = "anthropic"
"""`ReasoningBlock.provider` and `ChatModelError.provider` value of this adapter."""

DEFAULT_MAX_TOKENS = 1024
"""``max_tokens`` when the caller gives none (the API requires one)."""

SUPPORTED_IMAGE_TYPES: tuple[str, ...] = ("image/jpeg", "image/png", "image/gif", "image/webp")
"""Image media types the Messages API accepts."""

PDF_TYPE = "application/pdf"
TEXT_TYPE = "text/plain"

AUDIO_REASON = "the Anthropic Messages API does not accept audio"
VIDEO_REASON = "the Anthropic Messages API does not accept video"
TEXT_DOCUMENT_URL_REASON = "a text/plain document is accepted only as base64 data, not by URL"

USAGE_FIELDS = UsageFields(
    input_tokens="input_tokens",
    output_tokens="output_tokens",
    cache_read_tokens="cache_read_input_tokens",
    cache_write_tokens="cache_creation_input_tokens",
    reasoning_tokens="output_tokens_details.thinking_tokens",
    cache_in_input=False,  # no total reported: input + output + cache read + cache write
)
"""Where a message's ``usage`` holds each count (the shared policy of `_usage`)."""

_STOP_REASONS: dict[str, str] = {**STOP_REASONS, "refusal": "refusal"}

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


def build_request(
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
    model, options = request_options(
        params, model_error="an Anthropic request needs a model name: pass model=..."
    )
    max_tokens = options.pop("max_tokens", DEFAULT_MAX_TOKENS)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
        raise ValueError(f"max_tokens must be a non-negative integer, got {max_tokens!r}")

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

    pass_through(request, options)
    return request


def _convert_messages(
    messages: Sequence[ChatMessage],
) -> tuple[str | list[dict[str, Any]] | None, list[dict[str, Any]]]:
    system_texts, conversation = split_system(messages)
    wire: list[dict[str, Any]] = []
    for turn in tool_result_runs(conversation):
        if not isinstance(turn, ChatMessage):  # the results of a run go in one user message
            wire.append({"role": "user", "content": [_tool_result(result) for result in turn]})
        elif turn.role is MessageRole.USER:
            wire.append({"role": "user", "content": _user_content(turn.blocks)})
        else:
            wire.append({"role": "assistant", "content": _assistant_content(turn.blocks)})

    system: str | list[dict[str, Any]] | None
    if not system_texts:
        system = None
    elif len(system_texts) == 1:
        system = system_texts[0]
    else:
        system = [{"type": "text", "text": text} for text in system_texts]
    return system, wire


def _user_content(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    return user_items(blocks, provider=PROVIDER, text=_text_block, media=_media_block)


def _assistant_content(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    return assistant_items(
        blocks,
        provider=PROVIDER,
        text=_text_block,
        tool_call=_tool_use_block,
        reasoning=_thinking_block,
    )


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_use_block(block: ToolCallBlock) -> dict[str, Any]:
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}


def _thinking_block(block: ReasoningBlock) -> dict[str, Any] | None:
    """Anthropic reasoning as it came; None (skipped) for any other reasoning, and for
    reasoning without its signature (the API rejects it)."""
    return replay_reasoning(
        block,
        PROVIDER,
        signed=lambda text, signature: {
            "type": "thinking",
            "thinking": text,
            "signature": signature,
        },
        redacted=lambda data: {"type": "redacted_thinking", "data": data},
    )


def _tool_result(result: ToolResultBlock) -> dict[str, Any]:
    wire: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id}
    if result.is_text_only:
        wire["content"] = result.text
    else:
        content: list[dict[str, Any]] = []
        for block in result.content:
            if isinstance(block, TextBlock):
                if block.text:
                    content.append(_text_block(block.text))
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
    mime = bare_mime(block.mime_type)
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


def _binary_source(block: ImageBlock | DocumentBlock, mime: str) -> dict[str, Any]:
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    data = inline_base64(block)
    if data is not None:
        return {"type": "base64", "media_type": mime, "data": data}
    return {"type": "url", "url": block.url}


def _text_source(block: DocumentBlock) -> dict[str, Any]:
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    data = inline_base64(block)
    if data is None:
        raise UnsupportedContentBlockError(block.type, TEXT_DOCUMENT_URL_REASON, provider=PROVIDER)
    raw = decode_base64(data, "document block: the text/plain data")
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


def _show_mime(mime_type: str) -> str:
    """The media type for an error message: bare, and short."""
    return repr(bare_mime(mime_type)[:80])


# ------------------------------------------------------------------------ response


def parse_response(response: Message) -> ChatResult:
    """The `ChatResult` of the SDK's `Message` (built from the response, unvalidated).

    Raises `ChatModelError` with ``kind="malformed_response"`` when it does not have
    the shape of a message (the SDK hands a body that is not a JSON object over as it is).
    """
    if not isinstance(response, Message):
        raise _malformed(f"expected a JSON object, got {type(response).__name__}")
    content = field(response, "content")
    if not isinstance(content, list):
        raise _malformed("the response has no 'content' list")

    blocks, unknown = response_blocks(content, _response_block, as_json)

    stop_reason = field(response, "stop_reason")
    if stop_reason is not None and not isinstance(stop_reason, str):
        raise _malformed("'stop_reason' is not a string")
    metadata: dict[str, Any] = {"raw_finish_reason": stop_reason}
    for key in ("stop_sequence", "stop_details"):
        value = field(response, key)
        if value is not None:
            metadata[key] = as_json(value)
    usage = field(response, "usage")
    if field(usage, "service_tier") is not None:
        metadata["service_tier"] = field(usage, "service_tier")
    request_id = getattr(response, "_request_id", None)  # the SDK's, from the header
    if request_id:
        metadata["request_id"] = request_id

    finish_reason = canonical_finish_reason(stop_reason, _STOP_REASONS)
    return sdk_response_result(
        PROVIDER, response, USAGE_FIELDS, blocks, unknown, finish_reason, metadata
    )


def _response_block(item: object) -> ContentBlock | None:
    if not is_object(item):
        raise _malformed("a content entry is not an object")
    kind = field(item, "type")
    if kind == "text":
        text = field(item, "text")
        if not isinstance(text, str):
            raise _malformed("a text block has no 'text' string")
        return TextBlock(text=text)
    if kind == "thinking":
        thinking, signature = field(item, "thinking"), field(item, "signature")
        if not isinstance(thinking, str) or not isinstance(signature, str):
            raise _malformed("a thinking block needs 'thinking' and 'signature' strings")
        return ReasoningBlock(text=thinking, signature=signature, provider=PROVIDER)
    if kind == "redacted_thinking":
        data = field(item, "data")
        if not isinstance(data, str):
            raise _malformed("a redacted_thinking block has no 'data' string")
        return ReasoningBlock(redacted_data=data, provider=PROVIDER)
    if kind == "tool_use":
        name = field(item, "name")
        if not isinstance(name, str) or not name:
            raise _malformed("a tool_use block has no 'name'")
        return ToolCallBlock(
            id=tool_call_id(field(item, "id")),
            name=name,
            input=parse_tool_arguments(field(item, "input")),
        )
    return None


def _malformed(detail: str) -> ChatModelError:
    return malformed_response(PROVIDER, detail)
