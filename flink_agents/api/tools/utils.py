"""Tool argument schemas: from a function's signature, from a JSON schema, and the flat
schema string upstream's Java tools use (upstream's helper names).

>>> create_schema_from_function("get_weather", get_weather)   # a pydantic model class
>>> create_model_from_schema("Weather", schema)               # JSON schema -> model class
"""

from __future__ import annotations

import inspect
import json
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from flink_agents.api.tools._docstrings import parse_docstring

__all__ = [
    "CONSTRAINT_MAPPING",
    "TYPE_MAPPING",
    "create_java_tool_schema_str_from_model",
    "create_model_from_java_tool_schema_str",
    "create_model_from_schema",
    "create_schema_from_function",
    "signature_fields",
]

TYPE_MAPPING: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}
"""JSON schema type -> Python type."""

CONSTRAINT_MAPPING: dict[str, str] = {
    "minimum": "ge",
    "maximum": "le",
    "exclusiveMinimum": "gt",
    "exclusiveMaximum": "lt",
    "inclusiveMinimum": "ge",
    "inclusiveMaximum": "le",
    "minItems": "min_length",
    "maxItems": "max_length",
    "minLength": "min_length",
    "maxLength": "max_length",
    "pattern": "pattern",
}
"""JSON schema keyword -> the `pydantic.Field` argument that enforces it."""


# ------------------------------------------------------------------ from a function


def signature_fields(
    func: Callable[..., Any],
    *,
    skip: Iterable[str] = (),
    placeholder_descriptions: bool = False,
    hints: Mapping[str, Any] | None = None,
) -> dict[str, tuple[Any, FieldInfo]]:
    """``{parameter: (type, Field)}`` for the parameters of ``func`` a caller passes by
    name, ``skip`` left out.

    Types come from the annotations (``hints`` when given, else resolved here; a missing
    one is ``Any``); ``Annotated[T, "text"]``
    (or an annotated ``Field``) gives a description, else the docstring does, else, with
    ``placeholder_descriptions``, ``"Parameter: <name>"``. A ``Field(...)`` default is used
    as it is. ``*args`` and ``**kwargs`` are left out; a positional-only parameter raises
    `TypeError` (it cannot be passed by name).
    """
    skipped = set(skip)
    if hints is None:
        try:
            hints = get_type_hints(func, include_extras=True)
        except Exception:  # unresolvable forward references: fall back to what is written
            hints = {}
    _, descriptions = parse_docstring(getattr(func, "__doc__", None))
    fields: dict[str, tuple[Any, FieldInfo]] = {}
    for param in inspect.signature(func).parameters.values():
        if param.name in skipped or param.kind in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(f"tool parameter {param.name!r} is positional-only")
        annotation: Any = hints.get(param.name, param.annotation)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        description = descriptions.get(param.name)
        if get_origin(annotation) is Annotated:
            annotation, *metadata = get_args(annotation)
            for item in metadata:
                if isinstance(item, str):
                    description = item
                elif isinstance(item, FieldInfo) and item.description:
                    description = item.description
        if description is None and placeholder_descriptions:
            description = f"Parameter: {param.name}"
        default = param.default
        if isinstance(default, FieldInfo):
            info = default
            if info.description is None and description is not None:
                info = FieldInfo.merge_field_infos(info, description=description)
        elif default is inspect.Parameter.empty:
            info = Field(description=description)
        else:
            info = Field(default=default, description=description)
        fields[param.name] = (annotation, info)
    return fields


def create_schema_from_function(
    name: str, func: Callable[..., Any], injected_args: Iterable[str] | None = None
) -> type[BaseModel]:
    """A pydantic model (named ``name``) of ``func``'s parameters, described from its
    annotations and docstring (``"Parameter: <name>"`` when neither says); parameters in
    ``injected_args`` are left out (the runtime fills them in)."""
    fields: dict[str, Any] = signature_fields(
        func, skip=injected_args or (), placeholder_descriptions=True
    )
    return create_model(name, **fields)


# ------------------------------------------------------------------ from a JSON schema


def create_model_from_schema(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model (named ``name``) that validates what ``schema`` describes: an
    object schema such as ``Model.model_json_schema()`` gives, with ``$defs`` references,
    ``anyOf`` unions, typed arrays and objects, enums, defaults, descriptions and the
    constraints in `CONSTRAINT_MAPPING`. A property in ``required`` is required; another
    defaults to its ``default`` (None when it has none)."""
    return _SchemaModels(schema).model(name, schema)


class _SchemaModels:
    """Models for one schema's ``$defs``, each made once."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.definitions: dict[str, Any] = {
            **(root.get("definitions") or {}),
            **(root.get("$defs") or {}),
        }
        self.made: dict[str, Any] = {}
        self.making: set[str] = set()

    def model(self, name: str, schema: dict[str, Any]) -> type[BaseModel]:
        required = set(schema.get("required") or ())
        fields: dict[str, Any] = {}
        for field_name, field_schema in (schema.get("properties") or {}).items():
            field_schema = field_schema if isinstance(field_schema, dict) else {}
            kwargs: dict[str, Any] = {
                argument: field_schema[keyword]
                for keyword, argument in CONSTRAINT_MAPPING.items()
                if keyword in field_schema
            }
            if "description" in field_schema:
                kwargs["description"] = field_schema["description"]
            if field_name not in required:
                kwargs["default"] = field_schema.get("default")
            fields[field_name] = (
                self.type_of(field_schema, f"{name}_{field_name}"),
                Field(**kwargs),
            )
        extra = "forbid" if schema.get("additionalProperties") is False else "ignore"
        return create_model(
            name,
            __config__=ConfigDict(extra=extra),
            __doc__=schema.get("description") or None,
            **fields,
        )

    def type_of(self, schema: dict[str, Any], name: str) -> Any:
        if "$ref" in schema:
            return self.reference(str(schema["$ref"]).rsplit("/", 1)[-1])
        options = schema.get("anyOf") or schema.get("oneOf")
        if options:
            return _union([self.type_of(option, name) for option in options])
        if "enum" in schema:
            return Literal[tuple(schema["enum"])]  # type: ignore[valid-type]
        if "const" in schema:
            return Literal[schema["const"]]  # type: ignore[valid-type]
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self.type_of({**schema, "type": k}, name) for k in kind])
        if kind == "array":
            items = schema.get("items")
            return list[self.type_of(items, f"{name}_item")] if items else list[Any]
        if kind == "object":
            if schema.get("properties"):
                return self.model(str(schema.get("title") or name), schema)
            values = schema.get("additionalProperties")
            if isinstance(values, dict) and values:
                return dict[str, self.type_of(values, f"{name}_value")]
            return dict[str, Any]
        return TYPE_MAPPING.get(kind, Any) if isinstance(kind, str) else Any

    def reference(self, ref: str) -> Any:
        if ref in self.made:
            return self.made[ref]
        definition = self.definitions.get(ref)
        if not isinstance(definition, dict) or ref in self.making:
            return Any  # unknown, or a cycle: accept anything there
        self.making.add(ref)
        try:
            if definition.get("type", "object") == "object" and "enum" not in definition:
                made: Any = self.model(ref, definition)
            else:
                made = self.type_of(definition, ref)
        finally:
            self.making.discard(ref)
        self.made[ref] = made
        return made


def _union(types: list[Any]) -> Any:
    unique = list(dict.fromkeys(types))
    if len(unique) == 1:
        return unique[0]
    return Union[tuple(unique)]  # noqa: UP007  (a runtime-built union)


# ------------------------------------------------------------------ upstream's Java tool schema


def create_model_from_java_tool_schema_str(name: str, schema_str: str) -> type[BaseModel]:
    """A pydantic model from the flat schema string of upstream's Java tools
    (``{"properties": {name: {"type": ..., "description": ...}}}``): every field required,
    typed by `TYPE_MAPPING`, described as ``"Parameter: <name>"`` when the schema says
    nothing."""
    properties = json.loads(schema_str).get("properties") or {}
    fields: dict[str, Any] = {}
    for field_name, field_schema in properties.items():
        description = field_schema.get("description") or f"Parameter: {field_name}"
        kind = TYPE_MAPPING.get(field_schema.get("type"), Any)
        fields[field_name] = (kind, Field(description=description))
    return create_model(name, **fields)


def create_java_tool_schema_str_from_model(model: type[BaseModel]) -> str:
    """The flat schema string of upstream's Java tools for ``model`` (the inverse of
    `create_model_from_java_tool_schema_str` for names, types and descriptions):
    ``Optional[T]`` is written as ``T``, an unmapped type as ``string``."""
    json_types = {python: json_type for json_type, python in TYPE_MAPPING.items()}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field_name, info in model.model_fields.items():
        annotation: Any = info.annotation
        if get_origin(annotation) in (Union, types.UnionType):
            present = [arg for arg in get_args(annotation) if arg is not type(None)]
            annotation = present[0] if present else annotation
        annotation = get_origin(annotation) or annotation
        properties[field_name] = {
            "type": json_types.get(annotation, "string"),
            "description": info.description or f"Parameter: {field_name}",
        }
        if info.is_required():
            required.append(field_name)
    schema: dict[str, Any] = {"properties": properties}
    if required:
        schema["required"] = required
    return json.dumps(schema, ensure_ascii=False, indent=2)
