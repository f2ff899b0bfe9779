"""What agent state can keep: checked where values enter (inputs, sent events)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.api.events._codec import check_state_value


class Ticket(BaseModel):
    opened: dt.datetime


@pytest.mark.parametrize(
    "value",
    [
        None,
        "text",
        3,
        2.5,
        True,
        [1, "a", None],
        (1, 2),
        {"a": {"b": [1.0, {"c": "d"}]}},
        Ticket(opened=dt.datetime(2026, 1, 1)),  # a model keeps its datetime
        Ticket,  # a model class (an output schema)
    ],
)
def test_values_agent_state_keeps(value: Any) -> None:
    check_state_value(value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (b"raw", "input is a value of type bytes"),
        ({"a": {"b": {1, 2}}}, "input['a']['b'] is a value of type set"),
        ([1, dt.datetime(2026, 1, 1)], "input[1] is a value of type datetime"),
        ({1: "one"}, "input has a key of type int"),
        (float("nan"), "input is nan"),
        (object(), "input is a value of type object"),
    ],
)
def test_values_agent_state_refuses_name_where_and_what(value: Any, message: str) -> None:
    with pytest.raises(TypeError) as refused:
        check_state_value(value, "input")
    assert str(refused.value).startswith(message)
