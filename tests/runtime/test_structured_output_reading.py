"""The chat action reads structured output where the ReAct agent does (`json_candidates`)."""

from __future__ import annotations

from pydantic import BaseModel

from flink_agents.api.agents.types import json_in_text
from flink_agents.runtime.builtin_actions import parse_structured_output


class Answer(BaseModel):
    value: int


def test_the_react_agent_and_the_chat_action_read_the_same_answer_alike() -> None:
    text = 'The answer is:\n```JSON\n{"value": 7}\n```'
    assert next(json_in_text(text)) == {"value": 7}
    assert parse_structured_output(text, Answer) == Answer(value=7)
