"""Ollama's ``/api/chat`` on the wire: typed messages -> request JSON, response -> result.

Pure functions, no I/O. `build_request` gives exactly the JSON body the ``ollama``
SDK posts to ``/api/chat`` (its arguments are the body's fields); `parse_response`
turns the SDK's `ChatResponse` into a `ChatResult`.

What the API takes, and so what is sent:

- A message has one ``content`` string: the text blocks are concatenated. Images go
  in the message's ``images`` list as base64; Ollama takes no image URLs, no audio,
  no video and no documents (those raise `UnsupportedContentBlockError` before
  anything is sent).
- Tool calls carry no id on this API: the calls of a response get generated ids
  (``call_`` + uuid), which are never sent; a tool message names its tool
  (``tool_name``, looked up from the call it answers).
- Tool messages carry text only. With ``tool_media="user_message"`` (the default) a
  tool result holding images becomes a tool message whose text lists them, and one
  user message right after the run of tool messages carries the images; with
  ``tool_media="error"`` such a result raises before anything is sent.
- Reasoning (``thinking``) is kept as a `ReasoningBlock` (``provider="ollama"``) and
  never sent back. With ``extract_reasoning`` (a response option) ``<think>...</think>``
  sections of the answer's text are kept as reasoning too.
- A tool's parameters are sent the way the SDK's ``Tool`` model and the server take
  them: per parameter its ``type``, ``items``, ``description`` and ``enum``. A nullable
  union (``anyOf`` of simple types) becomes a list of types, a reference to a nested
  model becomes ``type: "object"``; other keywords are left out (ollama-python#724).
- Model parameters that are not fields of the request (``temperature``, ``num_ctx``,
  ``top_k``, ``seed``, ``stop``...) go into ``options``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ollama import ChatResponse

from flink_agents.api.chat_models.chat_model import ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.content_blocks import (
    ContentBlock,
    ImageBlock,
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
from flink_agents.integrations.chat_models._function_tools import function_tool
from flink_agents.integrations.chat_models._media import (
    MEDIA_TYPES,
    REDACTED_MEDIA_REASON,
    Media,
    inline_base64,
)
from flink_agents.integrations.chat_models._request_options import request_options
from flink_agents.integrations.chat_models._response_result import (
    assistant_result,
    finish_reason_with_calls,
)
from flink_agents.integrations.chat_models._sdk_objects import field, str_field
from flink_agents.integrations.chat_models._text_tool_messages import (
    TOOL_ERROR_PREFIX,
    TextToolMedia,
    check_tool_media,
    messages_with_moved_media,
    moved_label,
    text_tool_message,
)
from flink_agents.integrations.chat_models._tool_arguments import (
    parse_tool_arguments,
    tool_call_id,
)
from flink_agents.integrations.chat_models._usage import UsageFields, usage_from_response

__all__ = [
    "IMAGE_URL_REASON",
    "MEDIA_TYPE_REASON",
    "PROVIDER",
    "REQUEST_FIELDS",
    "TOOL_ERROR_PREFIX",
    "TOOL_MEDIA_ERROR_REASON",
    "USAGE_FIELDS",
    "ToolMedia",
    "build_request",
    "messages_to_wire",
    "parse_response",
    "split_reasoning",
    "tool_to_wire",
]

PROVIDER = "ollama"
"""Name used in errors and in `ReasoningBlock.provider`."""

ToolMedia = TextToolMedia
"""What to do with images in tool results (tool messages carry text only)."""

REQUEST_FIELDS = frozenset(
    {"model", "think", "format", "keep_alive", "logprobs", "top_logprobs", "options"}
)
"""Parameters sent as fields of the request; every other one goes into ``options``."""

IMAGE_URL_REASON = "Ollama takes images as base64 data only, not by URL"
MEDIA_TYPE_REASON = "Ollama takes text and images only"
TOOL_MEDIA_ERROR_REASON = (
    "tool messages can only carry text (tool_media='error'; "
    "use tool_media='user_message' to send tool images in a user message)"
)

USAGE_FIELDS = UsageFields(input_tokens="prompt_eval_count", output_tokens="eval_count")
"""Where a chat response holds its counts: on the response itself (Ollama reports no total;
it leaves ``prompt_eval_count`` out when the whole prompt came from its cache)."""

_THINK_TAG = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)
_PROPERTY_KEYS = ("type", "items", "description", "enum")
_METADATA_FIELDS = (
    "created_at",
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
)


# ============================================================================ request


def build_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None = None,
    **params: Any,
) -> dict[str, Any]:
    """The JSON body of a ``POST /api/chat`` call (``stream`` is always false, ``tools``
    always a list).

    ``params`` must name the ``model``. ``think``, ``format``, ``keep_alive``,
    ``logprobs``, ``top_logprobs`` are request fields; an ``options`` dict and every
    other parameter (``temperature``, ``num_ctx``...) go into ``options`` (a parameter
    wins over the same key in ``options``). ``None`` values are not sent. Read here:
    ``tool_media`` (`ToolMedia`); ``extract_reasoning`` is for `parse_response`.

    Raises `UnsupportedContentBlockError` for a block Ollama cannot take and
    ``ValueError`` for bad options, before anything is sent.
    """
    model, given = request_options(
        params, model_error="the model parameter is required (a model name Ollama serves)"
    )
    tool_media = check_tool_media(given.pop("tool_media", "user_message"))
    given.pop("extract_reasoning", None)
    options = given.pop("options", None) or {}
    if not isinstance(options, Mapping):
        raise ValueError(f"options must be a dict of model options, got {type(options).__name__}")
    fields = {key: given.pop(key) for key in list(given) if key in REQUEST_FIELDS}
    options = {**options, **given}

    request: dict[str, Any] = {
        "model": model,
        "messages": messages_to_wire(messages, tool_media=tool_media),
        "stream": False,
        # The SDK always sends the list, empty when there are no tools.
        "tools": [tool_to_wire(as_tool_metadata(tool)) for tool in tools or ()],
    }
    request.update(fields)
    if options:
        request["options"] = options
    return request


def tool_to_wire(tool: ToolMetadata) -> dict[str, Any]:
    """A function tool definition, its parameters as the SDK's ``Tool`` model keeps them."""
    return function_tool(tool, _parameters(tool.args_schema))


def _parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    parameters: dict[str, Any] = {"type": "object"}
    for key in ("$defs", "items", "required"):
        if schema.get(key) is not None:
            parameters[key] = schema[key]
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        parameters["properties"] = {
            name: _property(value)
            for name, value in properties.items()
            if isinstance(value, Mapping)
        }
    return parameters


def _property(schema: Mapping[str, Any]) -> dict[str, Any]:
    """One parameter: ``type``, ``items``, ``description``, ``enum``; a union of simple
    types as a type list, a reference (a nested model) as an object."""
    prop = {key: schema[key] for key in _PROPERTY_KEYS if schema.get(key) is not None}
    if "type" not in prop:
        union = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(union, list):
            types = [m["type"] for m in union if isinstance(m, Mapping) and "type" in m]
            if types and len(types) == len(union):
                prop["type"] = types[0] if len(types) == 1 else types
            items = [m["items"] for m in union if isinstance(m, Mapping) and "items" in m]
            if items and "items" not in prop:
                prop["items"] = items[0]
        elif "$ref" in schema or "properties" in schema:
            prop["type"] = "object"
    return prop


def messages_to_wire(
    messages: Sequence[ChatMessage], *, tool_media: ToolMedia = "user_message"
) -> list[dict[str, Any]]:
    """The ``messages`` array, with tool images moved into a user message after each
    run of tool messages. Fields the SDK would drop (empty ``content``) are left out."""
    calls = tool_calls_by_id(messages)
    return messages_with_moved_media(
        messages,
        message=message_to_wire,
        tool_message=lambda result: _tool_message(result, calls.get(result.call_id), tool_media),
        media_message=_images_message,
    )


def message_to_wire(message: ChatMessage) -> dict[str, Any]:
    """One system, user or assistant message (tool messages go through `messages_to_wire`)."""
    if message.role is MessageRole.SYSTEM:
        return _message("system", message.text)
    if message.role is MessageRole.USER:
        images = [_image(block) for block in message.blocks if isinstance(block, MEDIA_TYPES)]
        return _message("user", message.text, images=images)
    if message.role is MessageRole.ASSISTANT:
        return _assistant(message)
    raise ValueError("tool messages are converted by messages_to_wire")


def _message(role: str, content: str, **extra: Any) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": role}
    if content:
        wire["content"] = content
    wire.update({key: value for key, value in extra.items() if value})
    return wire


def _image(block: Media) -> str:
    """The base64 payload of an image, or the reason the block cannot be sent."""
    if block.redacted:
        raise UnsupportedContentBlockError(block.type, REDACTED_MEDIA_REASON, provider=PROVIDER)
    if not isinstance(block, ImageBlock):
        raise UnsupportedContentBlockError(block.type, MEDIA_TYPE_REASON, provider=PROVIDER)
    data = inline_base64(block)
    if data is None:
        raise UnsupportedContentBlockError(block.type, IMAGE_URL_REASON, provider=PROVIDER)
    return data


def _assistant(message: ChatMessage) -> dict[str, Any]:
    # Reasoning is kept in the history but never sent back (Ollama takes none).
    text, calls = assistant_text_and_calls(message.blocks, provider=PROVIDER)
    wire_calls = [
        {"function": {"name": call.name, "arguments": dict(call.input)}} for call in calls
    ]
    return _message("assistant", text, tool_calls=wire_calls)


def _tool_message(
    result: ToolResultBlock, call: ToolCallBlock | None, tool_media: ToolMedia
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The tool message, and the result's images with their labels (for the user message
    after the run). Only images pass `_image`, so every label reads ``image N``."""
    text, moved = text_tool_message(
        result, tool_media, provider=PROVIDER, reason=TOOL_MEDIA_ERROR_REASON, convert=_image
    )
    name = None if call is None else call.name
    source = result.call_id if name is None else f"{result.call_id} ({name})"
    labelled = [(moved_label(label, source), image) for label, image in moved]
    return _message("tool", text, tool_name=name), labelled


def _images_message(labelled: list[tuple[str, str]]) -> dict[str, Any]:
    """The user message after a run of tool messages: the images' labels as its text."""
    labels = [label for label, _ in labelled]
    return _message("user", "\n".join(labels), images=[image for _, image in labelled])


# =========================================================================== response


def parse_response(response: ChatResponse, *, extract_reasoning: bool = False) -> ChatResult:
    """The `ChatResult` of the SDK's `ChatResponse`.

    ``extract_reasoning``: ``<think>...</think>`` sections of the text become reasoning
    blocks (after the ``thinking`` field's, before the text). Raises `ChatModelError`
    (``kind="malformed_response"``) for a response of the wrong shape.
    """
    if not isinstance(response, ChatResponse):
        raise _malformed(f"the response is a {type(response).__name__}, not a chat response")
    message = response.message
    blocks: list[ContentBlock] = []
    if message.thinking:
        blocks.append(ReasoningBlock(text=message.thinking, provider=PROVIDER))
    text = message.content or ""
    if extract_reasoning and text:
        text, sections = split_reasoning(text)
        blocks.extend(ReasoningBlock(text=section, provider=PROVIDER) for section in sections)
    if text:
        blocks.append(TextBlock(text=text))
    for call in message.tool_calls or []:
        blocks.append(
            ToolCallBlock(
                id=tool_call_id(None),
                name=call.function.name,
                input=parse_tool_arguments(call.function.arguments),
            )
        )
    unknown = [{"type": "image", "data": str(image.value)} for image in message.images or []]

    raw_finish = response.done_reason
    finish = finish_reason_with_calls(raw_finish, bool(message.tool_calls))
    metadata: dict[str, Any] = {"raw_finish_reason": raw_finish}
    for key in _METADATA_FIELDS:
        if field(response, key) is not None:
            metadata[key] = field(response, key)

    usage = usage_from_response(response, USAGE_FIELDS)
    model = str_field(response, "model")
    return assistant_result(PROVIDER, blocks, unknown, finish, usage, metadata, model=model)


def split_reasoning(text: str) -> tuple[str, list[str]]:
    """``text`` without its ``<think>...</think>`` sections, and the sections' texts
    (stripped, empty ones left out), in order."""
    sections = [section.strip() for section in _THINK_TAG.findall(text)]
    if not sections:
        return text, []
    cleaned = _THINK_TAG.sub("", text).strip()
    return cleaned, [section for section in sections if section]


def _malformed(detail: str) -> ChatModelError:
    return malformed_response(PROVIDER, detail)
