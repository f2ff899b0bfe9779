"""Class paths: ``module:qualname`` (or a dotted ``module.Name``) to the class and back."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.api._class_path import class_path, find_class, import_class
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tools.function_tool import FunctionTool


class Outer:
    class Inner:
        pass


class Box(BaseModel):
    item: int


NOT_A_CLASS = 3


def test_a_class_path_names_module_and_qualname() -> None:
    assert class_path(Outer.Inner) == f"{__name__}:Outer.Inner"
    assert class_path(ValueError) == "builtins:ValueError"


@pytest.mark.parametrize(
    ("path", "cls"),
    [
        (f"{__name__}:Outer", Outer),
        (f"{__name__}:Outer.Inner", Outer.Inner),
        (f"{__name__}.Box", Box),  # dotted, as written by hand in a ResourceDescriptor
        ("builtins:ValueError", ValueError),
        ("flink_agents.api.tools.function_tool.FunctionTool", FunctionTool),
    ],
)
def test_a_path_imports_the_class_it_names(path: str, cls: type) -> None:
    assert import_class(path) is cls
    assert find_class(path) is cls


def test_every_class_path_imports_back() -> None:
    for cls in (Outer, Outer.Inner, Box, KeyError):
        assert import_class(class_path(cls)) is cls


def test_classes_defined_in_a_function_have_no_importable_path() -> None:
    class Local:
        pass

    with pytest.raises(ValueError, match="define it at module level"):
        import_class(class_path(Local))
    assert find_class(class_path(Local)) is None


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("Box", ValueError),  # no module
        (":Box", ValueError),
        (f"{__name__}:", ValueError),
        (f"{__name__}:Box[int]", ValueError),  # a generic alias
        ("no.such.module:Thing", ImportError),
        (f"{__name__}:Missing", AttributeError),
        (f"{__name__}:Outer.Missing", AttributeError),
        (f"{__name__}:NOT_A_CLASS", TypeError),
        (f"{__name__}:class_path", TypeError),
    ],
)
def test_a_path_that_names_no_class(path: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        import_class(path)
    assert find_class(path) is None


def test_a_resource_descriptor_imports_its_class_by_either_path() -> None:
    dotted = ResourceDescriptor("flink_agents.api.prompts.prompt.Prompt", template="hi")
    colon = ResourceDescriptor("flink_agents.api.prompts.prompt:Prompt", template="hi")
    assert dotted.resolve_class() is colon.resolve_class()
    with pytest.raises(ImportError):
        ResourceDescriptor("no_such_pkg.Model").resolve_class()
    bad: Any = ResourceDescriptor(f"{__name__}.Box")
    with pytest.raises(TypeError, match="not a Resource class"):
        bad.resolve_class()
