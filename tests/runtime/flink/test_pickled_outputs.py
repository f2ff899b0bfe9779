"""Outputs leave the agent operator as pickled bytes with the job script's classes in them.

A class that cloudpickle shipped by value (a job script's `__main__` class in a worker) is
simulated here by a class whose `__module__` is `__main__` under a name `__main__` lacks:
the standard pickle cannot name it, as in a thread-mode TaskManager.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.runtime.flink.pickled_outputs import ByValue, by_value, is_plain_data


def _script_class() -> type[BaseModel]:
    class Weather(BaseModel):
        city: str
        summary: str

    Weather.__module__ = "__main__"
    Weather.__qualname__ = "WeatherOnlyInTheClient"
    return Weather


def test_the_standard_pickle_cannot_name_a_class_shipped_by_value() -> None:
    weather = _script_class()(city="Lyon", summary="sunny")
    with pytest.raises(pickle.PicklingError, match="WeatherOnlyInTheClient"):
        pickle.dumps(weather)


@pytest.mark.parametrize("shape", ["itself", "in a dict", "in a list"])
def test_a_wrapped_output_unpickles_as_the_value_of_the_same_class(shape: str) -> None:
    weather_class = _script_class()
    weather = weather_class(city="Lyon", summary="sunny")
    output: Any = {
        "itself": weather,
        "in a dict": {"customer": "c1", "weather": weather},
        "in a list": [1, weather],
    }[shape]
    wrapped = by_value(output)
    assert isinstance(wrapped, ByValue)
    restored = pickle.loads(pickle.dumps(wrapped))  # what PyFlink does in thread mode
    assert restored == output
    found = {"itself": lambda: restored, "in a dict": lambda: restored["weather"]}.get(
        shape, lambda: restored[1]
    )()
    assert type(found) is weather_class  # not a copy: the very class


@pytest.mark.parametrize(
    "value",
    [None, "text", 3, 2.5, True, b"raw", [1, "a"], ("t", 1), {"a": {"b": [None, 1.0]}}],
)
def test_plain_data_goes_out_as_it_is(value: Any) -> None:
    assert is_plain_data(value)
    assert by_value(value) is value


def test_anything_else_is_wrapped() -> None:
    class Text(str):
        pass

    for value in (Text("x"), {1, 2}, {"k": Text("x")}, [object()], list(range(20_000))):
        assert not is_plain_data(value)
        assert isinstance(by_value(value), ByValue)


def test_the_operator_wraps_outputs_and_failure_records() -> None:
    from flink_agents.runtime.flink.operator import ERROR_OUTPUT, _routed
    from flink_agents.runtime.input_failure import FailedInput

    weather = _script_class()(city="Lyon", summary="sunny")
    record = FailedInput({"key": "k", "input": weather})
    routed = list(_routed([weather, "plain", record], pickled=True))
    assert isinstance(routed[0], ByValue) and routed[0].value is weather
    assert routed[1] == "plain"
    tag, failure = routed[2]
    assert tag is ERROR_OUTPUT and isinstance(failure, ByValue)
    assert list(_routed([weather], pickled=False)) == [weather]  # another output type
