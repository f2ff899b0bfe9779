"""Recording outcomes as tagged JSON and replaying them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.api import ChatMessage, ChatModelError, ChatResult, Usage
from flink_agents.runtime.durable import DurableCallFailedError, DurableReplayError
from flink_agents.runtime.durable.outcome import (
    decode_value,
    encode_value,
    error_outcome,
    rebuild_exception,
    replay_outcome,
    value_outcome,
)
from flink_agents.runtime.durable.records import CallOutcome

from ._support import Colour, Ticket


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -3,
        2.5,
        "",
        "naïve ☕",
        [],
        {},
        [1, [2, [3]]],
        {"a": None, "b": [True, 1.5]},
        (1, "two", None),
        {"nested": (Colour.RED, [Colour.BLUE])},
        {"$model": "looks like a tag", "$$double": 1, "$tuple": [1]},
        Ticket(id=1, title="t", tags=["a"]),
        [Ticket(id=2, title="u"), {"t": Ticket(id=3, title="v")}],
        ChatResult(message=ChatMessage.assistant("hi"), model="m", usage=Usage(input_tokens=0)),
    ],
)
def test_values_round_trip_exactly(value: Any) -> None:
    text = encode_value(value)
    json.loads(text)  # plain JSON
    decoded = decode_value(text)
    assert decoded == value
    assert type(decoded) is type(value)


def test_tag_lookalike_keys_are_escaped() -> None:
    text = encode_value({"$model": "x:Y", "$data": {}})
    assert json.loads(text) == {"$$model": "x:Y", "$$data": {}}
    assert decode_value(text) == {"$model": "x:Y", "$data": {}}


def test_plain_subclasses_replay_as_plain_values() -> None:
    class Name(str):
        pass

    assert decode_value(encode_value({"n": Name("ann")})) == {"n": "ann"}


class Opaque:
    def __repr__(self) -> str:
        return "Opaque(token='tok-999')"


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (b"tok-999", "bytes"),
        ({"x": Opaque()}, "Opaque"),
        ({1: "tok-999"}, "dict key of type int"),
        ([float("nan")], "NaN"),
        ({"s": {1}}, "set"),
    ],
)
def test_results_that_are_not_json_raise_type_error(value: Any, type_name: str) -> None:
    with pytest.raises(TypeError, match="cannot be recorded") as raised:
        value_outcome(value, function="mod:tool")
    assert type_name in str(raised.value)
    assert "mod:tool" in str(raised.value)
    assert "tok-999" not in str(raised.value)


def test_models_defined_in_a_function_cannot_be_recorded() -> None:
    class Local(BaseModel):
        x: int

    with pytest.raises(TypeError, match="define it at module level"):
        encode_value(Local(x=1))


def test_recorded_model_whose_class_is_gone_raises_replay_error() -> None:
    text = json.dumps({"$model": "tests.runtime.durable._support:Removed", "$data": {}})
    with pytest.raises(DurableReplayError, match="cannot be imported"):
        decode_value(text)


def test_recorded_model_that_no_longer_validates_raises_replay_error() -> None:
    text = json.dumps({"$model": "tests.runtime.durable._support:Ticket", "$data": {"id": "x"}})
    with pytest.raises(DurableReplayError, match="no longer validates"):
        decode_value(text)


def test_error_outcome_records_type_path_and_message() -> None:
    outcome = error_outcome(ChatModelError("rate limited", status_code=429, retryable=True))
    assert outcome == CallOutcome(
        status="error",
        error_type="flink_agents.api.errors:ChatModelError",
        error_message="rate limited",
    )
    with pytest.raises(ChatModelError, match="rate limited"):
        replay_outcome(outcome)


def test_rebuild_exception_falls_back_to_durable_call_failed() -> None:
    assert type(rebuild_exception("builtins:ValueError", "bad")) is ValueError
    for error_type in (
        "tests.runtime.durable._support:NeedsTwoArgs",  # needs more than a message
        "tests.runtime.durable._support:Ticket",  # not an exception
        "no.such.module:Error",
        "builtins:KeyboardInterrupt",  # not an Exception
    ):
        rebuilt = rebuild_exception(error_type, "msg")
        assert isinstance(rebuilt, DurableCallFailedError)
        assert (rebuilt.error_type, rebuilt.error_message) == (error_type, "msg")


def test_durable_call_failed_error_pickles() -> None:
    import pickle

    error = pickle.loads(pickle.dumps(DurableCallFailedError("a:B", "m")))
    assert (error.error_type, error.error_message, str(error)) == ("a:B", "m", "a:B: m")


def test_replay_of_value_outcome() -> None:
    assert replay_outcome(value_outcome({"k": (1,)})) == {"k": (1,)}
