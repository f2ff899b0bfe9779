"""The fingerprint of a model call's request: what it covers, and that it is stable."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from flink_agents.api import ChatMessage, ImageBlock, ToolCallBlock, ToolMetadata
from flink_agents.runtime.model_request import model_request_fingerprint

MESSAGES = [
    ChatMessage.system("You are a support agent."),
    ChatMessage.user("What is the weather?"),
]
TOOLS = [
    ToolMetadata(
        name="lookup",
        description="Look a ticket up.",
        args_schema={"type": "object", "properties": {"ticket": {"type": "string"}}},
    )
]
PARAMS: dict[str, Any] = {"model": "gpt-x", "temperature": 0.2}


def fingerprint(**changes: Any) -> str:
    request: dict[str, Any] = {
        "model": "chat",
        "connection": "provider",
        "messages": MESSAGES,
        "tools": TOOLS,
        "params": PARAMS,
    }
    request.update(changes)
    return model_request_fingerprint(**request)


def test_is_a_sha256_hex_and_the_same_for_the_same_request() -> None:
    first = fingerprint()
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert fingerprint() == first
    # After the messages went through JSON (a checkpoint) and with reordered params.
    restored = [ChatMessage.model_validate(m.model_dump(mode="json")) for m in MESSAGES]
    assert fingerprint(messages=restored, params=dict(reversed(PARAMS.items()))) == first


@pytest.mark.parametrize(
    "changes",
    [
        {"messages": [MESSAGES[0], ChatMessage.user("Cancel my order #42")]},
        {"messages": [ChatMessage.system("You are terse."), MESSAGES[1]]},
        {"messages": MESSAGES[1:]},
        {"messages": [*MESSAGES, ChatMessage.assistant("Sunny.")]},
        {"tools": []},
        {"tools": [TOOLS[0].model_copy(update={"name": "find"})]},
        {"tools": [TOOLS[0].model_copy(update={"description": "Find a ticket."})]},
        {"tools": [TOOLS[0].model_copy(update={"args_schema": {"type": "object"}})]},
        {"model": "other-chat"},
        {"connection": "other-provider"},
        {"params": {**PARAMS, "temperature": 0.9}},
        {"params": {**PARAMS, "model": "gpt-y"}},
        {"params": {**PARAMS, "max_tokens": 10}},
    ],
)
def test_covers_messages_tools_model_and_params(changes: dict[str, Any]) -> None:
    assert fingerprint(**changes) != fingerprint()


def test_covers_tool_calls_and_media_of_messages() -> None:
    calls = [
        ChatMessage.assistant(tool_calls=[ToolCallBlock(id="c1", name="lookup", input={"t": n})])
        for n in ("1", "2")
    ]
    assert fingerprint(messages=calls[:1]) != fingerprint(messages=calls[1:])
    images = [
        ChatMessage.user([ImageBlock(data=data, mime_type="image/png")])
        for data in ("YQ==", "Yg==")
    ]
    assert fingerprint(messages=images[:1]) != fingerprint(messages=images[1:])


def test_message_metadata_is_not_sent_so_not_covered() -> None:
    question = MESSAGES[1].model_copy(update={"metadata": {"received_at": 1700000000}})
    annotated = [MESSAGES[0], question]
    assert fingerprint(messages=annotated) == fingerprint()


def test_params_without_a_json_form_count_by_their_type() -> None:
    class Timeout:
        def __init__(self, seconds: float) -> None:
            self.seconds = seconds

    with_object = fingerprint(params={**PARAMS, "timeout": Timeout(5), "extra": {"x": {1, 2}}})
    assert with_object == fingerprint(params={**PARAMS, "timeout": Timeout(9), "extra": {"x": {3}}})
    assert with_object != fingerprint()
    assert fingerprint(params={**PARAMS, "t": math.nan}) == fingerprint(
        params={**PARAMS, "t": math.nan}
    )


def test_the_fingerprint_does_not_change_between_versions() -> None:
    """Records written by an earlier version must still match: a change here is a change of
    `FINGERPRINT_SCHEME`."""
    assert fingerprint() == "a4135aacd433fc9f4acbb1587adabb457dc90d71066d8f64e6f7badd7f46cbab"


def test_fields_left_none_do_not_count() -> None:
    """A field a block gains later with a None default (as `ToolCallBlock.signature` came)
    must not change the digest of histories recorded before it: None fields are left out."""
    call = ChatMessage.assistant("", tool_calls=[ToolCallBlock(id="c1", name="lookup", input={})])
    pinned = "de73e2840a1f9d99a25a62543a0ed70ee72b806fdd3dc07d78e60247385e19e8"
    assert fingerprint(messages=[*MESSAGES, call]) == pinned
