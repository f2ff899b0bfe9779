"""Values of a job script's classes in a Flink worker: registered by their `__main__` paths
(`register_script_classes`), they are read back as those classes, also by name (the durable
call log) and after a restore in a fresh process.

A worker's copy of a script class is simulated by a class whose `__module__` is `__main__`
under a name `__main__` lacks, as cloudpickle rebuilds it in a TaskManager.
"""

from __future__ import annotations

import enum
import itertools

import pytest
from pydantic import BaseModel

from flink_agents.api._values import (
    ModelClassRef,
    UndecodableValueError,
    UnencodableValueError,
    decode_value,
    encode_value,
    register_script_classes,
)

_NAMES = itertools.count()


def _worker_copy(cls: type) -> type:
    """``cls`` as a script class in a worker: `__main__:<unique name>`, not importable."""
    cls.__module__ = "__main__"
    cls.__qualname__ = cls.__name__ = f"{cls.__name__}Script{next(_NAMES)}"
    return cls


def _weather_class() -> type[BaseModel]:
    class Weather(BaseModel):
        city: str

    return _worker_copy(Weather)


def _state_written_before_the_restore(cls: type) -> dict:
    # What an earlier process wrote: the path and the data (this process never wrote it).
    return {"$model": f"__main__:{cls.__qualname__}", "$data": {"city": "Lyon"}}


def test_a_fresh_process_reads_an_unregistered_script_class_as_plain_data() -> None:
    weather = _weather_class()
    written = _state_written_before_the_restore(weather)
    assert decode_value(written) == {"city": "Lyon"}  # the trap: the type is gone
    with pytest.raises(UndecodableValueError):
        decode_value(written, by_name=True)


def test_a_registered_script_class_is_read_back_as_itself() -> None:
    weather = _weather_class()
    written = _state_written_before_the_restore(weather)
    register_script_classes([weather])
    for by_name in (False, True):
        value = decode_value(written, by_name=by_name)
        assert type(value) is weather and value == weather(city="Lyon")


def test_durable_records_accept_registered_script_classes_only() -> None:
    weather = _weather_class()
    with pytest.raises(UnencodableValueError, match="cannot be imported by name"):
        encode_value(weather(city="Lyon"), by_name=True)
    register_script_classes([weather])
    written = encode_value(weather(city="Lyon"), by_name=True)
    assert written == {"$model": f"__main__:{weather.__qualname__}", "$data": {"city": "Lyon"}}
    assert decode_value(written, by_name=True) == weather(city="Lyon")


def test_script_enums_and_output_schemas() -> None:
    class Mood(enum.Enum):
        SUNNY = "sunny"

    mood = _worker_copy(Mood)
    weather = _weather_class()
    register_script_classes([mood, weather])
    assert decode_value({"$enum": f"__main__:{mood.__qualname__}", "$value": "sunny"}) is (
        mood.SUNNY  # type: ignore[attr-defined]
    )
    assert decode_value({"$class": f"__main__:{weather.__qualname__}"}, by_name=True) is weather

    class Request(BaseModel):
        output_schema: ModelClassRef = None

    restored = Request.model_validate_json(
        f'{{"output_schema": "__main__:{weather.__qualname__}"}}'
    )
    assert restored.output_schema is weather


def test_the_last_registration_of_a_path_wins() -> None:
    first = _weather_class()
    second = _weather_class()
    second.__qualname__ = second.__name__ = first.__qualname__  # another job's, same name
    register_script_classes([first])
    register_script_classes([second])
    assert type(decode_value(_state_written_before_the_restore(first), by_name=True)) is second
