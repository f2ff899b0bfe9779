"""A job script's own classes and tool hints, prepared where the job is built for the
workers that get them by value (cloudpickle)."""

from __future__ import annotations

import types
from typing import Any

import cloudpickle

from flink_agents.api._type_hints import type_hints
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.runtime.flink.job_script import script_classes, ship_tool_type_hints

_SCRIPT = '''
from __future__ import annotations

import enum
import threading

from pydantic import BaseModel


class CityQuery(BaseModel):
    city: str
    days: int = 1


class Weather(BaseModel):
    class Detail(BaseModel):
        wind: str

    city: str


class Mood(enum.Enum):
    SUNNY = "sunny"


class Plain:  # neither a model nor an enum: never written by name
    pass


class Locked(BaseModel):  # cannot be pickled: left out
    lock: object = None


Locked.held = threading.Lock()
Alias = Weather
Imported = enum.Enum


def forecast(query: CityQuery) -> str:
    """Today's forecast.

    Args:
        query: Where.
    """
    return type(query).__name__
'''


def _script_module(name: str = "__main__") -> types.ModuleType:
    """The script above, run as a module called ``name`` (not in sys.modules)."""
    module = types.ModuleType(name)
    exec(compile(_SCRIPT, "<job script>", "exec"), module.__dict__)
    return module


def test_script_classes_are_its_models_and_enums_nested_ones_too() -> None:
    module = _script_module()
    found = script_classes(module)
    assert [c.__qualname__ for c in found] == ["CityQuery", "Weather", "Weather.Detail", "Mood"]
    assert all(c.__module__ == "__main__" for c in found)


def test_no_script_module_no_classes() -> None:
    assert script_classes(types.ModuleType("__main__")) == ()


def _shipped(func: Any) -> Any:
    """``func`` as a worker gets it: pickled by value, with only the globals its code uses."""
    return cloudpickle.loads(cloudpickle.dumps(func))


def test_a_shipped_tool_without_its_hints_cannot_resolve_them() -> None:
    # The trap: under `from __future__ import annotations` the worker's copy of the function
    # cannot resolve `CityQuery` (its argument model would get a dict, or fail).
    module = _script_module()
    shipped = _shipped(module.forecast)
    assert "CityQuery" not in shipped.__globals__
    assert type_hints(shipped) is None


def test_tool_functions_and_function_tools_ship_their_hints() -> None:
    module = _script_module()
    tool = FunctionTool.from_function(module.forecast)
    ship_tool_type_hints([tool, "not a tool", 3, module.Weather])
    assert type_hints(_shipped(module.forecast)) == {"query": module.CityQuery, "return": str}
    assert type_hints(_shipped(tool).func) == {"query": module.CityQuery, "return": str}
