"""Type hints resolved where a function is pickled travel with it (`_type_hints`)."""

from __future__ import annotations

import types
from typing import Annotated, Any

import cloudpickle

from flink_agents.api._type_hints import ShippedTypeHints, ship_type_hints, type_hints

_SCRIPT = """
from __future__ import annotations

from typing import Annotated


class CityQuery:
    pass


def forecast(query: CityQuery, days: Annotated[int, "how many"] = 1) -> str:
    return "sunny"


def broken(query: Missing) -> str:
    return "never"
"""


def _script() -> types.ModuleType:
    module = types.ModuleType("__main__")
    exec(compile(_SCRIPT, "<job script>", "exec"), module.__dict__)
    return module


def _shipped(func: Any) -> Any:
    return cloudpickle.loads(cloudpickle.dumps(func))


def test_hints_resolve_where_the_function_was_written() -> None:
    module = _script()
    assert type_hints(module.forecast) == {
        "query": module.CityQuery,
        "days": Annotated[int, "how many"],
        "return": str,
    }


def test_a_shipped_copy_resolves_them_only_when_they_were_shipped() -> None:
    module = _script()
    assert type_hints(_shipped(module.forecast)) is None
    ship_type_hints(module.forecast)
    shipped = _shipped(module.forecast)
    assert isinstance(shipped.__dict__["__flink_agents_type_hints__"], ShippedTypeHints)
    assert type_hints(shipped) == {
        "query": module.CityQuery,
        "days": Annotated[int, "how many"],
        "return": str,
    }


def test_hints_that_never_resolve_are_none_everywhere() -> None:
    module = _script()
    ship_type_hints(module.broken)
    assert type_hints(module.broken) is None
    assert type_hints(_shipped(module.broken)) is None


def test_callables_without_attributes_are_left_alone() -> None:
    ship_type_hints(len)
    assert not hasattr(len, "__flink_agents_type_hints__")
