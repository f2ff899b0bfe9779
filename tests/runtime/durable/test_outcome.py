"""Recording outcomes as tagged JSON and replaying them (the codec: tests/api/test_values.py)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from flink_agents.api import ChatMessage, ChatModelError, ChatResult, StoredClassRefusedError, Usage
from flink_agents.api._class_path import allow_stored_class_modules
from flink_agents.runtime.durable import DurableCallFailedError, DurableReplayError
from flink_agents.runtime.durable.outcome import (
    error_outcome,
    rebuild_exception,
    replay_outcome,
    value_outcome,
)
from flink_agents.runtime.durable.records import CallOutcome
from tests.fakes.planted_module import PlantedModule

from ._support import Colour, Ticket


def test_a_result_is_recorded_as_its_tagged_json_and_replayed_as_itself() -> None:
    value = {"t": (1, Colour.RED), "$k": Ticket(id=1, title="t", tags=["a"])}
    outcome = value_outcome(value)
    assert outcome.value_json == (
        '{"t":{"$tuple":[1,{"$enum":"tests.runtime.durable._support:Colour","$value":"red"}]},'
        '"$$k":{"$model":"tests.runtime.durable._support:Ticket",'
        '"$data":{"id":1,"title":"t","tags":["a"]}}}'
    )
    replayed = replay_outcome(outcome)
    assert replayed == value
    assert type(replayed["t"]) is tuple and type(replayed["t"][1]) is Colour


def test_a_chat_result_replays_as_a_chat_result() -> None:
    result = ChatResult(message=ChatMessage.assistant("hi"), model="m", usage=Usage(input_tokens=0))
    replayed = replay_outcome(value_outcome(result))
    assert type(replayed) is ChatResult and replayed == result


class Opaque:
    def __repr__(self) -> str:
        return "Opaque(token='tok-999')"


def test_a_result_that_is_not_json_raises_type_error_naming_the_function_and_type() -> None:
    with pytest.raises(TypeError, match="cannot be recorded") as raised:
        value_outcome({"x": [Opaque()]}, function="mod:tool")
    assert "mod:tool" in str(raised.value)
    assert "a value of type Opaque" in str(raised.value)
    assert "tok-999" not in str(raised.value)


def test_models_defined_in_a_function_cannot_be_recorded() -> None:
    class Local(BaseModel):
        x: int

    with pytest.raises(TypeError, match="define it at module level"):
        value_outcome(Local(x=1))


def _recorded(value_json: str) -> CallOutcome:
    return CallOutcome(status="value", value_json=value_json)


def test_recorded_model_whose_class_is_gone_raises_replay_error() -> None:
    text = json.dumps({"$model": "tests.runtime.durable._support:Removed", "$data": {}})
    with pytest.raises(DurableReplayError, match="cannot be imported"):
        replay_outcome(_recorded(text))


def test_recorded_model_that_no_longer_validates_raises_replay_error() -> None:
    text = json.dumps({"$model": "tests.runtime.durable._support:Ticket", "$data": {"id": "x"}})
    with pytest.raises(DurableReplayError, match="no longer validates"):
        replay_outcome(_recorded(text))


def test_a_record_that_is_not_json_raises_replay_error() -> None:
    with pytest.raises(DurableReplayError, match="not valid JSON"):
        replay_outcome(_recorded("{oops"))


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


def test_a_recorded_exception_of_a_module_not_imported_replays_as_a_generic_error(
    planted_module: PlantedModule,
) -> None:
    path = planted_module.path("Boom")
    outcome = CallOutcome(status="error", error_type=path, error_message="it broke")
    with pytest.raises(DurableCallFailedError) as raised:
        replay_outcome(outcome)
    assert (raised.value.error_type, raised.value.error_message) == (path, "it broke")
    assert not planted_module.imported


def test_a_recorded_exception_of_an_allowed_module_replays_as_itself(
    planted_module: PlantedModule,
) -> None:
    allow_stored_class_modules([planted_module.name])
    rebuilt = rebuild_exception(planted_module.path("Boom"), "it broke")
    assert type(rebuilt).__name__ == "Boom" and str(rebuilt) == "it broke"
    assert planted_module.imported


def test_a_recorded_value_of_a_module_not_imported_is_refused(
    planted_module: PlantedModule,
) -> None:
    text = json.dumps({"$model": planted_module.path("Payload"), "$data": {}})
    with pytest.raises(StoredClassRefusedError, match=planted_module.name):
        replay_outcome(_recorded(text))
    assert not planted_module.imported
