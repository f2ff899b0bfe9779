"""OpenAI Responses API: typed messages to the request body, response body to `ChatResult`.

Pure functions only; `OpenAIResponsesChatModelConnection` sends what
`build_request` returns and turns the SDK's `Response` into a `ChatResult` with
`parse_response`.

Requests
  * system message -> ``{"type": "message", "role": "system", "content": [input_text...]}``
    (in place; the top-level ``instructions`` field is left to the caller's params).
  * user message -> a ``message`` item with ``input_text`` / ``input_image`` / ``input_file``
    parts; audio and video raise `UnsupportedContentBlockError`.
  * assistant message -> in block order: runs of text as an assistant ``message`` item with
    ``output_text`` parts, each tool call as a ``function_call`` item, each
    ``openai-responses`` reasoning block as the ``reasoning`` item it came from. Media
    raise; reasoning from other providers is skipped.
  * tool message -> one ``function_call_output`` item: ``output`` is the concatenated text
    when the result is text only (``""`` when empty), else a list of parts in block order
    built exactly as for a user message. The error flag is not sent.

Responses
  * ``message`` items give text (a ``refusal`` part gives its text and finish reason
    ``refusal``), ``function_call`` items give `ToolCallBlock`s, ``reasoning`` items give
    `ReasoningBlock`s (``provider="openai-responses"``) with id, summary and encrypted content.
  * ``function_call`` arguments that are not a JSON object keep the call, with
    ``input == {"_raw_arguments": <as sent>}`` (sent back verbatim), as in every adapter.
  * output items and message parts of other types are kept, redacted, in
    ``metadata["unknown_blocks"]`` and warned about once per type (`_unknown_content`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openai.types.responses import Response

from flink_agents.api.chat_models.chat_model import ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.content_blocks import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultContent,
    VideoBlock,
)
from flink_agents.api.errors import ChatModelError, UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.redaction import redact
from flink_agents.api.tools.tool import ToolMetadata, as_tool_metadata
from flink_agents.integrations._sdk_errors import malformed_response
from flink_agents.integrations.chat_models._media import (
    ASSISTANT_MEDIA_REASON,
    REDACTED_MEDIA_REASON,
    is_data_uri,
    url_or_data_uri,
)
from flink_agents.integrations.chat_models._request_options import request_options
from flink_agents.integrations.chat_models._response_result import sdk_response_result
from flink_agents.integrations.chat_models._sdk_objects import (
    as_json,
    field,
    is_object,
    str_field,
)
from flink_agents.integrations.chat_models._tool_arguments import (
    arguments_json,
    parse_tool_arguments,
    tool_call_id,
)
from flink_agents.integrations.chat_models._usage import UsageFields

__all__ = [
    "ASSISTANT_MEDIA_REASON",
    "ENCRYPTED_REASONING_INCLUDE",
    "PROVIDER",
    "REDACTED_MEDIA_REASON",
    "UNSUPPORTED_MEDIA_REASON",
    "USAGE_FIELDS",
    "build_request",
    "input_items",
    "media_part",
    "parse_response",
    "tool_definition",
]

PROVIDER = "openai-responses"
"""Name used in errors and in `ReasoningBlock.provider`."""

UNSUPPORTED_MEDIA_REASON = (
    "the OpenAI Responses API takes text, images and documents, not audio or video"
)
"""Reason for audio and video, the same in user messages and tool results."""

ENCRYPTED_REASONING_INCLUDE = "reasoning.encrypted_content"
"""The ``include`` value that makes reasoning items carry their encrypted content."""

USAGE_FIELDS = UsageFields(
    input_tokens="input_tokens",  # cached tokens included
    output_tokens="output_tokens",
    total_tokens="total_tokens",
    cache_read_tokens="input_tokens_details.cached_tokens",
    cache_write_tokens="input_tokens_details.cache_write_tokens",
    reasoning_tokens="output_tokens_details.reasoning_tokens",
)
"""Where a response's ``usage`` holds each count (the shared policy of `_usage`)."""

_MEDIA = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)
_RESERVED_PARAMS = frozenset({"input", "tools", "stream"})
_TOOL_CHOICE_MODES = frozenset({"auto", "none", "required"})


# --------------------------------------------------------------------------- request


def build_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None = None,
    **params: Any,
) -> dict[str, Any]:
    """The JSON body of ``POST /responses`` for this conversation.

    ``params`` must hold ``model``. Recognized options: ``max_output_tokens``,
    ``temperature``, ``reasoning_effort`` / ``reasoning_summary`` (into ``reasoning``),
    ``tool_choice`` (``auto``/``none``/``required``, a tool name, or the wire dict),
    ``store``, and ``encrypted_reasoning`` (adds ``include=["reasoning.encrypted_content"]``
    and, unless ``store`` is given, ``store=false``). Other keys are sent as they are;
    ``None`` values are left out. Raises `UnsupportedContentBlockError` for blocks the API
    cannot take, before anything is sent.
    """
    reserved = sorted(_RESERVED_PARAMS.intersection(k for k, v in params.items() if v is not None))
    if reserved:
        raise ValueError(f"parameters {reserved} are set by the adapter and cannot be passed")
    model, options = request_options(
        params, model_error="an OpenAI Responses request needs a model name (param 'model')"
    )

    request: dict[str, Any] = {"model": model, "input": input_items(messages)}
    if tools:
        request["tools"] = [tool_definition(as_tool_metadata(tool)) for tool in tools]

    reasoning = dict(options.pop("reasoning", None) or {})
    effort = options.pop("reasoning_effort", None)
    summary = options.pop("reasoning_summary", None)
    if effort is not None:
        reasoning["effort"] = effort
    if summary is not None:
        reasoning["summary"] = summary
    if reasoning:
        request["reasoning"] = reasoning

    tool_choice = options.pop("tool_choice", None)
    if tool_choice is not None:
        request["tool_choice"] = _tool_choice(tool_choice)

    include = list(options.pop("include", None) or [])
    if options.pop("encrypted_reasoning", False):
        if ENCRYPTED_REASONING_INCLUDE not in include:
            include.append(ENCRYPTED_REASONING_INCLUDE)
        options.setdefault("store", False)
    if include:
        request["include"] = include

    request.update(options)
    return request


def tool_definition(tool: ToolMetadata) -> dict[str, Any]:
    """A function tool as the Responses API declares it (non-strict schema)."""
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.args_schema,
        "strict": False,
    }


def input_items(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The ``input`` items for a conversation, in order."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role is MessageRole.SYSTEM:
            items.append(_input_message("system", message.blocks))
        elif message.role is MessageRole.USER:
            items.append(_input_message("user", message.blocks))
        elif message.role is MessageRole.ASSISTANT:
            items.extend(_assistant_items(message.blocks))
        else:
            result = message.tool_result_block
            assert result is not None
            items.append(_function_call_output(result))
    return items


def media_part(block: ToolResultContent) -> dict[str, Any]:
    """The content part for a text or media block, the same in user messages and tool results.

    Text -> ``input_text``; image -> ``input_image`` (``image_url`` is the URL or a
    ``data:`` URI, ``detail: auto``); document -> ``input_file`` (base64 as a ``data:``
    URI in ``file_data`` with ``filename`` defaulting to ``document``; a URL as
    ``file_url``, with ``filename`` only when the block is named). Audio and video raise.
    """
    if isinstance(block, TextBlock):
        return {"type": "input_text", "text": block.text}
    if isinstance(block, (AudioBlock, VideoBlock)):
        raise UnsupportedContentBlockError(block.type, UNSUPPORTED_MEDIA_REASON, provider=PROVIDER)
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    if isinstance(block, ImageBlock):
        return {"type": "input_image", "image_url": url_or_data_uri(block), "detail": "auto"}
    if isinstance(block, DocumentBlock):
        if block.data is not None or is_data_uri(block.url):
            # Inline content (base64, or a data: URI given as the URL) travels as file_data.
            return {
                "type": "input_file",
                "file_data": url_or_data_uri(block),
                "filename": block.name or "document",
            }
        part: dict[str, Any] = {"type": "input_file", "file_url": block.url}
        if block.name:
            part["filename"] = block.name
        return part
    raise UnsupportedContentBlockError(
        block.type, "this block type is not supported", provider=PROVIDER
    )


def _input_message(role: str, blocks: Sequence[ContentBlock]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, (TextBlock, *_MEDIA)):
            raise UnsupportedContentBlockError(
                block.type, f"a {role} message cannot carry it", provider=PROVIDER
            )
        parts.append(media_part(block))
    return {"type": "message", "role": role, "content": parts}


def _assistant_items(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    text_parts: list[dict[str, Any]] = []

    def flush_text() -> None:
        if text_parts:
            items.append({"type": "message", "role": "assistant", "content": list(text_parts)})
            text_parts.clear()

    for block in blocks:
        if isinstance(block, TextBlock):
            text_parts.append({"type": "output_text", "text": block.text, "annotations": []})
        elif isinstance(block, _MEDIA):
            raise UnsupportedContentBlockError(
                block.type, ASSISTANT_MEDIA_REASON, provider=PROVIDER
            )
        elif isinstance(block, ToolCallBlock):
            flush_text()
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": arguments_json(block.input),
                }
            )
        elif isinstance(block, ReasoningBlock):
            if block.provider != PROVIDER or block.id is None:
                # Another provider's (or an id-less) reasoning cannot be continued here.
                continue
            flush_text()
            items.append(_reasoning_item(block))
        else:  # pragma: no cover - the role matrix allows nothing else
            raise UnsupportedContentBlockError(
                block.type, "an assistant message cannot carry it", provider=PROVIDER
            )
    flush_text()
    return items


def _reasoning_item(block: ReasoningBlock) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": block.id,
        "summary": [{"type": "summary_text", "text": text} for text in block.summary or []],
    }
    if block.encrypted_content is not None:
        item["encrypted_content"] = block.encrypted_content
    return item


def _function_call_output(result: ToolResultBlock) -> dict[str, Any]:
    output: str | list[dict[str, Any]] = (
        result.text if result.is_text_only else [media_part(b) for b in result.content]
    )
    return {"type": "function_call_output", "call_id": result.call_id, "output": output}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, str) and choice not in _TOOL_CHOICE_MODES:
        return {"type": "function", "name": choice}
    return choice


# -------------------------------------------------------------------------- response


def parse_response(response: Response) -> ChatResult:
    """The `ChatResult` of the SDK's `Response` (built from the response, unvalidated).

    Raises `ChatModelError` with ``kind="malformed_response"`` when it does not have
    the response shape (the SDK hands a body that is not a JSON object over as it is),
    and ``kind="response_failed"`` for ``status: failed``.
    """
    if not isinstance(response, Response):
        raise _malformed(f"the body is a {type(response).__name__}, not an object")
    output = field(response, "output")
    if not isinstance(output, list):
        raise _malformed("'output' is missing or not a list")
    status = field(response, "status")
    if status == "failed":
        raise _failed(field(response, "error"))

    blocks: list[ContentBlock] = []
    refusals: list[str] = []
    unknown: list[Mapping[str, Any]] = []
    for item in output:
        if not is_object(item):
            raise _malformed("an output item is not an object")
        kind = field(item, "type")
        if kind == "message":
            blocks.extend(_message_blocks(item, refusals, unknown))
        elif kind == "function_call":
            blocks.append(_tool_call_block(item))
        elif kind == "reasoning":
            blocks.append(_reasoning_block(item))
        else:
            unknown.append(as_json(item))

    finish_reason, raw_reason = _finish_reason(response, blocks, refusals)
    metadata: dict[str, Any] = {"raw_finish_reason": raw_reason, "status": status}
    if refusals:
        metadata["refusal"] = "".join(refusals)
    service_tier = field(response, "service_tier")
    if service_tier is not None:
        metadata["service_tier"] = service_tier
    created_at = field(response, "created_at")
    if created_at is not None:
        metadata["created_at"] = _as_sent(created_at)

    return sdk_response_result(
        PROVIDER, response, USAGE_FIELDS, blocks, unknown, finish_reason, metadata
    )


def _message_blocks(
    item: object, refusals: list[str], unknown: list[Mapping[str, Any]]
) -> list[ContentBlock]:
    content = field(item, "content")
    if not isinstance(content, list):
        raise _malformed("a message item has no content list")
    blocks: list[ContentBlock] = []
    for part in content:
        if not is_object(part):
            raise _malformed("a message content part is not an object")
        kind = field(part, "type")
        if kind == "output_text":
            blocks.append(TextBlock(text=_required_str(part, "text")))
        elif kind == "refusal":
            text = _required_str(part, "refusal")
            refusals.append(text)
            blocks.append(TextBlock(text=text))
        else:
            unknown.append(as_json(part))
    return blocks


def _tool_call_block(item: object) -> ToolCallBlock:
    name = _required_str(item, "name")
    return ToolCallBlock(
        id=tool_call_id(field(item, "call_id")),
        name=name,
        input=parse_tool_arguments(field(item, "arguments")),
    )


def _reasoning_block(item: object) -> ReasoningBlock:
    summary = _texts(field(item, "summary"))
    content = _texts(field(item, "content"))
    encrypted = field(item, "encrypted_content")
    return ReasoningBlock(
        text="\n\n".join(content or summary),
        provider=PROVIDER,
        id=str_field(item, "id"),
        summary=summary,
        encrypted_content=encrypted if isinstance(encrypted, str) else None,
    )


def _texts(parts: object) -> list[str]:
    """The ``text`` of each part that has one (reasoning summaries and content)."""
    if not isinstance(parts, list):
        return []
    texts = (field(part, "text") for part in parts)
    return [text for text in texts if isinstance(text, str)]


def _finish_reason(
    response: object, blocks: Sequence[ContentBlock], refusals: Sequence[str]
) -> tuple[str | None, str | None]:
    status = field(response, "status")
    raw: str | None = status if isinstance(status, str) else None
    if status == "incomplete":
        reason = field(field(response, "incomplete_details"), "reason")
        raw = reason if isinstance(reason, str) else "incomplete"
        if refusals:
            return "refusal", raw
        if raw == "max_output_tokens":
            return "length", raw
        if raw == "content_filter":
            return "content_filter", raw
        return raw, raw
    if refusals:
        return "refusal", raw
    if status == "completed" or status is None:
        if any(isinstance(b, ToolCallBlock) for b in blocks):
            return "tool_calls", raw
        return "stop", raw
    return raw, raw


def _as_sent(value: object) -> object:
    """A number as the server sent it: the SDK declares ``created_at`` a float, and
    turns the integer the API sends into one."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _required_str(value: object, key: str) -> str:
    text = field(value, key)
    if not isinstance(text, str):
        raise _malformed(f"field {key!r} is missing or not a string")
    return text


def _malformed(detail: str) -> ChatModelError:
    return malformed_response(PROVIDER, detail)


_RETRYABLE_FAILURE_CODES = frozenset({"server_error", "rate_limit_exceeded"})


def _failed(error: object) -> ChatModelError:
    code = field(error, "code")
    message = field(error, "message")
    text = f"{PROVIDER} response failed: {message or 'no error message'}"
    return ChatModelError(
        redact(text + (f" ({code})" if code else "")),
        retryable=code in _RETRYABLE_FAILURE_CODES,
        provider=PROVIDER,
        kind="response_failed",
    )
