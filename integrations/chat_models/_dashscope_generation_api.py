"""DashScope's native generation API on the wire: typed messages -> request JSON, response
-> result.

Pure functions, no I/O. `build_request` gives exactly the JSON body the ``dashscope`` SDK
(2.x, native protocol) posts: ``{"model", "input": {"messages"}, "parameters"}``, to
``/services/aigc/text-generation/generation``, or to
``/services/aigc/multimodal-generation/generation`` when a message carries media (the SDK
picks the path). `parse_response` turns the SDK's ``ChatCompletion`` into a `ChatResult`.

What is sent:

- A message's ``content`` is its text; a user message with media is a list of parts in
  block order: ``{"text"}``, ``{"image"}``, ``{"audio"}``, ``{"video"}``, each media part a
  ``data:`` URI (from base64 data) or an ``http(s)://`` / ``oss://`` URL. Any other URL (a
  ``file://`` URI, a local path) raises: the SDK would upload that local file. Documents
  raise (DashScope chat takes files only by upload id).
- Tool calls keep their ids (``tool_call_id`` on the tool message, with the tool's
  ``name``); arguments go as a JSON string.
- Tool messages carry text only: with ``tool_media="user_message"`` (the default) a tool
  result's media go in one user message after the run of tool messages, each after a
  text part naming it; with ``tool_media="error"`` they raise before anything is sent.
- Reasoning (``reasoning_content``) is kept as a `ReasoningBlock` (``provider="tongyi"``)
  when asked for (``keep_reasoning``) and never sent back.
- Every parameter (``temperature``, ``enable_thinking``, ``tools``...) goes in
  ``parameters``, with ``result_format: "message"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dashscope.v2.types.completions import ChatCompletion

from flink_agents.api.chat_models.chat_model import ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.content_blocks import (
    ContentBlock,
    DocumentBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from flink_agents.api.errors import ChatModelError, UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.tools.tool import ToolMetadata, as_tool_metadata
from flink_agents.integrations._sdk_errors import malformed_response
from flink_agents.integrations.chat_models._content_walk import (
    assistant_text_and_calls,
    tool_calls_by_id,
)
from flink_agents.integrations.chat_models._function_tools import (
    function_call,
    function_tool,
    function_tool_choice,
)
from flink_agents.integrations.chat_models._media import (
    MEDIA_TYPES,
    REDACTED_MEDIA_REASON,
    Media,
    is_data_uri,
    url_or_data_uri,
)
from flink_agents.integrations.chat_models._request_options import (
    STREAM_REFUSED,
    request_options,
)
from flink_agents.integrations.chat_models._response_result import (
    assistant_result,
    finish_reason_with_calls,
)
from flink_agents.integrations.chat_models._sdk_objects import as_json, field, str_field
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
from flink_agents.integrations.chat_models._usage import UsageFields, usage_from_response

__all__ = [
    "DOCUMENT_REASON",
    "MEDIA_URL_REASON",
    "PROVIDER",
    "TOOL_ERROR_PREFIX",
    "TOOL_MEDIA_ERROR_REASON",
    "USAGE_FIELDS",
    "ToolMedia",
    "build_request",
    "messages_to_wire",
    "parse_response",
    "tool_to_wire",
]

PROVIDER = "tongyi"
"""Name used in errors and in `ReasoningBlock.provider`."""

ToolMedia = TextToolMedia
"""What to do with media in tool results (tool messages carry text only)."""

DOCUMENT_REASON = "DashScope chat takes documents only as uploaded files, not inline"
MEDIA_URL_REASON = (
    "media must be base64 data or an http(s):// or oss:// URL "
    "(the dashscope SDK would upload a local file named by any other URL)"
)
TOOL_MEDIA_ERROR_REASON = (
    "tool messages can only carry text (tool_media='error'; "
    "use tool_media='user_message' to send tool media in a user message)"
)

USAGE_FIELDS = UsageFields(
    input_tokens="input_tokens",
    output_tokens="output_tokens",
    total_tokens="total_tokens",
    cache_read_tokens="prompt_tokens_details.cached_tokens",
    reasoning_tokens="output_tokens_details.reasoning_tokens",
)
"""Where a response's ``usage`` holds each count."""

_REMOTE_SCHEMES = ("http://", "https://", "oss://")
_TOOL_CHOICE_MODES = ("auto", "none")


# ============================================================================ request


def build_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None = None,
    **params: Any,
) -> dict[str, Any]:
    """The JSON body of a native generation call.

    ``params`` must name the ``model``; every other parameter that is not ``None`` goes
    into ``parameters`` (``tool_choice`` may be a bare tool name). Read here:
    ``tool_media`` (`ToolMedia`); ``extract_reasoning`` is for `parse_response`.

    Raises `UnsupportedContentBlockError` for a block DashScope cannot take and
    ``ValueError`` for bad options, before anything is sent.
    """
    model, options = request_options(
        params, model_error="the model parameter is required (a DashScope model name)"
    )
    if options.get("incremental_output"):
        raise ValueError(STREAM_REFUSED)
    tool_media = check_tool_media(options.pop("tool_media", "user_message"))
    options.pop("extract_reasoning", None)

    parameters: dict[str, Any] = {"result_format": "message"}
    if tools:
        parameters["tools"] = [tool_to_wire(as_tool_metadata(tool)) for tool in tools]
    if "tool_choice" in options:
        parameters["tool_choice"] = _tool_choice(options.pop("tool_choice"))
    parameters.update(options)
    return {
        "model": model,
        "input": {"messages": messages_to_wire(messages, tool_media=tool_media)},
        "parameters": parameters,
    }


def tool_to_wire(tool: ToolMetadata) -> dict[str, Any]:
    """A function tool definition."""
    return function_tool(tool)


def _tool_choice(choice: Any) -> Any:
    return function_tool_choice(choice, _TOOL_CHOICE_MODES)


def messages_to_wire(
    messages: Sequence[ChatMessage], *, tool_media: ToolMedia = "user_message"
) -> list[dict[str, Any]]:
    """The ``input.messages`` array, with tool media moved into a user message after
    each run of tool messages."""
    calls = tool_calls_by_id(messages)
    return messages_with_moved_media(
        messages,
        message=message_to_wire,
        tool_message=lambda result: _tool_message(result, calls.get(result.call_id), tool_media),
        media_message=lambda parts: {"role": "user", "content": parts},
    )


def message_to_wire(message: ChatMessage) -> dict[str, Any]:
    """One system, user or assistant message (tool messages go through `messages_to_wire`)."""
    if message.role is MessageRole.SYSTEM:
        return {"role": "system", "content": message.text}
    if message.role is MessageRole.USER:
        if not any(isinstance(block, MEDIA_TYPES) for block in message.blocks):
            return {"role": "user", "content": message.text}
        parts = [
            {"text": block.text} if isinstance(block, TextBlock) else _media_part(block)
            for block in message.blocks
            if isinstance(block, (TextBlock, *MEDIA_TYPES))
        ]
        return {"role": "user", "content": parts}
    if message.role is MessageRole.ASSISTANT:
        return _assistant(message)
    raise ValueError("tool messages are converted by messages_to_wire")


def _media_part(block: Media) -> dict[str, Any]:
    """The content part of a media block, or the reason it cannot be sent."""
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    if isinstance(block, DocumentBlock):
        raise UnsupportedContentBlockError(block.type, DOCUMENT_REASON, provider=PROVIDER)
    source = url_or_data_uri(block)
    if not is_data_uri(source) and not source.lower().startswith(_REMOTE_SCHEMES):
        raise UnsupportedContentBlockError(block.type, MEDIA_URL_REASON, provider=PROVIDER)
    return {block.type: source}


def _assistant(message: ChatMessage) -> dict[str, Any]:
    # Reasoning stays in the history and is never sent back.
    text, calls = assistant_text_and_calls(message.blocks, provider=PROVIDER)
    wire: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        wire["tool_calls"] = [function_call(call) for call in calls]
    return wire


def _tool_message(
    result: ToolResultBlock, call: ToolCallBlock | None, tool_media: ToolMedia
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The tool message, and the result's media parts (each after a text part naming it)
    for the user message after the run."""
    text, moved = text_tool_message(
        result, tool_media, provider=PROVIDER, reason=TOOL_MEDIA_ERROR_REASON, convert=_media_part
    )
    parts = media_parts(moved, result.call_id, lambda text: {"text": text})
    wire: dict[str, Any] = {"role": "tool", "content": text, "tool_call_id": result.call_id}
    if call is not None:
        wire["name"] = call.name
    return wire, parts


# =========================================================================== response


def parse_response(
    completion: ChatCompletion,
    *,
    keep_reasoning: bool = True,
    requested_model: str | None = None,
) -> ChatResult:
    """The `ChatResult` of the SDK's ``ChatCompletion`` (its first choice).

    ``keep_reasoning``: keep ``reasoning_content`` as a `ReasoningBlock` (first).
    ``requested_model`` is the result's ``model`` when the response names none (the
    native API usually does not). Raises `ChatModelError` (``kind="malformed_response"``)
    for a response without a choice.
    """
    if not isinstance(completion, ChatCompletion) or not completion.choices:
        raise _malformed("the response has no choices")
    choice = completion.choices[0]
    message = choice.message
    blocks: list[ContentBlock] = []
    if keep_reasoning and message.reasoning_content:
        blocks.append(ReasoningBlock(text=message.reasoning_content, provider=PROVIDER))
    if message.content:
        blocks.append(TextBlock(text=message.content))
    for call in message.tool_calls or []:
        name = call.function.name
        if not name:
            raise _malformed("a tool call has no function name")
        blocks.append(
            ToolCallBlock(
                id=tool_call_id(call.id),
                name=name,
                input=parse_tool_arguments(call.function.arguments),
            )
        )
    extras = message.model_extra or {}
    unknown = [
        {"type": key, key: as_json(value)} for key, value in extras.items() if value is not None
    ]

    raw_finish = choice.finish_reason
    finish = finish_reason_with_calls(raw_finish, bool(message.tool_calls), (None, "stop", "null"))
    metadata: dict[str, Any] = {"raw_finish_reason": raw_finish}
    if completion.search_info is not None:
        metadata["search_info"] = as_json(completion.search_info)

    model = completion.model or requested_model
    usage = usage_from_response(_sent_usage(completion), USAGE_FIELDS)
    response_id = str_field(completion, "request_id")
    return assistant_result(
        PROVIDER, blocks, unknown, finish, usage, metadata, model=model, response_id=response_id
    )


def _sent_usage(completion: ChatCompletion) -> Mapping[str, Any] | None:
    """The usage counts the server sent: the SDK fills the ones it left out with 0."""
    usage = field(completion, "usage")
    return as_json(usage) if usage is not None else None


def _malformed(detail: str) -> ChatModelError:
    return malformed_response(PROVIDER, detail)
