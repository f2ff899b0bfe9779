"""Failure records leave the agent operator as pickled bytes with the job script's classes
in them (outputs leave as JSON values).

A class that cloudpickle shipped by value (a job script's `__main__` class in a worker) is
simulated here by a class whose `__module__` is `__main__` under a name `__main__` lacks:
the standard pickle cannot name it, as in a thread-mode TaskManager.
"""

from __future__ import annotations

import copy
import copyreg
import json
import pickle
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.runtime.flink.pickled_outputs import (
    hold_reducers,
    pickle_by_value,
    release_reducers,
)


@pytest.fixture(autouse=True)
def held_reducers() -> Iterator[None]:
    """Each test holds the reducers as an open operator does; afterwards the process's
    `copyreg` is as it was."""
    before = dict(copyreg.dispatch_table)
    hold_reducers()
    yield
    release_reducers()
    assert copyreg.dispatch_table == before


class Named(BaseModel):
    """A class pickle names by module and name."""

    text: str


def _script_classes() -> tuple[type[BaseModel], type[BaseModel]]:
    class Weather(BaseModel):
        city: str
        summary: str

    class Report(BaseModel):
        weather: Weather
        note: str

    for cls in (Weather, Report):
        cls.__module__ = "__main__"
        cls.__qualname__ = f"{cls.__name__}OnlyInTheClient"
    return Weather, Report


def test_the_standard_pickle_cannot_name_a_class_shipped_by_value() -> None:
    weather_class, _ = _script_classes()
    with pytest.raises(pickle.PicklingError, match="WeatherOnlyInTheClient"):
        pickle.dumps(weather_class(city="Lyon", summary="sunny"))


@pytest.mark.parametrize("shape", ["itself", "in a dict", "in a list", "in a tuple"])
def test_an_output_pickles_after_it_was_looked_at_and_comes_back_of_the_same_class(
    shape: str,
) -> None:
    weather_class, _ = _script_classes()
    weather = weather_class(city="Lyon", summary="sunny")
    output: Any = {
        "itself": weather,
        "in a dict": {"customer": "c1", "weather": weather},
        "in a list": [1, weather],
        "in a tuple": ("t", [weather]),
    }[shape]
    pickle_by_value(output)
    restored = pickle.loads(pickle.dumps(output))  # what PyFlink does in thread mode
    assert restored == output
    found = {
        "itself": lambda: restored,
        "in a dict": lambda: restored["weather"],
        "in a list": lambda: restored[1],
    }.get(shape, lambda: restored[1][0])()
    assert type(found) is weather_class  # not a copy: the very class


def test_objects_of_such_classes_inside_one_another_pickle_once_by_value() -> None:
    weather_class, report_class = _script_classes()
    report = report_class(weather=weather_class(city="Oslo", summary="grey"), note="n")
    pickle_by_value(report)
    restored = pickle.loads(pickle.dumps(report))
    assert restored == report and type(restored.weather) is weather_class


def test_such_objects_are_found_in_the_fields_of_an_object_of_a_named_class() -> None:
    weather_class, _ = _script_classes()
    weather = weather_class(city="Lyon", summary="sunny")
    outer = Named.model_construct(text=weather)  # type: ignore[arg-type]
    pickle_by_value(outer)
    restored = pickle.loads(pickle.dumps(outer))
    assert type(restored.text) is weather_class and restored.text == weather


def test_copies_of_such_objects_stay_equal_objects_of_their_class() -> None:
    weather_class, _ = _script_classes()
    weather = weather_class(city="Lyon", summary="sunny")
    pickle_by_value(weather)
    for copied in (copy.copy(weather), copy.deepcopy(weather)):
        assert copied == weather and type(copied) is weather_class


@pytest.mark.parametrize(
    "value",
    [None, "text", 3, 2.5, True, b"raw", [1, "a"], ("t", 1), {"a": {"b": [None, 1.0]}}],
)
def test_plain_data_and_named_classes_get_no_reducer(value: Any) -> None:
    before = dict(copyreg.dispatch_table)
    pickle_by_value(value)
    pickle_by_value({"named": Named(text="x")})
    assert copyreg.dispatch_table == before


def test_builtin_classes_pickle_cannot_name_get_no_reducer() -> None:
    before = dict(copyreg.dispatch_table)
    pickle_by_value([lambda: None, len.__call__])  # function, method-wrapper
    assert copyreg.dispatch_table == before


def test_an_output_is_looked_at_up_to_ten_thousand_items() -> None:
    weather_class, _ = _script_classes()
    output = [*range(20_000), weather_class(city="Lyon", summary="sunny")]
    pickle_by_value(output)
    with pytest.raises(pickle.PicklingError):
        pickle.dumps(output)


def test_the_operator_sends_outputs_as_json_and_failure_records_as_they_are() -> None:
    from flink_agents.runtime.flink.operator import ERROR_OUTPUT, _routed
    from flink_agents.runtime.input_failure import FailedInput

    weather_class, report_class = _script_classes()
    weather = weather_class(city="Lyon", summary="sunny")
    report = report_class(weather=weather, note="n")
    record = FailedInput({"key": "k", "input": report})
    routed = list(_routed([weather, "plain", record]))
    # An output as upstream's JSON crossing leaves it: json.dumps takes it downstream.
    assert routed[0] == {"city": "Lyon", "summary": "sunny"}
    assert json.dumps(routed[0]) == '{"city": "Lyon", "summary": "sunny"}'
    assert routed[1] == "plain"
    tag, failure = routed[2]
    assert tag is ERROR_OUTPUT and failure is record.record  # the input as it arrived
    assert pickle.loads(pickle.dumps(failure)) == record.record


def test_the_last_release_removes_exactly_the_reducers_added() -> None:
    weather_class, _ = _script_classes()
    before = dict(copyreg.dispatch_table)
    hold_reducers()  # a second operator in the process
    pickle_by_value(weather_class(city="Lyon", summary="sunny"))
    release_reducers()
    assert weather_class in copyreg.dispatch_table  # the other one still holds them
    release_reducers()
    try:
        assert copyreg.dispatch_table == before
        with pytest.raises(pickle.PicklingError):
            pickle.dumps(weather_class(city="Lyon", summary="sunny"))
        with pytest.raises(RuntimeError, match="hold_reducers"):
            pickle_by_value(weather_class(city="Lyon", summary="sunny"))
    finally:
        hold_reducers()  # as the fixture expects


def test_a_reducer_someone_replaced_is_left_to_them() -> None:
    weather_class, _ = _script_classes()
    pickle_by_value(weather_class(city="Lyon", summary="sunny"))

    def theirs(obj: Any) -> Any:
        return (str, ("theirs",))

    copyreg.pickle(weather_class, theirs)
    release_reducers()
    try:
        assert copyreg.dispatch_table.pop(weather_class) is theirs
    finally:
        hold_reducers()
