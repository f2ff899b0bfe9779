"""Pure conversions for Amazon Bedrock's Converse API, through ``boto3``.

`build_request` turns typed messages, tools and options into the keyword arguments of
``bedrock-runtime``'s ``converse`` (the Converse request, ``modelId`` included, as boto3
takes it: media and redacted reasoning as ``bytes``, which boto3 sends as base64);
`parse_response` turns the dict ``converse`` returns into a `ChatResult`. Nothing here
does I/O.

Wire decisions (documented in ``docs/providers.md``):

- System messages, wherever they are, go to the top-level ``system`` list, one text
  block each, in order.
- Messages of one role in a row (a run of tool results and the user message after it,
  say) are one message: the Converse API wants the roles to alternate.
- Tool results are ``toolResult`` blocks (``status: "error"`` only for an error
  result) holding text, ``json`` (a document of type ``application/json``, or any text
  that is a JSON object with ``json_tool_results``), image, document and video blocks.
- Media are sent as bytes, or by an ``s3://`` URL (``s3Location``); other URLs, and
  types the API has no format for, raise before anything is sent. A document's name is
  its ``name`` with the characters Bedrock refuses replaced (``report-pdf``), else
  ``document-N``.
- Bedrock reasoning (``provider="bedrock"``) is sent back in place: signed text as
  ``reasoningText`` (``text``, ``signature``), redacted as ``redactedContent``; reasoning
  without a signature, or from another provider, is not sent.
- A tool-call id the API would refuse (more than 64 characters, or others than
  letters, digits, ``_ . : -``) is replaced, on the call and its result alike, by
  ``t`` + a hash of it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

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
    VideoBlock,
)
from flink_agents.api.errors import ChatModelError, UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.tools.tool import as_tool_metadata
from flink_agents.integrations._sdk_errors import malformed_response
from flink_agents.integrations.chat_models._content_walk import (
    assistant_items,
    split_system,
    user_items,
)
from flink_agents.integrations.chat_models._media import (
    REDACTED_MEDIA_REASON,
    Media,
    bare_mime,
    decode_base64,
    inline_base64,
)
from flink_agents.integrations.chat_models._reasoning_replay import replay_reasoning
from flink_agents.integrations.chat_models._request_options import request_options
from flink_agents.integrations.chat_models._response_result import (
    STOP_REASONS,
    assistant_result,
    canonical_finish_reason,
    response_blocks,
)
from flink_agents.integrations.chat_models._tool_arguments import (
    parse_tool_arguments,
    tool_call_id,
)
from flink_agents.integrations.chat_models._usage import UsageFields, usage_from_response

__all__ = [
    "AUDIO_FORMATS",
    "CONVERSE_FIELDS",
    "DOCUMENT_FORMATS",
    "IMAGE_FORMATS",
    "PROVIDER",
    "TOOL_RESULT_AUDIO_REASON",
    "URL_REASON",
    "USAGE_FIELDS",
    "VIDEO_FORMATS",
    "build_request",
    "parse_response",
]

PROVIDER = "bedrock"
"""`ReasoningBlock.provider` and `ChatModelError.provider` value of this adapter."""

IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
VIDEO_FORMATS = {
    "video/x-matroska": "mkv",
    "video/quicktime": "mov",
    "video/mp4": "mp4",
    "video/webm": "webm",
    "video/x-flv": "flv",
    "video/mpeg": "mpeg",
    "video/mpg": "mpg",
    "video/x-ms-wmv": "wmv",
    "video/3gpp": "three_gp",
}
AUDIO_FORMATS = {
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/flac": "flac",
    "audio/ogg": "ogg",
    "audio/opus": "opus",
    "audio/aac": "aac",
    "audio/x-m4a": "m4a",
    "audio/webm": "webm",
}
"""Media types -> the Converse ``format`` of each media block."""

CONVERSE_FIELDS = frozenset(
    {
        "guardrailConfig",
        "additionalModelRequestFields",
        "promptVariables",
        "additionalModelResponseFieldPaths",
        "requestMetadata",
        "performanceConfig",
        "serviceTier",
        "outputConfig",
        "inferenceConfig",
    }
)
"""Request fields a parameter may set as they are; any other unknown parameter goes into
``additionalModelRequestFields`` (the model's own request fields, e.g. ``top_k``)."""

URL_REASON = "Bedrock takes media as bytes or from an s3:// location, not by URL"
TOOL_RESULT_AUDIO_REASON = "a Bedrock tool result cannot carry audio"
JSON_TYPE = "application/json"

USAGE_FIELDS = UsageFields(
    input_tokens="inputTokens",
    output_tokens="outputTokens",
    total_tokens="totalTokens",
    cache_read_tokens="cacheReadInputTokens",
    cache_write_tokens="cacheWriteInputTokens",
    cache_in_input=False,  # inputTokens leaves out what was read from or written to the cache
)
"""Where the response's ``usage`` holds each count (the shared policy of `_usage`)."""

_STOP_REASONS: dict[str, str] = {
    **STOP_REASONS,
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
_RESPONSE_METADATA = {
    "additionalModelResponseFields": "additional_model_response_fields",
    "trace": "trace",
    "performanceConfig": "performance_config",
    "serviceTier": "service_tier",
}
_INFERENCE_OPTIONS = {
    "max_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
    "stop_sequences": "stopSequences",
}
_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_.:-]{1,64}")
_NAME_REFUSED = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")


# ------------------------------------------------------------------------- request


def build_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None = None,
    **params: Any,
) -> dict[str, Any]:
    """The keyword arguments of ``converse``.

    Options: ``model`` (required: the model or inference profile id), ``max_tokens``,
    ``temperature``, ``top_p``, ``stop_sequences`` (into ``inferenceConfig``),
    ``tool_choice`` (``"auto"``, ``"any"`` / ``"required"``, a tool name, or the API's
    dict), ``thinking_budget_tokens`` (Anthropic models: ``thinking`` in
    ``additionalModelRequestFields``), ``json_tool_results``; a `CONVERSE_FIELDS` name
    is a request field (dicts are merged with what the options set); any other non-None
    parameter goes into ``additionalModelRequestFields``. Raises
    `UnsupportedContentBlockError` for a block Bedrock cannot take and ``ValueError`` for
    bad options, before anything is sent.
    """
    model, options = request_options(
        params, model_error="a Bedrock request needs a model id: pass model=..."
    )
    json_results = bool(options.pop("json_tool_results", False))

    system, wire_messages = _convert_messages(messages, json_results=json_results)
    request: dict[str, Any] = {"modelId": model, "messages": wire_messages}
    if system:
        request["system"] = [{"text": text} for text in system]

    inference = {
        wire: options.pop(name) for name, wire in _INFERENCE_OPTIONS.items() if name in options
    }
    if isinstance(inference.get("stopSequences"), str):
        inference["stopSequences"] = [inference["stopSequences"]]
    model_fields: dict[str, Any] = {}
    budget = options.pop("thinking_budget_tokens", None)
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
            raise ValueError(f"thinking_budget_tokens must be a positive integer, got {budget!r}")
        model_fields["thinking"] = {"type": "enabled", "budget_tokens": budget}
    tool_choice = options.pop("tool_choice", None)
    if tools:
        tool_config: dict[str, Any] = {"tools": [_tool_spec(tool) for tool in tools]}
        if tool_choice is not None:
            tool_config["toolChoice"] = _tool_choice(tool_choice)
        request["toolConfig"] = tool_config
    elif tool_choice is not None:
        raise ValueError("tool_choice needs tools: the Converse API sends it with them")

    for key in list(options):
        if key not in CONVERSE_FIELDS:
            model_fields[key] = options.pop(key)
    if inference:
        options["inferenceConfig"] = _merge("inferenceConfig", options, inference)
    if model_fields:
        options["additionalModelRequestFields"] = _merge(
            "additionalModelRequestFields", options, model_fields
        )
    request.update(options)
    return request


def _merge(name: str, options: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    given = options.get(name) or {}
    if not isinstance(given, Mapping):
        raise ValueError(f"{name} must be a dict, got {type(given).__name__}")
    clash = sorted(set(given) & set(fields))
    if clash:
        raise ValueError(f"{name} sets {clash}, which options set too; give them once")
    return {**given, **fields}


def _convert_messages(
    messages: Sequence[ChatMessage], *, json_results: bool
) -> tuple[list[str], list[dict[str, Any]]]:
    system, conversation = split_system(messages)
    wire: list[dict[str, Any]] = []
    documents = _DocumentNames()

    def append(role: str, content: list[dict[str, Any]]) -> None:
        if not content:
            return
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(content)  # the roles must alternate
        else:
            wire.append({"role": role, "content": content})

    for message in conversation:
        if message.role is MessageRole.TOOL:
            result = message.tool_result_block
            assert result is not None
            append("user", [_tool_result(result, documents, json_results=json_results)])
        elif message.role is MessageRole.USER:
            append("user", _user_content(message.blocks, documents))
        else:
            append("assistant", _assistant_content(message.blocks))
    return system, wire


def _user_content(
    blocks: Sequence[ContentBlock], documents: _DocumentNames
) -> list[dict[str, Any]]:
    return user_items(
        blocks,
        provider=PROVIDER,
        text=_text_block,
        media=lambda block: _media_block(block, documents),
    )


def _assistant_content(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    return assistant_items(
        blocks,
        provider=PROVIDER,
        text=_text_block,
        tool_call=_tool_use_block,
        reasoning=_reasoning_block,
    )


def _text_block(text: str) -> dict[str, Any]:
    return {"text": text}


def _tool_use_block(block: ToolCallBlock) -> dict[str, Any]:
    return {
        "toolUse": {"toolUseId": _tool_use_id(block.id), "name": block.name, "input": block.input}
    }


def _reasoning_block(block: ReasoningBlock) -> dict[str, Any] | None:
    """Bedrock reasoning as it came; None (not sent) for any other reasoning, and for
    unsigned reasoning (the model cannot check it)."""
    return replay_reasoning(
        block,
        PROVIDER,
        signed=lambda text, signature: {
            "reasoningContent": {"reasoningText": {"text": text, "signature": signature}}
        },
        redacted=lambda data: {
            "reasoningContent": {"redactedContent": decode_base64(data, "redacted reasoning")}
        },
    )


def _tool_result(
    result: ToolResultBlock, documents: _DocumentNames, *, json_results: bool
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, TextBlock):
            if block.text:
                content.append(_text_or_json(block.text, json_results))
        elif isinstance(block, AudioBlock):
            raise UnsupportedContentBlockError(
                block.type, TOOL_RESULT_AUDIO_REASON, provider=PROVIDER
            )
        elif isinstance(block, DocumentBlock) and bare_mime(block.mime_type) == JSON_TYPE:
            content.append({"json": _json_document(block)})
        else:
            content.append(_media_block(block, documents))
    wire: dict[str, Any] = {"toolUseId": _tool_use_id(result.call_id), "content": content}
    if result.is_error:
        wire["status"] = "error"
    return {"toolResult": wire}


def _text_or_json(text: str, json_results: bool) -> dict[str, Any]:
    if json_results:
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return {"json": value}
    return {"text": text}


def _json_document(block: DocumentBlock) -> Any:
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    data = inline_base64(block)
    if data is None:
        raise UnsupportedContentBlockError(
            block.type, "a JSON document is sent as its data, not by URL", provider=PROVIDER
        )
    try:
        return json.loads(decode_base64(data, "the JSON document"))
    except ValueError:
        raise ValueError("document block: the application/json data is not valid JSON") from None


def _media_block(block: Media, documents: _DocumentNames) -> dict[str, Any]:
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    mime = bare_mime(block.mime_type)
    formats = _formats(block)
    wire_format = formats.get(mime)
    if wire_format is None:
        raise UnsupportedContentBlockError(
            block.type,
            f"{block.type} type {mime[:80]!r} is not accepted; use one of "
            f"{', '.join(sorted(formats))}",
            provider=PROVIDER,
        )
    wire: dict[str, Any] = {"format": wire_format, "source": _source(block)}
    if isinstance(block, DocumentBlock):
        wire["name"] = documents.name(block)
    return {block.type: wire}


def _formats(block: Media) -> dict[str, str]:
    if isinstance(block, ImageBlock):
        return IMAGE_FORMATS
    if isinstance(block, VideoBlock):
        return VIDEO_FORMATS
    if isinstance(block, AudioBlock):
        return AUDIO_FORMATS
    return DOCUMENT_FORMATS


def _source(block: Media) -> dict[str, Any]:
    data = inline_base64(block)
    if data is not None:
        return {"bytes": decode_base64(data, f"the {block.type} block's data")}
    url = block.url or ""
    if url[:5].lower() == "s3://":
        return {"s3Location": {"uri": url}}
    raise UnsupportedContentBlockError(block.type, URL_REASON, provider=PROVIDER)


class _DocumentNames:
    """Document names as Bedrock takes them (letters, digits, single spaces, hyphens,
    parentheses, square brackets), unique within a request."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def name(self, block: Media) -> str:
        base = " ".join(_NAME_REFUSED.sub("-", block.name or "").split())[:190].strip("-")
        base = base or f"document-{len(self._used) + 1}"
        name, number = base, 2
        while name in self._used:
            name, number = f"{base} ({number})", number + 1
        self._used.add(name)
        return name


def _tool_use_id(call_id: str) -> str:
    if _TOOL_USE_ID.fullmatch(call_id):
        return call_id
    return "t" + hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:40]


def _tool_spec(tool: ToolSpec) -> dict[str, Any]:
    metadata = as_tool_metadata(tool)
    spec: dict[str, Any] = {"name": metadata.name}
    if metadata.description:
        spec["description"] = metadata.description
    spec["inputSchema"] = {"json": metadata.args_schema}
    return {"toolSpec": spec}


def _tool_choice(choice: Any) -> dict[str, Any]:
    if isinstance(choice, Mapping):
        return dict(choice)
    if choice == "auto":
        return {"auto": {}}
    if choice in ("any", "required"):
        return {"any": {}}
    if choice == "none":
        raise ValueError("the Converse API has no tool_choice 'none': send no tools instead")
    if isinstance(choice, str) and choice:
        return {"tool": {"name": choice}}
    raise ValueError(f"tool_choice must be 'auto', 'any', a tool name or a dict, got {choice!r}")


# ------------------------------------------------------------------------ response


def parse_response(response: Any, *, model: str | None = None) -> ChatResult:
    """The `ChatResult` of what ``converse`` returned (a dict; blobs as ``bytes``).

    ``model`` is the model id the request named (the response names none). Raises
    `ChatModelError` with ``kind="malformed_response"`` for a response of the wrong shape.
    """
    if not isinstance(response, Mapping):
        raise _malformed(f"expected a JSON object, got {type(response).__name__}")
    output = response.get("output")
    message = output.get("message") if isinstance(output, Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        raise _malformed("the response has no output.message.content list")

    blocks, unknown = response_blocks(content, _response_block, _unknown)

    stop_reason = response.get("stopReason")
    if stop_reason is not None and not isinstance(stop_reason, str):
        raise _malformed("'stopReason' is not a string")
    metadata: dict[str, Any] = {"raw_finish_reason": stop_reason}
    metrics = response.get("metrics")
    if isinstance(metrics, Mapping) and metrics.get("latencyMs") is not None:
        metadata["latency_ms"] = metrics["latencyMs"]
    for key, name in _RESPONSE_METADATA.items():
        if response.get(key) is not None:
            metadata[name] = _jsonable(response[key])
    request_id = _request_id(response.get("ResponseMetadata"))
    if request_id:
        metadata["request_id"] = request_id

    finish_reason = canonical_finish_reason(stop_reason, _STOP_REASONS)
    usage = usage_from_response(response.get("usage"), USAGE_FIELDS)
    return assistant_result(PROVIDER, blocks, unknown, finish_reason, usage, metadata, model=model)


def _response_block(item: object) -> ContentBlock | None:
    if not isinstance(item, Mapping):
        raise _malformed("a content block is not an object")
    if "text" in item:
        if not isinstance(item["text"], str):
            raise _malformed("a text block's 'text' is not a string")
        return TextBlock(text=item["text"])
    if "toolUse" in item:
        use = item["toolUse"]
        name = use.get("name") if isinstance(use, Mapping) else None
        if not isinstance(name, str) or not name:
            raise _malformed("a toolUse block has no 'name'")
        return ToolCallBlock(
            id=tool_call_id(use.get("toolUseId")),
            name=name,
            input=parse_tool_arguments(use.get("input")),
        )
    if "reasoningContent" in item:
        return _reasoning(item["reasoningContent"])
    return None


def _reasoning(content: Any) -> ReasoningBlock:
    if not isinstance(content, Mapping):
        raise _malformed("a reasoningContent block is not an object")
    redacted = content.get("redactedContent")
    if redacted is not None:
        if not isinstance(redacted, (bytes, bytearray)):
            raise _malformed("'redactedContent' is not binary")
        encoded = base64.b64encode(bytes(redacted)).decode("ascii")
        return ReasoningBlock(redacted_data=encoded, provider=PROVIDER)
    text = content.get("reasoningText")
    reasoning = text.get("text") if isinstance(text, Mapping) else None
    signature = text.get("signature") if isinstance(text, Mapping) else None
    if not isinstance(reasoning, str) or (signature is not None and not isinstance(signature, str)):
        raise _malformed("a reasoningText block needs a 'text' string")
    return ReasoningBlock(text=reasoning, signature=signature, provider=PROVIDER)


def _unknown(item: Mapping[str, Any]) -> dict[str, Any]:
    """A block this adapter does not convert, as JSON with its member name as ``type``
    (boto3 gives a member its version does not know as ``SDK_UNKNOWN_MEMBER`` and its name)."""
    member = item.get("SDK_UNKNOWN_MEMBER")
    if isinstance(member, Mapping) and isinstance(member.get("name"), str):
        return {"type": member["name"]}
    kind = next(iter(item), "<empty>")
    return {"type": kind, **_jsonable(dict(item))}


def _request_id(metadata: Any) -> str | None:
    if not isinstance(metadata, Mapping):
        return None
    request_id = metadata.get("RequestId")
    return request_id if isinstance(request_id, str) and request_id else None


def _jsonable(value: Any) -> Any:
    """``value`` with bytes as base64 text (boto3 decodes blobs)."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return value


def _malformed(detail: str) -> ChatModelError:
    return malformed_response(PROVIDER, detail)
