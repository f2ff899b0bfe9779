"""Unknown response content: kept (redacted) in metadata and warned about once per type,
the same way by all three adapters."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from flink_agents.api.chat_result import ChatResult
from flink_agents.api.content_blocks import TextBlock
from flink_agents.integrations.chat_models import _unknown_content
from flink_agents.integrations.chat_models.anthropic import _messages_api
from flink_agents.integrations.chat_models.openai import _chat_completions_api, _responses_api
from tests.integrations.chat_models.sdk_responses import (
    anthropic_message,
    chat_completion,
    openai_response,
)


def parse_messages_response(body: Any) -> ChatResult:
    return _messages_api.parse_response(anthropic_message(body))


def parse_response(body: Any) -> ChatResult:
    return _responses_api.parse_response(openai_response(body))


def parse_chat_completion(body: Any) -> ChatResult:
    return _chat_completions_api.parse_response(chat_completion(body))


PAYLOAD = base64.b64encode(bytes(range(256)) * 4).decode("ascii")  # 1,368 chars
REDACTED = f"<base64, {len(PAYLOAD)} chars redacted>"
LOGGER = "flink_agents.integrations.chat_models"


@pytest.fixture(autouse=True)
def fresh_warnings() -> Iterator[None]:
    _unknown_content._warned.clear()
    yield
    _unknown_content._warned.clear()


def anthropic_body(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(blocks),
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def responses_body(*items: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "status": "completed", "model": "m", "output": list(items)}


def responses_message(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": list(parts)}


def chat_body(content: Any = None, tool_calls: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {"id": "c1", "model": "m", "choices": [{"message": message, "finish_reason": "stop"}]}


Parse = Callable[[Any], ChatResult]

# (adapter, parse, body with text and one unknown entry, body with only that entry, raw entry)
CASES: list[tuple[str, Parse, dict[str, Any], dict[str, Any], dict[str, Any]]] = []


def _case(
    provider: str,
    parse: Parse,
    with_text: Callable[[dict[str, Any]], dict[str, Any]],
    alone: Callable[[dict[str, Any]], dict[str, Any]],
    raw: dict[str, Any],
) -> None:
    CASES.append((provider, parse, with_text(raw), alone(raw), raw))


_case(
    "anthropic",
    parse_messages_response,
    lambda raw: anthropic_body({"type": "text", "text": "Hi"}, raw),
    lambda raw: anthropic_body(raw),
    {"type": "container_upload", "file_id": "f1", "data": PAYLOAD},
)
_case(
    "openai-responses",
    parse_response,
    lambda raw: responses_body(responses_message({"type": "output_text", "text": "Hi"}), raw),
    lambda raw: responses_body(raw),
    {"type": "image_generation_call", "id": "ig_1", "result": PAYLOAD},
)
_case(
    "openai-responses",
    parse_response,
    lambda raw: responses_body(responses_message({"type": "output_text", "text": "Hi"}, raw)),
    lambda raw: responses_body(responses_message(raw)),
    {"type": "output_audio", "data": PAYLOAD, "transcript": "hello"},
)
_case(
    "openai-chat",
    parse_chat_completion,
    lambda raw: chat_body([{"type": "text", "text": "Hi"}, raw]),
    lambda raw: chat_body([raw]),
    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PAYLOAD}"}},
)
_case(
    "openai-chat",
    parse_chat_completion,
    lambda raw: chat_body("Hi", tool_calls=[raw]),
    lambda raw: chat_body(None, tool_calls=[raw]),
    {"id": "ct_1", "type": "custom", "custom": {"name": "sql", "input": PAYLOAD}},
)
IDS = ["anthropic-block", "responses-item", "responses-part", "chat-part", "chat-custom-call"]


def _redacted(raw: Any) -> Any:
    """What the metadata should hold: the same JSON, payloads redacted."""
    if isinstance(raw, dict):
        return {key: _redacted(value) for key, value in raw.items()}
    if raw == f"data:image/png;base64,{PAYLOAD}":
        return f"data:image/png;base64,<{len(base64.b64decode(PAYLOAD))} bytes redacted>"
    return REDACTED if raw == PAYLOAD else raw


@pytest.mark.parametrize(("provider", "parse", "with_text", "alone", "raw"), CASES, ids=IDS)
def test_unknown_content_is_kept_redacted_and_warned_once(
    provider: str,
    parse: Parse,
    with_text: dict[str, Any],
    alone: dict[str, Any],
    raw: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    first = parse(with_text)
    second = parse(with_text)

    assert first.message.blocks == [TextBlock(text="Hi")]
    assert first.metadata["unknown_blocks"] == [_redacted(raw)]
    assert second.metadata["unknown_blocks"] == [_redacted(raw)]
    assert PAYLOAD not in repr(first.metadata)
    warnings = [r for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 1  # once per process for this type
    message = warnings[0].getMessage()
    assert message.startswith(f"{provider}: the response held content of type {raw['type']!r}")
    assert "ChatResult.metadata['unknown_blocks']" in message
    assert "only content" not in message and PAYLOAD not in message


@pytest.mark.parametrize(("provider", "parse", "with_text", "alone", "raw"), CASES, ids=IDS)
def test_unknown_content_alone_is_not_a_silent_empty_answer(
    provider: str,
    parse: Parse,
    with_text: dict[str, Any],
    alone: dict[str, Any],
    raw: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    result = parse(alone)
    parse(alone)

    assert result.message.text == "" and result.message.tool_calls == []
    assert result.metadata["unknown_blocks"] == [_redacted(raw)]
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 1
    assert "it was the response's only content, so the answer's text is empty" in warnings[0]


def test_each_type_is_warned_about_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    body = anthropic_body(
        {"type": "text", "text": "Hi"},
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}},
        {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []},
        {"type": "server_tool_use", "id": "s2", "name": "web_search", "input": {}},
    )
    result = parse_messages_response(body)
    parse_messages_response(body)
    assert [b["type"] for b in result.metadata["unknown_blocks"]] == [
        "server_tool_use",
        "web_search_tool_result",
        "server_tool_use",
    ]
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 2
    assert "'server_tool_use'" in warnings[0] and "'web_search_tool_result'" in warnings[1]


def test_no_unknown_content_means_no_metadata_key(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    result = parse_messages_response(anthropic_body({"type": "text", "text": "Hi"}))
    assert "unknown_blocks" not in result.metadata
    assert not [r for r in caplog.records if r.name == LOGGER]
