"""`flink_agents.api.tools.utils`: upstream's schema helpers, from their documented
behaviour."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from flink_agents.api.tools.utils import (
    create_java_tool_schema_str_from_model,
    create_model_from_java_tool_schema_str,
    create_model_from_schema,
    create_schema_from_function,
)


def _failures(error: ValidationError) -> list[tuple[Any, str]]:
    """Where validation failed and why: a ValidationError for another field does not pass."""
    return [(e["loc"], e["type"]) for e in error.errors()]


def sample(a: int, b: str = "x", c=5, d: Annotated[int, "annotated desc"] = 0) -> None:
    """Sample.

    Args:
        a: the a param
        b: the b param
    """


def test_schema_from_function() -> None:
    fields = create_schema_from_function("sample", sample).model_fields
    assert fields["a"].annotation is int
    assert fields["a"].is_required()
    assert fields["a"].description == "the a param"
    assert fields["b"].default == "x"
    assert not fields["b"].is_required()
    assert fields["c"].annotation is Any
    assert fields["c"].description == "Parameter: c"  # no doc: a placeholder
    assert fields["d"].annotation is int
    assert fields["d"].description == "annotated desc"


def test_schema_from_function_leaves_injected_parameters_out() -> None:
    model = create_schema_from_function("sample", sample, injected_args=["b", "c"])
    assert list(model.model_fields) == ["a", "d"]
    assert model.__name__ == "sample"


def test_schema_from_function_keeps_a_field_default() -> None:
    def f(n: int = Field(default=3, ge=0, description="A count.")) -> None: ...

    model = create_schema_from_function("f", f)
    assert model().n == 3  # type: ignore[attr-defined]
    assert model.model_fields["n"].description == "A count."
    with pytest.raises(ValidationError) as raised:
        model(n=-1)
    assert _failures(raised.value) == [(("n",), "greater_than_equal")]


class Inner(BaseModel):
    x: int


class Color(BaseModel):
    shade: Literal["red", "blue"]


class Outer(BaseModel):
    name: str = Field(description="the name")
    count: int = Field(ge=0, le=10, default=1)
    tags: list[str] = []
    maybe: int | None = None
    inner: Inner
    colors: dict[str, Color] = {}


@pytest.fixture(scope="module")
def rebuilt() -> type[BaseModel]:
    return create_model_from_schema("Rebuilt", Outer.model_json_schema())


def test_model_from_schema_fields(rebuilt: type[BaseModel]) -> None:
    fields = rebuilt.model_fields
    assert fields["name"].annotation is str
    assert fields["name"].is_required()
    assert fields["name"].description == "the name"
    assert fields["tags"].annotation == list[str]
    assert not fields["maybe"].is_required()
    assert rebuilt(name="a", inner={"x": 1}).maybe is None  # type: ignore[attr-defined]


def test_model_from_schema_validates_nested_models_and_constraints(
    rebuilt: type[BaseModel],
) -> None:
    assert rebuilt(name="a", count=5, inner={"x": 1}).count == 5  # type: ignore[attr-defined]
    with pytest.raises(ValidationError) as raised:
        rebuilt(name="a", inner={})  # the nested x is required
    assert _failures(raised.value) == [(("inner", "x"), "missing")]
    with pytest.raises(ValidationError) as raised:
        rebuilt(name="a", count=99, inner={"x": 1})  # le=10
    assert _failures(raised.value) == [(("count",), "less_than_equal")]
    with pytest.raises(ValidationError) as raised:
        rebuilt(name="a", inner={"x": 1}, colors={"c": {"shade": "green"}})  # an enum
    assert _failures(raised.value) == [(("colors", "c", "shade"), "literal_error")]
    ok = rebuilt(name="a", inner={"x": 1}, colors={"c": {"shade": "red"}})
    assert ok.model_dump()["colors"] == {"c": {"shade": "red"}}


def test_model_from_schema_round_trips_the_schema(rebuilt: type[BaseModel]) -> None:
    value = {"name": "a", "count": 2, "tags": ["t"], "maybe": 4, "inner": {"x": 1}, "colors": {}}
    assert rebuilt.model_validate(value).model_dump() == Outer.model_validate(value).model_dump()


def test_model_from_java_schema_string() -> None:
    schema = json.dumps(
        {
            "properties": {
                "s": {"type": "string", "description": "the s"},
                "i": {"type": "integer"},
                "f": {"type": "number", "description": "d"},
                "b": {"type": "boolean", "description": "d"},
                "arr": {"type": "array", "description": "d"},
                "obj": {"type": "object", "description": "d"},
            }
        }
    )
    fields = create_model_from_java_tool_schema_str("J", schema).model_fields
    assert [fields[n].annotation for n in ("s", "i", "f", "b", "arr", "obj")] == [
        str,
        int,
        float,
        bool,
        list,
        dict,
    ]
    assert fields["s"].description == "the s"
    assert fields["i"].description == "Parameter: i"
    assert all(field.is_required() for field in fields.values())


class JavaSource(BaseModel):
    id: str = Field(description="the id")
    n: int = Field(description="a number")
    opt: str | None = Field(default=None, description="optional one")


def test_java_schema_string_from_model_and_back() -> None:
    schema = json.loads(create_java_tool_schema_str_from_model(JavaSource))
    assert schema["properties"]["id"] == {"type": "string", "description": "the id"}
    assert schema["properties"]["n"] == {"type": "integer", "description": "a number"}
    assert schema["properties"]["opt"]["type"] == "string"  # Optional[str] is a string
    assert schema["required"] == ["id", "n"]
    rebuilt = create_model_from_java_tool_schema_str(
        "Back", create_java_tool_schema_str_from_model(JavaSource)
    ).model_fields
    assert rebuilt["n"].annotation is int
    assert rebuilt["id"].description == "the id"
