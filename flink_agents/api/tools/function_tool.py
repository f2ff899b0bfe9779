"""`FunctionTool`: a Python function (sync or async) as a tool a model can call.

The tool's JSON schema comes from the function's signature (type hints, defaults)
and its docstring: the summary becomes the description, and each parameter's
description is read from a Google (``Args:``), NumPy (``Parameters``) or Sphinx
(``:param x:``) section.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, create_model

from flink_agents.api._callables import is_async_callable
from flink_agents.api.tools.tool import BaseTool, ToolMetadata

__all__ = ["FunctionTool", "parse_docstring"]

_SECTION_HEADERS = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:?\s*$",
    re.IGNORECASE,
)
_PARAM_SECTIONS = ("args", "arguments", "parameters", "params")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_GOOGLE_ENTRY = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(?::.*)?$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """``(summary, {parameter: description})`` from a docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None  # lower-cased header, or "sphinx"
    numpy_style = False
    entry_indent: int | None = None
    current: str | None = None

    def add(name: str, text: str) -> None:
        params[name] = f"{params.get(name, '')} {text.strip()}".strip()

    for index, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            section, current = "sphinx", str(sphinx.group(1))
            add(current, sphinx.group(2))
            continue
        if stripped.startswith(":"):
            section, current = "sphinx-other", None
            continue
        header = _SECTION_HEADERS.match(line)
        underlined = index + 1 < len(lines) and set(lines[index + 1].strip()) == {"-"}
        if header and (stripped.endswith(":") or underlined):
            section, current, entry_indent = header.group(1).lower(), None, None
            numpy_style = underlined
            continue
        if stripped and set(stripped) == {"-"}:
            continue
        if section is None:
            summary.append(line)
        elif section == "sphinx":
            if current is not None and stripped:
                add(current, stripped)
        elif section in _PARAM_SECTIONS and stripped:
            if numpy_style:
                entry = _NUMPY_ENTRY.match(line) if indent == 0 else None
                if entry:
                    name = str(entry.group(1)).lstrip("*")
                    params.setdefault(name, "")
                    current = name
                elif current is not None:
                    add(current, stripped)
                continue
            entry = _GOOGLE_ENTRY.match(line)
            if entry and (entry_indent is None or indent <= entry_indent):
                entry_indent = indent
                name = str(entry.group(1)).lstrip("*")
                add(name, entry.group(2))
                current = name
            elif current is not None:
                add(current, stripped)
    return "\n".join(summary).strip(), {k: v for k, v in params.items() if v}


class FunctionTool(BaseTool):
    """A tool backed by a Python function; sync functions run in a worker thread (in an
    agent, one of the runtime's tool threads, see `bind`).

    >>> FunctionTool.from_function(get_weather)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    func: Callable[..., Any] = Field(exclude=True)
    """The function the tool calls."""

    _args_model: type[BaseModel] | None = PrivateAttr(default=None)

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> FunctionTool:
        """A tool for ``func``: name, description and argument schema from its signature."""
        args_model = _arguments_model(func)
        summary, _ = parse_docstring(func.__doc__)
        schema = args_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        schema.setdefault("properties", {})
        metadata = ToolMetadata(
            name=name or getattr(func, "__name__", "tool"),
            description=description if description is not None else summary,
            args_schema=schema,
        )
        tool = cls(metadata=metadata, func=func)
        tool._args_model = args_model
        return tool

    def _arguments(self) -> type[BaseModel]:
        if self._args_model is None:
            self._args_model = _arguments_model(self.func)
        return self._args_model

    @property
    def is_async(self) -> bool:
        """Whether the function is ``async def`` (else it blocks a thread while it runs)."""
        return is_async_callable(self.func)

    def bind(self, **arguments: Any) -> functools.partial[Any]:
        """The function with the model's arguments, checked against its signature
        (`pydantic.ValidationError` when they do not fit), ready to call; nothing runs yet.

        A runtime calls a sync tool this way on a thread of its choosing.
        """
        validated = self._arguments().model_validate(arguments)
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        return functools.partial(self.func, **kwargs)

    async def acall(self, **arguments: Any) -> Any:
        """Validate the arguments against the signature, then call the function (a sync
        one in the event loop's default executor)."""
        call = self.bind(**arguments)
        if self.is_async:
            return await call()
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(None, call)
        if inspect.isawaitable(result):
            result = await result
        return result

    def __getstate__(self) -> dict[Any, Any]:
        # The argument model is a generated class: rebuild it after unpickling.
        state = super().__getstate__()
        private = dict(state.get("__pydantic_private__") or {})
        private["_args_model"] = None
        state["__pydantic_private__"] = private
        return state

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly (outside the agent)."""
        return self.func(*args, **kwargs)


def _arguments_model(func: Callable[..., Any]) -> type[BaseModel]:
    """A pydantic model of ``func``'s keyword-passable parameters, described from its doc."""
    signature = inspect.signature(func)
    try:
        hints = get_type_hints(func)
    except Exception:  # unresolvable forward references: fall back to Any
        hints = {}
    _, descriptions = parse_docstring(func.__doc__)
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(f"tool parameter {param.name!r} is positional-only")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        info = Field(default=default, description=descriptions.get(param.name))
        fields[param.name] = (annotation, info)
    model_name = f"{getattr(func, '__name__', 'tool')}_arguments"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)
