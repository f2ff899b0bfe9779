"""OpenAI Chat Completions on the wire: typed messages -> request JSON, response JSON -> result.

Pure functions, no I/O. `build_request` gives exactly the JSON body to POST to
``/chat/completions``; `parse_response` turns the SDK's `ChatCompletion` into a
`ChatResult`. The same format is spoken by OpenAI-compatible servers (vLLM, Ollama,
llama.cpp), so the parser also reads their ``reasoning_content`` / ``reasoning``
fields (extras the SDK keeps as attributes).

Tool messages on this API carry text only. With ``tool_media="user_message"`` (the
default) a tool result holding media becomes a tool message whose text lists the
media that follow, and one user message placed right after the run of tool
messages carries the media themselves; with ``tool_media="error"`` such a result
raises `UnsupportedContentBlockError` before anything is sent.

In a response, tool-call arguments that are not a JSON object keep the call, with
``input == {"_raw_arguments": <as sent>}`` (sent back verbatim), as in every adapter;
content parts that are not text and tool calls that are not functions are kept,
redacted, in ``metadata["unknown_blocks"]`` and warned about once per type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from openai.types.chat import ChatCompletion

from flink_agents.api.chat_models.chat_model import ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.content_blocks import (
    AudioBlock,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from flink_agents.api.errors import ChatModelError, UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.tool_response import RAW_ARGUMENTS_KEY
from flink_agents.api.tools.tool import ToolMetadata, as_tool_metadata
from flink_agents.integrations._sdk_errors import malformed_response
from flink_agents.integrations.chat_models._content_walk import assistant_text_and_calls
from flink_agents.integrations.chat_models._function_tools import (
    function_call,
    function_tool,
    function_tool_choice,
)
from flink_agents.integrations.chat_models._media import (
    ASSISTANT_MEDIA_REASON,
    MEDIA_TYPES,
    REDACTED_MEDIA_REASON,
    Media,
    bare_mime,
    inline_base64,
    url_or_data_uri,
)
from flink_agents.integrations.chat_models._request_options import request_options
from flink_agents.integrations.chat_models._response_result import (
    canonical_finish_reason,
    sdk_response_result,
)
from flink_agents.integrations.chat_models._sdk_objects import (
    as_json,
    field,
    is_object,
)
from flink_agents.integrations.chat_models._text_tool_messages import (
    TOOL_ERROR_PREFIX,
    TextToolMedia,
    check_tool_media,
    media_parts,
    messages_with_moved_media,
    text_tool_message,
)
from flink_agents.integrations.chat_models._tool_arguments import (
    parse_tool_arguments,
    tool_call_id,
)
from flink_agents.integrations.chat_models._usage import UsageFields

__all__ = [
    "ASSISTANT_MEDIA_REASON",
    "AUDIO_FORMAT_REASON",
    "AUDIO_URL_REASON",
    "DOCUMENT_TYPE_REASON",
    "DOCUMENT_URL_REASON",
    "PROVIDER",
    "RAW_ARGUMENTS_KEY",
    "REDACTED_MEDIA_REASON",
    "TOOL_ERROR_PREFIX",
    "TOOL_MEDIA_ERROR_REASON",
    "USAGE_FIELDS",
    "VIDEO_REASON",
    "MaxTokensParam",
    "ToolMedia",
    "build_request",
    "message_to_wire",
    "messages_to_wire",
    "parse_response",
    "tool_to_wire",
]

PROVIDER = "openai-chat"
"""Name used in errors and in `ReasoningBlock.provider`."""

ToolMedia = TextToolMedia
"""What to do with media in tool results (tool messages carry text only)."""

MaxTokensParam = Literal["max_tokens", "max_completion_tokens"]
"""Which request field carries the ``max_tokens`` option."""

VIDEO_REASON = "OpenAI Chat Completions does not accept video"
AUDIO_URL_REASON = "audio is accepted only as base64 data (input_audio), not by URL"
AUDIO_FORMAT_REASON = "audio must be audio/wav or audio/mpeg (mp3)"
DOCUMENT_URL_REASON = "documents are accepted only as base64 data (file_data), not by URL"
DOCUMENT_TYPE_REASON = "only application/pdf documents are accepted"
TOOL_MEDIA_ERROR_REASON = (
    "tool messages can only carry text (tool_media='error'; "
    "use tool_media='user_message' to send tool media in a user message)"
)

_AUDIO_FORMATS: dict[str, str] = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
_DEFAULT_PDF_NAME = "document.pdf"
_CANONICAL_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "function_call": "tool_calls",
}
USAGE_FIELDS = UsageFields(
    input_tokens="prompt_tokens",  # cached tokens included
    output_tokens="completion_tokens",
    total_tokens="total_tokens",
    cache_read_tokens="prompt_tokens_details.cached_tokens",
    cache_write_tokens="prompt_tokens_details.cache_write_tokens",
    reasoning_tokens="completion_tokens_details.reasoning_tokens",
)
"""Where a chat completion's ``usage`` holds each count (the shared policy of `_usage`)."""
# Request options read here and never sent as such.
_LOCAL_OPTIONS = ("tool_media", "max_tokens_param")


# ============================================================================ request


def build_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None = None,
    **params: Any,
) -> dict[str, Any]:
    """The JSON body of a ``POST /chat/completions`` call.

    ``params`` must name the ``model``. Read here: ``tool_media`` (`ToolMedia`,
    default ``"user_message"``), ``max_tokens_param`` (`MaxTokensParam`, default
    ``"max_tokens"``: the field ``max_tokens`` is sent as). Every other parameter
    whose value is not ``None`` goes into the body as it is (``temperature``,
    ``tool_choice``, ``response_format``, ``top_p``, server-specific fields...);
    ``tool_choice`` may also be a bare tool name.

    Raises `UnsupportedContentBlockError` for a block this API cannot take, and
    ``ValueError`` for bad options; either way before anything is sent.
    """
    model, options = request_options(
        params, model_error="the model parameter is required (a model name)"
    )
    tool_media = check_tool_media(options.pop("tool_media", "user_message"))
    max_tokens_param = options.pop("max_tokens_param", "max_tokens")
    if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
        raise ValueError(
            "max_tokens_param must be 'max_tokens' or 'max_completion_tokens', "
            f"got {max_tokens_param!r}"
        )

    request: dict[str, Any] = {
        "model": model,
        "messages": messages_to_wire(messages, tool_media=tool_media),
    }
    if tools:
        request["tools"] = [tool_to_wire(as_tool_metadata(tool)) for tool in tools]
    if "max_tokens" in options:
        request[max_tokens_param] = options.pop("max_tokens")
    if "tool_choice" in options:
        request["tool_choice"] = _tool_choice(options.pop("tool_choice"))
    request.update(options)
    return request


def tool_to_wire(tool: ToolMetadata) -> dict[str, Any]:
    """A function tool definition."""
    return function_tool(tool)


def _tool_choice(choice: Any) -> Any:
    return function_tool_choice(choice, ("auto", "none", "required"))


def messages_to_wire(
    messages: Sequence[ChatMessage], *, tool_media: ToolMedia = "user_message"
) -> list[dict[str, Any]]:
    """The ``messages`` array, with tool media moved into user messages after each tool run."""
    return messages_with_moved_media(
        messages,
        message=message_to_wire,
        tool_message=lambda result: _tool_result_to_wire(result, tool_media),
        media_message=lambda parts: {"role": "user", "content": parts},
    )


def message_to_wire(message: ChatMessage) -> dict[str, Any]:
    """One system, user or assistant message (tool messages go through `messages_to_wire`)."""
    if message.role is MessageRole.SYSTEM:
        return {"role": "system", "content": message.text}
    if message.role is MessageRole.USER:
        return {"role": "user", "content": _user_content(message)}
    if message.role is MessageRole.ASSISTANT:
        return _assistant_to_wire(message)
    raise ValueError("tool messages are converted by messages_to_wire")


def _user_content(message: ChatMessage) -> str | list[dict[str, Any]]:
    blocks = message.blocks
    if not blocks:
        return ""
    if len(blocks) == 1 and isinstance(blocks[0], TextBlock):
        return blocks[0].text
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, MEDIA_TYPES):
            parts.append(_media_part(block))
        else:  # the role matrix keeps other blocks out of user messages
            raise UnsupportedContentBlockError(
                block.type, "not allowed in a user message", provider=PROVIDER
            )
    return parts


def _media_part(block: Media) -> dict[str, Any]:
    """The user-message part for a media block, or the reason it cannot be sent."""
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    mime = bare_mime(block.mime_type)
    if isinstance(block, ImageBlock):
        return {"type": "image_url", "image_url": {"url": url_or_data_uri(block)}}
    if isinstance(block, VideoBlock):
        raise UnsupportedContentBlockError(block.type, VIDEO_REASON, provider=PROVIDER)
    data = inline_base64(block)
    if isinstance(block, AudioBlock):
        if data is None:
            raise UnsupportedContentBlockError(block.type, AUDIO_URL_REASON, provider=PROVIDER)
        audio_format = _AUDIO_FORMATS.get(mime)
        if audio_format is None:
            raise UnsupportedContentBlockError(block.type, AUDIO_FORMAT_REASON, provider=PROVIDER)
        return {"type": "input_audio", "input_audio": {"data": data, "format": audio_format}}
    # A document.
    if mime != "application/pdf":
        raise UnsupportedContentBlockError(block.type, DOCUMENT_TYPE_REASON, provider=PROVIDER)
    if data is None:
        raise UnsupportedContentBlockError(block.type, DOCUMENT_URL_REASON, provider=PROVIDER)
    return {
        "type": "file",
        "file": {
            "file_data": f"data:application/pdf;base64,{data}",
            "filename": block.name or _DEFAULT_PDF_NAME,
        },
    }


def _assistant_to_wire(message: ChatMessage) -> dict[str, Any]:
    # Reasoning is never replayed: the API takes no reasoning input.
    text, calls = assistant_text_and_calls(message.blocks, provider=PROVIDER)
    wire: dict[str, Any] = {"role": "assistant"}
    if calls:
        wire["content"] = text or None
        wire["tool_calls"] = [function_call(call) for call in calls]
    else:
        wire["content"] = text
    return wire


def _tool_result_to_wire(
    result: ToolResultBlock, tool_media: ToolMedia
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The tool message, and the user-message parts carrying the result's media."""
    text, moved = text_tool_message(
        result, tool_media, provider=PROVIDER, reason=TOOL_MEDIA_ERROR_REASON, convert=_media_part
    )
    parts = media_parts(moved, result.call_id, lambda text: {"type": "text", "text": text})
    return {"role": "tool", "tool_call_id": result.call_id, "content": text}, parts


# =========================================================================== response


def parse_response(completion: ChatCompletion) -> ChatResult:
    """The `ChatResult` of the SDK's `ChatCompletion` (its first choice).

    Raises `ChatModelError` (``kind="malformed_response"``) when it does not have the
    shape of a chat completion (the SDK hands a body that is not a JSON object over as
    it is).
    """
    if not isinstance(completion, ChatCompletion):
        raise _malformed(f"the response body is a {type(completion).__name__}, not an object")
    choices = field(completion, "choices")
    if not isinstance(choices, list) or not choices:
        error_message = field(field(completion, "error"), "message")
        if isinstance(error_message, str):
            raise _malformed(f"the response has no choices but an error: {error_message}")
        raise _malformed("the response has no choices")
    choice = choices[0]
    message = field(choice, "message")
    if not is_object(message):
        raise _malformed("the first choice has no message")

    blocks: list[Any] = []
    unknown: list[Mapping[str, Any]] = []
    reasoning = _reasoning_text(message)
    if reasoning:
        blocks.append(ReasoningBlock(text=reasoning, provider=PROVIDER))
    blocks.extend(
        TextBlock(text=text) for text in _content_texts(field(message, "content"), unknown)
    )
    refusal = field(message, "refusal")
    if refusal is not None and not isinstance(refusal, str):
        raise _malformed("message.refusal is not a string")
    if refusal:
        blocks.append(TextBlock(text=refusal))
    blocks.extend(_tool_calls(message, unknown))

    raw_finish = field(choice, "finish_reason")
    if raw_finish is not None and not isinstance(raw_finish, str):
        raise _malformed("finish_reason is not a string")
    finish = "refusal" if refusal else canonical_finish_reason(raw_finish, _CANONICAL_FINISH)

    metadata: dict[str, Any] = {"raw_finish_reason": raw_finish}
    if refusal:
        metadata["refusal"] = refusal
    for key in ("system_fingerprint", "service_tier", "created"):
        if field(completion, key) is not None:
            metadata[key] = field(completion, key)
    annotations = field(message, "annotations")
    if annotations:
        metadata["annotations"] = as_json(annotations)

    return sdk_response_result(
        PROVIDER, completion, USAGE_FIELDS, blocks, unknown, finish, metadata
    )


def _malformed(detail: str) -> ChatModelError:
    return malformed_response(PROVIDER, detail)


def _reasoning_text(message: object) -> str | None:
    for key in ("reasoning_content", "reasoning"):
        value = field(message, key)
        if isinstance(value, str) and value:
            return value
    return None


def _content_texts(content: Any, unknown: list[Mapping[str, Any]]) -> list[str]:
    """Text of ``message.content``: a string, or (some compatible servers) parts, of
    which the text ones give text and the others go to ``unknown``."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if not isinstance(part, Mapping):  # parts are not typed: the SDK declares a string
                raise _malformed("message.content holds a part that is not an object")
            text = part.get("text")
            if part.get("type", "text") != "text":
                unknown.append(part)
            elif not isinstance(text, str):
                raise _malformed("a text part of message.content has no text string")
            elif text:
                texts.append(text)
        return texts
    raise _malformed("message.content is neither a string nor a list of text parts")


def _tool_calls(message: object, unknown: list[Mapping[str, Any]]) -> list[ToolCallBlock]:
    """Function tool calls; calls of another type (``custom``...) go to ``unknown``."""
    raw_calls = field(message, "tool_calls")
    if raw_calls is None:
        legacy = field(message, "function_call")
        if legacy is None:
            return []
        raw_calls = [{"type": "function", "function": legacy}]
    if not isinstance(raw_calls, list):
        raise _malformed("message.tool_calls is not a list")
    calls: list[ToolCallBlock] = []
    for raw in raw_calls:
        if not is_object(raw):
            raise _malformed("a tool call is not an object")
        kind = field(raw, "type")
        if kind is None:
            kind = "function"
        function = field(raw, "function")
        if isinstance(kind, str) and kind != "function":
            unknown.append(as_json(raw))
            continue
        if kind != "function" or not is_object(function):
            raise _malformed(f"a tool call of type {kind!r} without a function")
        name = field(function, "name")
        if not isinstance(name, str) or not name:
            raise _malformed("a tool call has no function name")
        calls.append(
            ToolCallBlock(
                id=tool_call_id(field(raw, "id")),
                name=name,
                input=parse_tool_arguments(field(function, "arguments")),
            )
        )
    return calls
