"""Tools: what a model sees of one (`ToolMetadata`) and the tool classes.

`Tool` is upstream's base class: implement ``call`` (sync; it runs in a worker thread)
and give ``metadata``. `BaseTool` is its async-first parent: implement ``acall``.
``Tool.from_callable(func)`` makes a `FunctionTool` of a plain function.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from flink_agents.api._callables import is_awaitable
from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.tools.tool_parameter_injection import InjectedArg

if TYPE_CHECKING:
    from flink_agents.api.tools.function_tool import FunctionTool

__all__ = ["BaseTool", "Tool", "ToolMetadata", "ToolType", "as_tool_metadata"]


class ToolType(str, Enum):
    """Kinds of tool (upstream's members). Only ``FUNCTION`` tools exist here."""

    MODEL_BUILT_IN = "model_built_in"
    """A provider's own tool (a web search, say)."""
    FUNCTION = "function"
    """A function of the agent's process."""
    REMOTE_FUNCTION = "remote_function"
    """A function called by name elsewhere."""
    MCP = "mcp"
    """A tool of an MCP server."""


_SCHEMA_KEYS = ("type", "properties", "required", "definitions", "$defs")


class ToolMetadata(BaseModel):
    """A tool as a model sees it: name, description and a JSON schema of its input.

    ``args_schema`` may be given as a pydantic model class (upstream's form, e.g. from
    `create_schema_from_function`); it is kept as the class's JSON schema.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    """The name the model calls it by."""
    description: str = ""
    """What it does, for the model."""
    args_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """JSON schema (an object) of the arguments."""

    @field_validator("args_schema", mode="before")
    @classmethod
    def _schema_of_model(cls, value: Any) -> Any:
        if isinstance(value, type) and issubclass(value, BaseModel):
            return value.model_json_schema()
        return value

    def get_parameters_dict(self) -> dict[str, Any]:
        """The schema's ``type``, ``properties``, ``required`` and definitions (what
        providers take as a function's parameters; titles and the like left out)."""
        return {k: v for k, v in self.args_schema.items() if k in _SCHEMA_KEYS}


class BaseTool(Resource, ABC):
    """A callable tool. ``acall`` returns anything `normalize_tool_output` accepts."""

    metadata: ToolMetadata
    """What the model sees."""
    requires_approval: bool = False
    """A call waits for a person's `ToolApproval` before it runs
    (`flink_agents.api.approvals`)."""

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.TOOL

    @classmethod
    def tool_type(cls) -> ToolType:
        """Which kind of tool this is."""
        return ToolType.FUNCTION

    @property
    def name(self) -> str:
        return self.metadata.name

    @abstractmethod
    async def acall(self, **arguments: Any) -> Any:
        """Run the tool with the model's arguments."""


class Tool(BaseTool, ABC):
    """Upstream's tool base: implement ``call`` with the model's arguments as keywords.

    A sync ``call`` runs in a worker thread; an ``async def call`` is awaited.
    """

    @staticmethod
    def from_callable(
        func: Callable[..., Any],
        *,
        injected_args: Mapping[str, InjectedArg | Mapping[str, Any]] | None = None,
        requires_approval: bool = False,
    ) -> FunctionTool:
        """A `FunctionTool` for ``func``: its name, docstring and signature say what the
        model sees; ``injected_args`` (with those of ``@tool(injected_args=...)``) are
        filled in by the runtime and hidden from the model. With ``requires_approval``
        (or ``@tool(requires_approval=True)`` on ``func``) a call waits for a person's
        `ToolApproval` (`flink_agents.api.approvals`)."""
        from flink_agents.api.tools.function_tool import FunctionTool

        return FunctionTool.from_function(
            func, injected_args=injected_args, requires_approval=requires_approval
        )

    @abstractmethod
    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Run the tool."""

    async def acall(self, **arguments: Any) -> Any:
        if inspect.iscoroutinefunction(self.call):
            return await self.call(**arguments)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(None, functools.partial(self.call, **arguments))
        if is_awaitable(result):
            result = await result
        return result


def as_tool_metadata(tool: ToolMetadata | BaseTool) -> ToolMetadata:
    """The metadata of a tool, or the metadata itself."""
    return tool if isinstance(tool, ToolMetadata) else tool.metadata
