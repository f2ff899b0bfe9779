"""`crossing_value`: an agent output as upstream's event JSON carries it between operators
(Apache Flink Agents 0.3+: its OutputEvent crosses the Java operator as JSON and comes out
of `to_datastream()` as what that JSON reads back as).

The oracle is a pydantic model with upstream's event shape (``attributes: Dict[str, Any]``)
written with ``model_dump_json`` and read with ``json.loads``, as upstream's crossing does.
"""

from __future__ import annotations

import datetime
import enum
import json
import uuid
from typing import Any

import pytest
from pydantic import BaseModel, Field
from pyflink.common import Row

from flink_agents.api._values import UnencodableValueError, crossing_value


class Mood(enum.Enum):
    SUNNY = "sunny"


class Weather(BaseModel):
    city: str
    mood: Mood
    at: datetime.datetime
    tags: tuple[str, ...] = ()


class Report(BaseModel):
    weather: Weather
    score: float = Field(alias="Score")
    note: str | None = None


class _EventShape(BaseModel):
    attributes: dict[str, Any]


def upstream_crossing(value: Any) -> Any:
    return json.loads(_EventShape(attributes={"output": value}).model_dump_json())["attributes"][
        "output"
    ]


WEATHER = Weather(city="Lyon", mood=Mood.SUNNY, at=datetime.datetime(2026, 1, 2, 3, 4), tags=("a",))


@pytest.mark.parametrize(
    "value",
    [
        None,
        "text",
        15,
        2.5,
        True,
        {"id": 1, "result": 15},
        [1, "a", None],
        (1, ("a", 2)),
        WEATHER,
        Report(weather=WEATHER, Score=0.5),
        {"reports": [Report(weather=WEATHER, Score=1.0, note="n")], "n": (1, 2)},
        Mood.SUNNY,
        uuid.UUID(int=7),
    ],
    ids=repr,
)
def test_an_output_crosses_as_upstreams_event_json_carries_it(value: Any) -> None:
    crossed = crossing_value(value)
    assert crossed == upstream_crossing(value)
    assert json.loads(json.dumps(crossed)) == crossed  # json.dumps downstream, as upstream's jobs


def test_a_model_becomes_its_json_dict_with_field_names() -> None:
    report = Report(weather=WEATHER, Score=0.5)
    assert crossing_value(report) == {
        "weather": {"city": "Lyon", "mood": "sunny", "at": "2026-01-02T03:04:00", "tags": ["a"]},
        "score": 0.5,
        "note": None,
    }


def test_rows_stay_rows_of_crossed_values() -> None:
    crossed = crossing_value(Row(id="p1", weather=WEATHER))
    assert isinstance(crossed, Row)
    assert crossed.as_dict() == {"id": "p1", "weather": upstream_crossing(WEATHER)}
    unnamed = crossing_value([Row("a", (1, 2))])
    assert isinstance(unnamed[0], Row) and list(unnamed[0]) == ["a", [1, 2]]


def test_an_output_without_json_form_is_refused_by_type() -> None:
    class Opaque:
        pass

    class Holder(BaseModel):
        value: Any

    with pytest.raises(UnencodableValueError, match=r"model_dump\(mode='json'\) of .*Holder"):
        crossing_value({"x": Holder(value=Opaque())})
    with pytest.raises(UnencodableValueError, match="type set"):
        crossing_value({"x": {1}})
