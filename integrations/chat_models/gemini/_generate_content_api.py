"""Pure conversions for the Gemini API's ``generateContent``, through ``google-genai``.

`build_request` turns typed messages, tools and options into the arguments of the
SDK's ``client.aio.models.generate_content``: ``{"model", "contents", "config"}`` in the
SDK's own field names (``inline_data``, ``function_call``, ``thought_signature``...;
payloads and signatures as ``bytes``). The SDK makes the JSON body of
``POST /{version}/models/{model}:generateContent`` from them. `parse_response` turns the
body the API answered into a `ChatResult`. Nothing here does I/O.

Why the body as it came: ``google-genai`` validates a response against its models, so a
count of the wrong type fails the whole answer and a part of a type it does not know
comes back empty. The connection asks the SDK for the raw body
(``should_return_http_response``) and `parse_response` reads the API's JSON (camelCase),
keeping what it does not convert in ``metadata["unknown_blocks"]`` as every adapter does.

Wire decisions (documented in ``docs/providers.md``):

- System messages, wherever they are, go to ``config.system_instruction``, one text
  part each, in order. Assistant messages have the role ``model``.
- One block is one part, in order; parts are never merged (Gemini checks signatures
  per part).
- Thought signatures are sent back on the part they came with: a thought part is a
  `ReasoningBlock` (``provider="gemini"``, ``signature``), a function call a
  `ToolCallBlock` (``signature``), and a signature on a text part is kept as an empty
  Gemini `ReasoningBlock` directly before that `TextBlock` (sent back on the text part).
  Reasoning from another provider is not sent.
- A function call Gemini sent without an id gets one (``call_`` + 32 hex digits, as
  every adapter makes them); an id of that form is never sent, neither on the call nor
  on its response. A provider id is sent back on both.
- Consecutive tool messages are one ``user`` content of ``function_response`` parts
  (``name`` from the call they answer; ``response`` is ``{"output": text}``, or
  ``{"error": text}`` for an error result). Images (PNG, JPEG, WebP), PDF and plain
  text go in the function response's ``parts``; other media go, by ``tool_media``, in a
  ``user`` content right after (``"function_response"``, the default), all media go
  there (``"user_message"``, for models before Gemini 3), or they raise
  (``"error"``).
- Media in user messages: base64 (or a ``data:`` URL) as ``inline_data``, a URL as
  ``file_data``; any image, audio, video or document type (the API decides).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from flink_agents.api.chat_models.chat_model import ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.content_blocks import (
    ContentBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from flink_agents.api.errors import ChatModelError, UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.tools.tool import as_tool_metadata
from flink_agents.integrations._sdk_errors import malformed_response
from flink_agents.integrations.chat_models._content_walk import (
    refuse_in_assistant_message,
    split_system,
    tool_calls_by_id,
    tool_result_runs,
    user_items,
)
from flink_agents.integrations.chat_models._media import (
    REDACTED_MEDIA_REASON,
    Media,
    bare_mime,
    decode_base64,
    inline_base64,
)
from flink_agents.integrations.chat_models._request_options import pass_through, request_options
from flink_agents.integrations.chat_models._response_result import (
    assistant_result,
    canonical_finish_reason,
    response_blocks,
)
from flink_agents.integrations.chat_models._text_tool_messages import (
    listed_medium,
    media_parts,
    with_media_list,
)
from flink_agents.integrations.chat_models._tool_arguments import (
    parse_tool_arguments,
    tool_call_id,
)
from flink_agents.integrations.chat_models._usage import UsageFields, usage_from_response

__all__ = [
    "FUNCTION_RESPONSE_TYPES",
    "PROVIDER",
    "TOOL_MEDIA_ERROR_REASON",
    "USAGE_FIELDS",
    "ToolMedia",
    "build_request",
    "finish_reason_from_gemini",
    "is_generated_id",
    "parse_response",
    "response_json",
]

PROVIDER = "gemini"
"""`ReasoningBlock.provider` and `ChatModelError.provider` value of this adapter."""

ToolMedia = Literal["function_response", "user_message", "error"]
"""Where media from a tool go (see the module doc)."""

FUNCTION_RESPONSE_TYPES: tuple[str, ...] = (
    "image/png",
    "image/jpeg",
    "image/webp",
    "application/pdf",
    "text/plain",
)
"""Media types a function response carries in its own ``parts`` (Gemini 3 models)."""

TOOL_MEDIA_ERROR_REASON = (
    "a Gemini function response carries only PNG, JPEG and WebP images, PDF and plain "
    "text (tool_media='error'; use tool_media='function_response' to send other media "
    "in a user message after the function responses)"
)

USAGE_FIELDS = UsageFields(
    input_tokens="promptTokenCount",
    output_tokens="candidatesTokenCount",
    total_tokens="totalTokenCount",
    cache_read_tokens="cachedContentTokenCount",
    reasoning_tokens="thoughtsTokenCount",
    reasoning_in_output=False,  # thoughts are counted apart from the candidates
)
"""Where ``usageMetadata`` holds each count (the shared policy of `_usage`). The prompt
count includes the cached tokens."""

_GENERATED_ID = re.compile(r"call_[0-9a-f]{32}")

_FINISH_REASONS: dict[str, str] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
}

_TOOL_CHOICE_MODES = {"auto": "AUTO", "none": "NONE", "any": "ANY", "required": "ANY"}

_CANDIDATE_METADATA = {
    "finishMessage": "finish_message",
    "safetyRatings": "safety_ratings",
    "citationMetadata": "citation_metadata",
    "groundingMetadata": "grounding_metadata",
    "urlContextMetadata": "url_context_metadata",
    "avgLogprobs": "avg_logprobs",
}


def is_generated_id(call_id: str) -> bool:
    """True for an id an adapter made up (``call_`` + 32 hex digits): never sent to Gemini."""
    return _GENERATED_ID.fullmatch(call_id) is not None


# ------------------------------------------------------------------------- request


def build_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None = None,
    **params: Any,
) -> dict[str, Any]:
    """The arguments of ``generate_content``: ``{"model", "contents", "config"}``.

    Options: ``model`` (required), ``tool_choice`` (``"auto"``, ``"none"``, ``"any"`` /
    ``"required"``, a tool name, or the SDK's ``tool_config`` dict), ``include_thoughts``,
    ``thinking_budget`` and ``thinking_level`` (into ``thinking_config``), ``tool_media``
    (`ToolMedia`); any other non-None parameter (``temperature``, ``max_output_tokens``,
    ``top_p``, ``stop_sequences``, ``safety_settings``...) is a field of the SDK's
    ``GenerateContentConfig`` and goes into ``config`` as it is. Raises
    `UnsupportedContentBlockError` for a block Gemini cannot take and ``ValueError`` for
    bad options, before anything is sent.
    """
    model, options = request_options(
        params, model_error="a Gemini request needs a model name: pass model=..."
    )
    tool_media = options.pop("tool_media", "function_response")
    if tool_media not in ("function_response", "user_message", "error"):
        raise ValueError(
            f"tool_media must be 'function_response', 'user_message' or 'error', got {tool_media!r}"
        )

    system, contents = _convert_messages(messages, tool_media)
    config: dict[str, Any] = {}
    if system:
        config["system_instruction"] = {"parts": [{"text": text} for text in system]}
    if tools:
        declarations = [_function_declaration(tool) for tool in tools]
        config["tools"] = [{"function_declarations": declarations}]
    tool_choice = options.pop("tool_choice", None)
    if tool_choice is not None:
        config["tool_config"] = _tool_config(tool_choice)
    thinking = {
        key: options.pop(key)
        for key in ("include_thoughts", "thinking_budget", "thinking_level")
        if key in options
    }
    if thinking:
        if "thinking_config" in options:
            raise ValueError("pass thinking_config or its fields, not both")
        config["thinking_config"] = thinking
    pass_through(config, options)
    return {"model": model, "contents": contents, "config": config}


def _convert_messages(
    messages: Sequence[ChatMessage], tool_media: ToolMedia
) -> tuple[list[str], list[dict[str, Any]]]:
    calls = tool_calls_by_id(messages)
    system, conversation = split_system(messages)
    contents: list[dict[str, Any]] = []
    for turn in tool_result_runs(conversation):
        if not isinstance(turn, ChatMessage):
            # The run's function responses in one user turn, the media they moved in another.
            moved: list[dict[str, Any]] = []
            responses = [_function_response(result, calls, tool_media, moved) for result in turn]
            contents.append({"role": "user", "parts": responses})
            if moved:
                contents.append({"role": "user", "parts": moved})
        elif turn.role is MessageRole.USER:
            contents.append({"role": "user", "parts": _user_parts(turn.blocks)})
        else:
            parts = _model_parts(turn.blocks)
            if parts:  # an answer with only other providers' reasoning has nothing to send
                contents.append({"role": "model", "parts": parts})
    return system, contents


def _user_parts(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    return user_items(
        blocks, provider=PROVIDER, text=lambda text: {"text": text}, media=_media_part
    )


def _model_parts(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    text_signature: str | None = None  # from an empty Gemini reasoning block
    for index, block in enumerate(blocks):
        if isinstance(block, ReasoningBlock):
            if block.provider != PROVIDER:
                continue  # another provider's reasoning means nothing to Gemini
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            if not block.text and block.signature and isinstance(following, TextBlock):
                text_signature = block.signature
                continue
            if not block.text and not block.signature:
                continue
            part: dict[str, Any] = {"text": block.text, "thought": True}
            _sign(part, block.signature)
            parts.append(part)
        elif isinstance(block, TextBlock):
            if block.text or text_signature:
                part = {"text": block.text}
                _sign(part, text_signature)
                parts.append(part)
            text_signature = None
        elif isinstance(block, ToolCallBlock):
            call: dict[str, Any] = {"name": block.name, "args": dict(block.input)}
            if not is_generated_id(block.id):
                call["id"] = block.id
            part = {"function_call": call}
            _sign(part, block.signature)
            parts.append(part)
        else:
            refuse_in_assistant_message(block, PROVIDER)
    return parts


def _sign(part: dict[str, Any], signature: str | None) -> None:
    if signature is not None:
        part["thought_signature"] = decode_base64(signature, "a Gemini thought signature")


def _function_response(
    result: ToolResultBlock,
    calls: Mapping[str, ToolCallBlock],
    tool_media: ToolMedia,
    moved: list[dict[str, Any]],
) -> dict[str, Any]:
    call = calls.get(result.call_id)
    if call is None:
        raise ValueError(
            f"the tool result for call {result.call_id!r} answers no tool call of the "
            "history: Gemini needs the function's name, which the call carries"
        )
    media = [block for block in result.content if not isinstance(block, TextBlock)]
    parts: list[dict[str, Any]] = []
    listed: list[str] = []
    labelled: list[tuple[str, dict[str, Any]]] = []
    names: set[str] = set()
    for number, block in enumerate(media, start=1):
        native = bare_mime(block.mime_type) in FUNCTION_RESPONSE_TYPES
        if native and tool_media != "user_message":
            parts.append(_function_response_part(block, _display_name(block, number, names)))
            continue
        if tool_media == "error":
            raise UnsupportedContentBlockError(
                block.type, TOOL_MEDIA_ERROR_REASON, provider=PROVIDER
            )
        listed.append(listed_medium(block, number))
        labelled.append((f"{block.type} {number}", _media_part(block)))
    source = call.name if is_generated_id(call.id) else f"{call.name} {call.id}"
    moved.extend(media_parts(labelled, source, lambda text: {"text": text}))
    text = with_media_list(result.text, listed) if listed else result.text
    response: dict[str, Any] = {
        "name": call.name,
        "response": {"error" if result.is_error else "output": text},
    }
    if not is_generated_id(call.id):
        response["id"] = call.id
    if parts:
        response["parts"] = parts
    return {"function_response": response}


def _display_name(block: Media, number: int, used: set[str]) -> str:
    """A name for the part, unique within its function response."""
    name = block.name or f"{block.type}_{number}"
    if name in used:
        name = f"{number}_{name}"
    used.add(name)
    return name


def _function_response_part(block: Media, display_name: str) -> dict[str, Any]:
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    mime = bare_mime(block.mime_type)
    data = inline_base64(block)
    if data is not None:
        payload = decode_base64(data, f"the {block.type} block's data")
        return {"inline_data": {"mime_type": mime, "data": payload, "display_name": display_name}}
    return {"file_data": {"file_uri": block.url, "mime_type": mime, "display_name": display_name}}


def _media_part(block: Media) -> dict[str, Any]:
    """``inline_data`` for base64 (or a ``data:`` URL), ``file_data`` for a URL."""
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    mime = bare_mime(block.mime_type)
    data = inline_base64(block)
    if data is not None:
        return {
            "inline_data": {"mime_type": mime, "data": decode_base64(data, f"{block.type} data")}
        }
    return {"file_data": {"file_uri": block.url, "mime_type": mime}}


def _function_declaration(tool: ToolSpec) -> dict[str, Any]:
    metadata = as_tool_metadata(tool)
    declaration: dict[str, Any] = {"name": metadata.name}
    if metadata.description:
        declaration["description"] = metadata.description
    declaration["parameters_json_schema"] = metadata.args_schema
    return declaration


def _tool_config(choice: Any) -> dict[str, Any]:
    if isinstance(choice, Mapping):
        return dict(choice)
    if isinstance(choice, str) and choice:
        mode = _TOOL_CHOICE_MODES.get(choice)
        if mode is not None:
            return {"function_calling_config": {"mode": mode}}
        return {"function_calling_config": {"mode": "ANY", "allowed_function_names": [choice]}}
    raise ValueError(
        "tool_choice must be 'auto', 'none', 'any', 'required', a tool name or a dict, "
        f"got {choice!r}"
    )


# ------------------------------------------------------------------------ response


def response_json(response: Any) -> Any:
    """The API's JSON of a response: the raw body the SDK kept
    (``should_return_http_response``), or the SDK's typed response as JSON."""
    if isinstance(response, (str, bytes)):
        try:
            return json.loads(response)
        except ValueError:
            raise _malformed("the body is not JSON") from None
    http = getattr(response, "sdk_http_response", None)
    body = getattr(http, "body", None)
    if isinstance(body, str) and body:
        return response_json(body)
    dump = getattr(response, "model_dump", None)
    if callable(dump):
        return dump(mode="json", by_alias=True, exclude_none=True, exclude={"sdk_http_response"})
    return response


def parse_response(response: Any) -> ChatResult:
    """The `ChatResult` of a ``generate_content`` response.

    ``response`` is what the SDK returned (its raw body is read when it kept it), a body
    as text, or the parsed JSON. Raises `ChatModelError` with
    ``kind="malformed_response"`` when it does not have the shape of a response.
    """
    body = response_json(response)
    if not isinstance(body, Mapping):
        raise _malformed(f"expected a JSON object, got {type(body).__name__}")
    candidates = body.get("candidates")
    metadata: dict[str, Any] = {}
    feedback = body.get("promptFeedback")
    if feedback is not None:
        metadata["prompt_feedback"] = feedback
    usage = usage_from_response(body.get("usageMetadata"), USAGE_FIELDS)
    model = body.get("modelVersion") if isinstance(body.get("modelVersion"), str) else None
    response_id = body.get("responseId") if isinstance(body.get("responseId"), str) else None

    if not candidates:
        block_reason = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
        if not isinstance(block_reason, str):
            raise _malformed("the response has no candidates and no block reason")
        metadata["raw_finish_reason"] = block_reason
        return ChatResult(
            message=ChatMessage(role=MessageRole.ASSISTANT, blocks=[]),
            model=model,
            response_id=response_id,
            usage=usage,
            finish_reason="content_filter",
            metadata=metadata,
        )
    if not isinstance(candidates, list) or not isinstance(candidates[0], Mapping):
        raise _malformed("'candidates' is not a list of objects")
    candidate = candidates[0]
    content = candidate.get("content") or {}
    if not isinstance(content, Mapping):
        raise _malformed("a candidate's 'content' is not an object")
    parts = content.get("parts") or []
    if not isinstance(parts, list):
        raise _malformed("a candidate's 'parts' is not a list")

    blocks, unknown = response_blocks(parts, _response_blocks, _as_object)

    raw_finish = candidate.get("finishReason")
    if raw_finish is not None and not isinstance(raw_finish, str):
        raise _malformed("'finishReason' is not a string")
    metadata["raw_finish_reason"] = raw_finish
    for key, name in _CANDIDATE_METADATA.items():
        if candidate.get(key) is not None:
            metadata[name] = candidate[key]
    has_calls = any(isinstance(block, ToolCallBlock) for block in blocks)
    finish = finish_reason_from_gemini(raw_finish, has_tool_calls=has_calls)
    return assistant_result(
        PROVIDER, blocks, unknown, finish, usage, metadata, model=model, response_id=response_id
    )


def finish_reason_from_gemini(reason: str | None, *, has_tool_calls: bool = False) -> str | None:
    """The canonical finish reason, or Gemini's own value when none fits. Gemini ends a
    turn with function calls as ``STOP``: that is ``tool_calls``."""
    if reason is None:
        return "tool_calls" if has_tool_calls else None
    if reason == "STOP" and has_tool_calls:
        return "tool_calls"
    return canonical_finish_reason(reason, _FINISH_REASONS)


def _response_blocks(part: object) -> list[ContentBlock] | None:
    """The blocks of one part; None for a part this adapter does not convert."""
    part = _as_object(part)
    signature = part.get("thoughtSignature")
    if signature is not None and not isinstance(signature, str):
        raise _malformed("a 'thoughtSignature' is not a string")
    call = part.get("functionCall")
    if call is not None:
        if not isinstance(call, Mapping):
            raise _malformed("a 'functionCall' is not an object")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise _malformed("a function call has no 'name'")
        return [
            ToolCallBlock(
                id=tool_call_id(call.get("id")),
                name=name,
                input=parse_tool_arguments(call.get("args")),
                signature=signature,
            )
        ]
    if "text" not in part:
        return None
    text = part["text"]
    if not isinstance(text, str):
        raise _malformed("a text part's 'text' is not a string")
    if part.get("thought") is True:
        return [ReasoningBlock(text=text, signature=signature, provider=PROVIDER)]
    if signature is not None:  # kept before the text it belongs to
        return [ReasoningBlock(signature=signature, provider=PROVIDER), TextBlock(text=text)]
    return [TextBlock(text=text)] if text else []


def _as_object(part: object) -> Mapping[str, Any]:
    if not isinstance(part, Mapping):
        raise _malformed("a part is not an object")
    return part


def _malformed(detail: str) -> ChatModelError:
    return malformed_response(PROVIDER, detail)
