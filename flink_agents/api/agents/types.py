"""`OutputSchema`: what a structured answer is parsed into, a pydantic model class or a
PyFlink ``RowTypeInfo`` of basic field types (upstream's class).

PyFlink is imported only when a ``RowTypeInfo`` is read back or a ``Row`` is made, so the
API runs without it; a ``RowTypeInfo`` is recognised by its class.

>>> OutputSchema(output_schema=RowTypeInfo([BasicTypeInfo.INT_TYPE_INFO()], ["result"]))
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    create_model,
    field_validator,
    model_serializer,
)

from flink_agents.api._class_path import find_stored_class

__all__ = [
    "OutputSchema",
    "is_row_type_info",
    "json_candidates",
    "json_in_text",
    "row_field_types",
    "row_from_json",
    "row_json_schema",
]

# PyFlink's BasicType values -> JSON schema type, Python type.
_BASIC_TYPES: dict[str, tuple[str, type]] = {
    "String": ("string", str),
    "Char": ("string", str),
    "Boolean": ("boolean", bool),
    "Byte": ("integer", int),
    "Short": ("integer", int),
    "Integer": ("integer", int),
    "Long": ("integer", int),
    "BigInteger": ("integer", int),
    "Float": ("number", float),
    "Double": ("number", float),
    "BigDecimal": ("number", float),
}


def is_row_type_info(value: Any) -> bool:
    """Whether ``value`` is a PyFlink ``RowTypeInfo`` (checked without importing PyFlink)."""
    cls = type(value)
    return cls.__name__ == "RowTypeInfo" and cls.__module__.startswith("pyflink.")


def row_field_types(row_type: Any) -> list[tuple[str, str]]:
    """``[(field name, BasicType value)]`` of a ``RowTypeInfo``; `TypeError` for a field
    that is not of a basic type upstream's output schemas take (String, Integer...)."""
    fields: list[tuple[str, str]] = []
    for name, field_type in zip(
        row_type.get_field_names(), row_type.get_field_types(), strict=True
    ):
        basic = getattr(getattr(field_type, "_basic_type", None), "value", None)
        if basic not in _BASIC_TYPES:
            raise TypeError(
                f"output schema field {name!r} is {field_type}: a RowTypeInfo output schema "
                f"takes basic types only ({', '.join(_BASIC_TYPES)})"
            )
        fields.append((str(name), str(basic)))
    return fields


def row_json_schema(row_type: Any) -> dict[str, Any]:
    """The JSON schema of an object with the row's fields (all required)."""
    fields = row_field_types(row_type)
    return {
        "type": "object",
        "properties": {name: {"type": _BASIC_TYPES[basic][0]} for name, basic in fields},
        "required": [name for name, _ in fields],
    }


def _row_type_info(names: list[str], types: list[str]) -> Any:
    typeinfo = importlib.import_module("pyflink.common.typeinfo")
    return typeinfo.RowTypeInfo(
        field_types=[typeinfo.BasicTypeInfo(typeinfo.BasicType(t)) for t in types],
        field_names=names,
    )


def row_from_json(data: Any, row_type: Any) -> Any:
    """A PyFlink ``Row`` with the row type's fields, in its order, read from ``data`` (a
    dict) and checked against the field types (`ValueError` when they do not fit)."""
    fields = row_field_types(row_type)
    field_specs: dict[str, Any] = {name: (_BASIC_TYPES[basic][1], ...) for name, basic in fields}
    checker = create_model("RowFields", __config__=ConfigDict(extra="ignore"), **field_specs)
    try:
        checked = checker.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"the answer does not fit the row type: {where}: {first['msg']}") from None
    row_class = importlib.import_module("pyflink.common").Row
    return row_class(**{name: getattr(checked, name) for name, _ in fields})


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def json_candidates(text: str) -> list[str]:
    """The parts of a model's answer that may be its JSON, best guess first: the whole
    text, each fenced code block, the outermost ``{...}`` (empty ones left out). Used by
    every reader of structured output (`json_in_text`, the chat action's)."""
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text))]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    return [candidate for candidate in candidates if candidate]


def json_in_text(text: str) -> Iterator[Any]:
    """The JSON values ``text`` may hold, best guess first (`json_candidates`)."""
    for candidate in json_candidates(text):
        try:
            yield json.loads(candidate)
        except ValueError:
            continue


class OutputSchema(BaseModel):
    """An output schema that can be written as JSON and read back (upstream's class).

    Written as ``{"output_schema": {"names": [...], "types": [...]}}`` for a
    ``RowTypeInfo`` and ``{"output_schema": {"module": ..., "class": ...}}`` for a
    pydantic model class, read back from a module already imported or allowed by
    ``stored-classes.allowed-modules`` (else `StoredClassRefusedError`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    output_schema: Any
    """A pydantic model class or a PyFlink ``RowTypeInfo``."""

    @field_validator("output_schema", mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        if isinstance(value, dict):
            if "names" in value:
                return _row_type_info(list(value["names"]), list(value["types"]))
            # Read from stored data: found, never imported (`find_stored_class`).
            path = f"{value['module']}:{value['class']}"
            found = find_stored_class(path)
            if found is None:
                raise TypeError(f"output schema class {path} is not found here")
            value = found
        if isinstance(value, type) and issubclass(value, BaseModel):
            return value
        if is_row_type_info(value):
            row_field_types(value)  # basic field types only
            return value
        raise TypeError(
            f"output schema {value!r} is neither a pydantic model class nor a RowTypeInfo"
        )

    @model_serializer
    def _write(self) -> dict[str, Any]:
        schema = self.output_schema
        if is_row_type_info(schema):
            fields = row_field_types(schema)
            return {
                "output_schema": {
                    "names": [name for name, _ in fields],
                    "types": [basic for _, basic in fields],
                }
            }
        return {"output_schema": {"module": schema.__module__, "class": schema.__qualname__}}
