"""Tool-call arguments from a response: one rule for every adapter."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.integrations.chat_models._tool_arguments import (
    arguments_json,
    parse_tool_arguments,
)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": [1, 2]}', {"a": [1, 2]}),
        ({"a": 1}, {"a": 1}),
        ("", {}),
        ("  \n", {}),
        (None, {}),
        ('{"a": 1', {"_raw_arguments": '{"a": 1'}),
        ("[1, 2]", {"_raw_arguments": "[1, 2]"}),
        ('"text"', {"_raw_arguments": '"text"'}),
        ("null", {"_raw_arguments": "null"}),
        (3, {"_raw_arguments": "3"}),
        (["é"], {"_raw_arguments": '["é"]'}),
    ],
)
def test_parse_tool_arguments(arguments: Any, expected: dict[str, Any]) -> None:
    assert parse_tool_arguments(arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "wire"),
    [
        ({"city": "Zürich"}, '{"city": "Zürich"}'),
        ({}, "{}"),
        ({"_raw_arguments": '{"a": 1'}, '{"a": 1'),
        ({"_raw_arguments": '{"a": 1', "b": 2}, '{"_raw_arguments": "{\\"a\\": 1", "b": 2}'),
    ],
)
def test_arguments_json_sends_raw_arguments_back_verbatim(
    arguments: dict[str, Any], wire: str
) -> None:
    assert arguments_json(arguments) == wire
