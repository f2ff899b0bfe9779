"""The last step of every adapter's ``parse_response``: the `ChatResult`.

An adapter reads the response's content into blocks (and the content it does not know
into ``unknown``), its finish reason and its metadata; the result is then built the same
way for every API: one assistant message of the blocks, the unknown content kept and
warned about (`keep_unknown_blocks`), and blocks that cannot form an assistant message
(two tool calls with one id, an empty tool name) reported as a malformed response.

A finish reason is the canonical one (`CANONICAL_FINISH_REASONS`) the provider's value
maps to in the adapter's table, or the provider's own value when none fits
(`canonical_finish_reason`); an API that names no finish for tool calls gets one from
`finish_reason_with_calls`. `STOP_REASONS` is the table of the ``stop_reason`` values
Anthropic's Messages API and Bedrock's Converse API share.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from flink_agents.api.chat_result import ChatResult, Usage
from flink_agents.api.content_blocks import ContentBlock
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.integrations._sdk_errors import malformed_response
from flink_agents.integrations.chat_models._sdk_objects import field, str_field
from flink_agents.integrations.chat_models._unknown_content import keep_unknown_blocks
from flink_agents.integrations.chat_models._usage import UsageFields, usage_from_response

__all__ = [
    "STOP_REASONS",
    "assistant_result",
    "canonical_finish_reason",
    "finish_reason_with_calls",
    "response_blocks",
    "sdk_response_result",
]

Item = TypeVar("Item")

STOP_REASONS: Mapping[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}
"""The ``stop_reason`` values of Anthropic's Messages API (Bedrock's Converse API sends
them too), mapped to the canonical finish reasons."""


def response_blocks(
    items: Sequence[Item],
    convert: Callable[[Item], ContentBlock | list[ContentBlock] | None],
    unknown_json: Callable[[Item], Mapping[str, Any]],
) -> tuple[list[ContentBlock], list[Mapping[str, Any]]]:
    """The blocks of a response's content items, in order, and the JSON of the items
    ``convert`` does not know (it returns ``None`` for them; it raises for an item of the
    wrong shape)."""
    blocks: list[ContentBlock] = []
    unknown: list[Mapping[str, Any]] = []
    for item in items:
        converted = convert(item)
        if converted is None:
            unknown.append(unknown_json(item))
        elif isinstance(converted, list):
            blocks.extend(converted)
        else:
            blocks.append(converted)
    return blocks, unknown


def canonical_finish_reason(raw: str | None, table: Mapping[str, str]) -> str | None:
    """The canonical finish reason ``table`` maps ``raw`` to, or ``raw`` itself when
    ``table`` has no entry (``None`` stays ``None``)."""
    if raw is None:
        return None
    return table.get(raw, raw)


def finish_reason_with_calls(
    raw: str | None, has_tool_calls: bool, stops: Collection[str | None] = (None, "stop")
) -> str | None:
    """``"tool_calls"`` for an answer with tool calls whose ``raw`` finish reason says only
    that it stopped (one of ``stops``: DashScope and Ollama name no finish for tool calls),
    else ``raw``."""
    return "tool_calls" if has_tool_calls and raw in stops else raw


def assistant_result(
    provider: str,
    blocks: Sequence[ContentBlock],
    unknown: Sequence[Mapping[str, Any]],
    finish_reason: str | None,
    usage: Usage,
    metadata: dict[str, Any],
    *,
    model: str | None,
    response_id: str | None = None,
) -> ChatResult:
    """The `ChatResult` of a response: an assistant message of ``blocks``, with
    ``unknown`` kept in its metadata (`keep_unknown_blocks`).

    Raises `ChatModelError` (``kind="malformed_response"``) when the blocks do not form
    a valid assistant message.
    """
    try:
        result = ChatResult(
            message=ChatMessage(role=MessageRole.ASSISTANT, blocks=list(blocks)),
            model=model,
            response_id=response_id,
            usage=usage,
            finish_reason=finish_reason,
            metadata=metadata,
        )
    except ValueError as exc:  # pydantic: two tool calls with one id, an empty name...
        raise malformed_response(
            provider, f"the response does not form a valid assistant message: {exc}"
        ) from None
    return keep_unknown_blocks(provider, result, unknown)


def sdk_response_result(
    provider: str,
    response: object,
    usage_fields: UsageFields,
    blocks: Sequence[ContentBlock],
    unknown: Sequence[Mapping[str, Any]],
    finish_reason: str | None,
    metadata: dict[str, Any],
) -> ChatResult:
    """`assistant_result` of a response object of the ``openai`` or ``anthropic`` SDK: its
    ``model``, ``id`` and ``usage`` fields name the model, the response and the usage."""
    return assistant_result(
        provider,
        blocks,
        unknown,
        finish_reason,
        usage_from_response(field(response, "usage"), usage_fields),
        metadata,
        model=str_field(response, "model"),
        response_id=str_field(response, "id"),
    )
