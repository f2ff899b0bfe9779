"""Class paths read from stored data import nothing of their own accord: a class is found
in a module already imported, or in one ``stored-classes.allowed-modules`` allows
(`flink_agents.api._class_path.find_stored_class`); a tampered record naming any other
module does not run it."""

from __future__ import annotations

import pickle
import re
from enum import Enum
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from flink_agents.api import AgentConfigOptions, OutputSchema, StoredClassRefusedError
from flink_agents.api._class_path import (
    allow_stored_class_modules,
    allowed_stored_class_modules,
    find_stored_class,
)
from flink_agents.api._values import AnyValue, ModelClassRef, decode_value
from tests.fakes.planted_module import PlantedModule


class Outer:
    class Inner(BaseModel):
        n: int = 0


class Shade(Enum):
    DARK = "dark"


def test_a_class_of_an_imported_module_is_found_without_an_import() -> None:
    assert find_stored_class(f"{__name__}:Outer.Inner") is Outer.Inner
    assert find_stored_class("builtins:ValueError") is ValueError
    assert find_stored_class(f"{__name__}:Missing") is None
    assert find_stored_class(f"{__name__}:Outer.Missing") is None
    assert find_stored_class(f"{__name__}:find_stored_class") is None  # not a class
    assert find_stored_class("no module part") is None


def test_a_module_not_imported_is_refused_and_never_runs(planted_module: PlantedModule) -> None:
    path = planted_module.path("Payload")
    with pytest.raises(StoredClassRefusedError) as raised:
        find_stored_class(path)
    assert not planted_module.imported
    error = raised.value
    assert (error.class_path, error.module) == (path, planted_module.name)
    assert AgentConfigOptions.STORED_CLASSES_ALLOWED_MODULES.key in str(error)
    assert path in str(error)
    again = pickle.loads(pickle.dumps(error))
    assert (again.class_path, str(again)) == (path, str(error))


def test_an_allowed_module_is_imported(planted_module: PlantedModule) -> None:
    allow_stored_class_modules(["  other.pkg ", planted_module.name])
    assert allowed_stored_class_modules() == tuple(sorted(["other.pkg", planted_module.name]))
    found = find_stored_class(planted_module.path("Outer.Inner"))
    assert planted_module.imported
    assert found is not None and found.__qualname__ == "Outer.Inner"


def test_a_prefix_allows_its_submodules_only(planted_module: PlantedModule) -> None:
    allow_stored_class_modules([planted_module.name[:-3]])  # a prefix of the name, no package
    with pytest.raises(StoredClassRefusedError):
        find_stored_class(planted_module.path("Payload"))
    assert not planted_module.imported


@pytest.mark.parametrize("by_name", [False, True])
@pytest.mark.parametrize(
    "tagged",
    [
        lambda m: {"$model": m.path("Payload"), "$data": {"text": "x"}},
        lambda m: {"$enum": m.path("Colour"), "$value": "red"},
        lambda m: {"$class": m.path("Outer.Inner")},
        lambda m: [1, {"k": ({"$model": m.path("Payload"), "$data": {}})}],
    ],
    ids=["model", "enum", "model-class", "nested"],
)
def test_a_tagged_value_naming_a_module_not_imported_is_refused(
    planted_module: PlantedModule, tagged: Any, by_name: bool
) -> None:
    with pytest.raises(StoredClassRefusedError, match=re.escape("stored-classes.allowed-modules")):
        decode_value(tagged(planted_module), by_name=by_name)
    assert not planted_module.imported


def test_a_tagged_value_of_an_allowed_module_decodes(planted_module: PlantedModule) -> None:
    allow_stored_class_modules([planted_module.name])
    value = decode_value({"$model": planted_module.path("Payload"), "$data": {"text": "x"}})
    assert type(value).__name__ == "Payload" and value.text == "x"


def test_values_of_imported_modules_decode_as_before() -> None:
    assert decode_value({"$model": f"{__name__}:Outer.Inner", "$data": {"n": 2}}) == Outer.Inner(
        n=2
    )
    assert decode_value({"$enum": f"{__name__}:Shade", "$value": "dark"}, by_name=True) is (
        Shade.DARK
    )


def test_pydantic_fields_pass_the_refusal_through(planted_module: PlantedModule) -> None:
    with pytest.raises(StoredClassRefusedError):
        TypeAdapter(AnyValue).validate_python({"$model": planted_module.path("Payload")})
    with pytest.raises(StoredClassRefusedError):
        TypeAdapter(ModelClassRef).validate_python(planted_module.path("Outer.Inner"))
    assert not planted_module.imported


def test_an_output_schema_read_back_imports_nothing(planted_module: PlantedModule) -> None:
    written = {"output_schema": {"module": planted_module.name, "class": "Payload"}}
    with pytest.raises(StoredClassRefusedError):
        OutputSchema.model_validate(written)
    assert not planted_module.imported
    mine = OutputSchema(output_schema=Outer.Inner)
    assert OutputSchema.model_validate(mine.model_dump()).output_schema is Outer.Inner
    allow_stored_class_modules([planted_module.name])
    assert OutputSchema.model_validate(written).output_schema.__name__ == "Payload"
