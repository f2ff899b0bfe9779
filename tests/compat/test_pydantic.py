"""What `flink_agents._compat.pydantic` assumes holds in the installed pydantic, and its
reaches make complete model instances."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, PrivateAttr

from flink_agents._compat import Assumption, IncompatibleDependencyError
from flink_agents._compat import pydantic as compat_pydantic
from flink_agents._compat.pydantic import (
    field_values,
    private_values,
    slot_setters,
    with_private,
)


@pytest.mark.parametrize("assumption", compat_pydantic.ASSUMPTIONS, ids=lambda a: a.text[:50])
def test_the_installed_pydantic_is_as_assumed(assumption: Assumption) -> None:
    assumption.check()


class _Point(BaseModel):
    model_config = ConfigDict(validate_assignment=True)

    x: int
    y: int = 0


def test_the_slot_setters_make_a_complete_instance() -> None:
    set_dict, set_fields_set, set_extra, set_private = slot_setters()
    point = _Point.__new__(_Point)
    set_dict(point, {"x": 1, "y": 2})
    set_fields_set(point, {"x"})
    set_extra(point, None)
    set_private(point, None)
    assert point == _Point(x=1, y=2)
    assert point.model_fields_set == {"x"}
    assert point.model_dump() == {"x": 1, "y": 2}
    assert field_values(point) == {"x": 1, "y": 2}


def test_a_pydantic_without_the_slots_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat_pydantic, "INSTANCE_SLOTS", ("__dict__", "__no_such_slot__"))
    with pytest.raises(IncompatibleDependencyError, match=r"^pydantic \S+ breaks .* in the slots"):
        slot_setters()


class _WithPrivate(BaseModel):
    _cache: object = PrivateAttr(default=None)


def test_private_values_and_a_pickled_state_without_them() -> None:
    model = _WithPrivate()
    model._cache = "this process's"
    assert private_values(model) == {"_cache": "this process's"}
    state = with_private(model.__getstate__(), _cache=None)
    copy = _WithPrivate.__new__(_WithPrivate)
    copy.__setstate__(state)
    assert copy._cache is None
    assert model._cache == "this process's"  # the state is a copy's, not the model's


def test_a_state_without_private_attributes_is_named() -> None:
    with pytest.raises(IncompatibleDependencyError, match=r"^pydantic \S+ breaks .*__getstate__"):
        with_private({"__dict__": {}}, _cache=None)
