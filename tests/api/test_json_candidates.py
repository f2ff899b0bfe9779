"""Structured output: where a model's answer may hold its JSON."""

from __future__ import annotations

from flink_agents.api.agents.types import json_candidates


def test_the_whole_text_then_each_fenced_block_then_the_outermost_braces() -> None:
    text = 'Here:\n```json\n{"value": 1}\n```\nor\n```\n{"value": 2}\n``` done'
    assert json_candidates(text) == [
        text.strip(),
        '{"value": 1}',
        '{"value": 2}',
        '{"value": 1}\n```\nor\n```\n{"value": 2}',
    ]


def test_empty_candidates_are_left_out() -> None:
    assert json_candidates("  ") == []
    assert json_candidates("``````") == ["``````"]
