"""`FunctionTool`: a Python function (sync or async) as a tool a model can call.

The tool's JSON schema comes from the function's signature (type hints, defaults,
``Annotated[T, "description"]``) and its docstring: the summary becomes the
description, and each parameter's description is read from a Google (``Args:``), NumPy
(``Parameters``) or Sphinx (``:param x:``) section. Parameters the runtime injects
(`InjectedArg`) are left out of the schema.

As upstream, the function may also be given as a descriptor:
``FunctionTool(func=PythonFunction(module="my_pkg.tools", qualname="add"))`` imports it
to make the schema and keeps the descriptor as ``func`` (`target` is the function). A
`JavaFunction` raises `ResourceUnavailableError` (there is no Java here).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, create_model, model_validator

from flink_agents._compat.pydantic import field_values, private_values, with_private
from flink_agents.api._callables import is_async_callable, is_awaitable
from flink_agents.api._type_hints import type_hints as _type_hints
from flink_agents.api.approvals import REQUIRES_APPROVAL_MARK
from flink_agents.api.function import Function, JavaFunction, PythonFunction
from flink_agents.api.tools._docstrings import parse_docstring
from flink_agents.api.tools.tool import Tool, ToolMetadata, ToolType
from flink_agents.api.tools.tool_parameter_injection import (
    INJECTED_ARGS_MARK,
    InjectedArg,
    merge_injected_args,
    normalize_injected_args,
    validate_injected_arg_names,
)
from flink_agents.api.tools.utils import signature_fields

__all__ = ["FunctionTool", "parse_docstring"]


class FunctionTool(Tool):
    """A tool backed by a Python function; sync functions run in a worker thread (in an
    agent, one of the runtime's tool threads, see `bind`).

    >>> FunctionTool.from_function(get_weather)
    >>> Tool.from_callable(get_weather)   # the same, upstream's spelling
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    func: Callable[..., Any] | PythonFunction | JavaFunction = Field(exclude=True)
    """The function the tool calls, or its descriptor (upstream's form; `target` is then
    the function)."""
    injected_args: dict[str, InjectedArg] = Field(default_factory=dict)
    """Parameters the runtime fills in (`InjectedArg`), hidden from the model."""

    _args_model: type[BaseModel] | None = PrivateAttr(default=None)
    _async_of: tuple[Callable[..., Any], bool] | None = PrivateAttr(default=None)
    """``(func, whether it is async)``, for the ``func`` last asked about."""

    @model_validator(mode="before")
    @classmethod
    def _from_descriptor(cls, data: Any) -> Any:
        """Upstream's ``FunctionTool(func=<Function>, injected_args=...)``: the schema
        from the function the descriptor names."""
        func = data.get("func") if isinstance(data, dict) else None
        if isinstance(func, Function) and "metadata" not in data:
            made = cls.from_function(func.as_callable(), injected_args=data.get("injected_args"))
            data = {**data, "metadata": made.metadata, "injected_args": made.injected_args}
        return data

    @property
    def target(self) -> Callable[..., Any]:
        """The function the tool calls (``func``, or the function its descriptor names)."""
        func = self.func
        return func.as_callable() if isinstance(func, Function) else func

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        injected_args: Mapping[str, InjectedArg | Mapping[str, Any]] | None = None,
        requires_approval: bool = False,
    ) -> FunctionTool:
        """A tool for ``func``: name, description and argument schema from its signature.

        ``requires_approval`` (or ``@tool(requires_approval=True)`` on ``func``): a call
        waits for a person's `ToolApproval` before it runs.

        ``injected_args`` join those ``@tool(injected_args=...)`` put on ``func``
        (`ValueError` when the two disagree on a parameter, or name one ``func`` does
        not have); they are left out of the schema the model sees.
        """
        injected = merge_injected_args(
            getattr(func, INJECTED_ARGS_MARK, None),
            normalize_injected_args(injected_args),
            tool_name=getattr(func, "__qualname__", repr(func)),
        )
        validate_injected_arg_names(func, injected)
        args_model = _arguments_model(func)
        summary, _ = parse_docstring(func.__doc__)
        schema = _arguments_model(func, skip=injected).model_json_schema()
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
        approval = requires_approval or bool(getattr(func, REQUIRES_APPROVAL_MARK, False))
        tool = cls(metadata=metadata, func=func, injected_args=injected, requires_approval=approval)
        tool._args_model = args_model
        return tool

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.FUNCTION

    def _arguments(self) -> type[BaseModel]:
        # Read from the private dict: `self._args_model` goes through pydantic's slow
        # `__getattr__`, and this runs on every call.
        private = private_values(self)
        model = private.get("_args_model") if private is not None else None
        if model is None:
            model = self._args_model = _arguments_model(self.target)
        return model

    @property
    def is_async(self) -> bool:
        """Whether the function is ``async def`` (else it blocks a thread while it runs)."""
        func = self.target
        private = private_values(self)
        known = private.get("_async_of") if private is not None else None
        if known is not None and known[0] is func:
            return known[1]
        found = is_async_callable(func)
        self._async_of = (func, found)
        return found

    def bind(self, **arguments: Any) -> functools.partial[Any]:
        """The function with the model's arguments, checked against its signature
        (`pydantic.ValidationError` when they do not fit), ready to call; nothing runs yet.

        A runtime calls a sync tool this way on a thread of its choosing.
        """
        validated = self._arguments().model_validate(arguments)
        # The argument model forbids extra fields: its field values are exactly the arguments.
        return functools.partial(self.target, **field_values(validated))

    async def acall(self, **arguments: Any) -> Any:
        """Validate the arguments against the signature, then call the function (a sync
        one in the event loop's default executor)."""
        call = self.bind(**arguments)
        if self.is_async:
            return await call()
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(None, call)
        if is_awaitable(result):
            result = await result
        return result

    def __getstate__(self) -> dict[Any, Any]:
        # The argument model is a generated class: rebuild it after unpickling.
        return with_private(super().__getstate__(), _args_model=None, _async_of=None)

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly, as it is (upstream's `Tool.call`)."""
        return self.target(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly (outside the agent)."""
        return self.target(*args, **kwargs)


def _arguments_model(
    func: Callable[..., Any], *, skip: Mapping[str, Any] | None = None
) -> type[BaseModel]:
    """A pydantic model of ``func``'s keyword-passable parameters (but ``skip``),
    described from its annotations and doc."""
    fields: dict[str, Any] = signature_fields(func, skip=skip or (), hints=_type_hints(func))
    model_name = f"{getattr(func, '__name__', 'tool')}_arguments"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)
