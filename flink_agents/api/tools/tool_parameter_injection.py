"""Tool parameters the runtime fills in: the model never sees them and cannot set them.

>>> @tool(injected_args={"tenant_id": InjectedArg.from_config("tenant_id")})
... @staticmethod
... def query_order(order_id: str, tenant_id: str) -> str: ...

The model sees ``query_order(order_id)``; when it calls the tool, the built-in tool action
reads ``tenant_id`` from the agent configuration and passes it too (a value the model
gives under that name is replaced). A value comes from the configuration, the run's
sensory memory or the key's short-term memory (a dotted path into nested values); when
it is not there the call fails and the model reads why.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from flink_agents.api.memory_object import MemoryObject

if TYPE_CHECKING:
    from flink_agents.api.runner_context import RunnerContext

__all__ = [
    "INJECTED_ARGS_MARK",
    "InjectedArg",
    "ToolParameterSource",
    "injected_arguments",
    "merge_injected_args",
    "normalize_injected_args",
    "validate_injected_arg_names",
]

INJECTED_ARGS_MARK = "_injected_args"
"""Attribute ``@tool(injected_args=...)`` sets on the function (upstream's name)."""


class ToolParameterSource(str, Enum):
    """Where an injected tool parameter's value is read (case-insensitive by value)."""

    CONFIG = "config"
    """The agent configuration (``env.get_config().set_str(key, value)``)."""
    SENSORY_MEMORY = "sensory_memory"
    """The run's sensory memory."""
    SHORT_TERM_MEMORY = "short_term_memory"
    """The key's short-term memory."""

    @classmethod
    def _missing_(cls, value: object) -> ToolParameterSource | None:
        if isinstance(value, str):
            for source in cls:
                if source.value == value.lower():
                    return source
        return None


class InjectedArg(BaseModel):
    """Where one injected tool parameter's value comes from.

    ``key`` is the configuration key or the memory path (``"request.trace_id"``); without
    one, the parameter's own name is used.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: ToolParameterSource = ToolParameterSource.SENSORY_MEMORY
    """Where the value is read."""
    key: str | None = None
    """The configuration key or memory path; None: the parameter's name."""

    @staticmethod
    def from_config(key: str) -> InjectedArg:
        """The value of configuration key ``key``."""
        return InjectedArg(source=ToolParameterSource.CONFIG, key=key)

    @staticmethod
    def from_sensory_memory(path: str) -> InjectedArg:
        """The value at ``path`` in the run's sensory memory."""
        return InjectedArg(source=ToolParameterSource.SENSORY_MEMORY, key=path)

    @staticmethod
    def from_short_term_memory(path: str) -> InjectedArg:
        """The value at ``path`` in the key's short-term memory."""
        return InjectedArg(source=ToolParameterSource.SHORT_TERM_MEMORY, key=path)

    def with_default_key(self, key: str) -> InjectedArg:
        """This one, with ``key`` when it has none."""
        return self if self.key else InjectedArg(source=self.source, key=key)


def normalize_injected_args(
    injected_args: Mapping[str, InjectedArg | Mapping[str, Any]] | None,
) -> dict[str, InjectedArg]:
    """Parameter name -> `InjectedArg` (a dict ``{"source": ..., "key": ...}`` is read as
    one), each with a key (the parameter's name when none was given)."""
    if injected_args is None:
        return {}
    if not isinstance(injected_args, Mapping):
        raise TypeError(  # upstream's words first
            "'injected_args' must be a dict mapping parameter names to InjectedArg (or "
            f"dicts), got {type(injected_args).__name__}"
        )
    normalized: dict[str, InjectedArg] = {}
    for name, spec in injected_args.items():
        if isinstance(spec, InjectedArg):
            arg = spec
        elif isinstance(spec, Mapping):
            arg = InjectedArg.model_validate(spec)
        else:
            raise TypeError(  # upstream's words first: its tests match them
                f"Unsupported injected arg spec for {name!r}: {spec!r} (injected_args[{name!r}] "
                f"must be an InjectedArg or a dict, got {type(spec).__name__})"
            )
        normalized[name] = arg.with_default_key(name)
    return normalized


def merge_injected_args(
    annotated_args: Mapping[str, InjectedArg] | None,
    declared_args: Mapping[str, InjectedArg] | None,
    *,
    tool_name: str,
) -> dict[str, InjectedArg]:
    """The injected args of ``@tool(injected_args=...)`` and those given where the tool is
    made (``Tool.from_callable(..., injected_args=...)``) together; `ValueError` when both
    name a parameter with different sources or keys."""
    merged = dict(annotated_args or {})
    for name, spec in (declared_args or {}).items():
        existing = merged.get(name)
        if existing is not None and existing != spec:
            raise ValueError(
                f"tool {tool_name!r}: parameter {name!r} is injected from "
                f"{existing.source.value} {existing.key!r} and from {spec.source.value} "
                f"{spec.key!r}; declare it once"
            )
        merged[name] = spec
    return merged


def validate_injected_arg_names(
    func: Callable[..., Any], injected_args: Mapping[str, InjectedArg]
) -> None:
    """`ValueError` when an injected name is no parameter of ``func`` (a function taking
    ``**kwargs`` takes any name)."""
    if not injected_args:
        return
    parameters = inspect.signature(func).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    unknown = sorted(name for name in injected_args if name not in parameters)
    if unknown:
        name = getattr(func, "__qualname__", repr(func))
        raise ValueError(  # upstream's words first
            f"Injected tool parameter(s) {', '.join(unknown)} do not match function {name} "
            f"parameters: {', '.join(unknown)} are not parameters of {name} (parameters: "
            f"{', '.join(parameters)})"
        )


def injected_arguments(
    injected_args: Mapping[str, InjectedArg], ctx: RunnerContext
) -> dict[str, Any]:
    """Each injected parameter's value, read where its `InjectedArg` says.

    `LookupError` when a value is not there (the message names the key or path, never a
    value); `TypeError` when a memory path leads to a nested object rather than a value.
    """
    return {name: _value(arg, name, ctx) for name, arg in injected_args.items()}


def _value(arg: InjectedArg, name: str, ctx: RunnerContext) -> Any:
    key = arg.key or name
    if arg.source is ToolParameterSource.CONFIG:
        values = ctx.config.to_dict()
        if key not in values:
            raise LookupError(
                f"injected tool parameter {name!r}: the agent configuration has no {key!r}"
            )
        return values[key]
    if arg.source is ToolParameterSource.SENSORY_MEMORY:
        return _memory_value(ctx.sensory_memory, "sensory memory", key, name)
    return _memory_value(ctx.short_term_memory, "short-term memory", key, name)


def _memory_value(memory: MemoryObject, where: str, path: str, name: str) -> Any:
    if not memory.is_exist(path):
        raise LookupError(f"injected tool parameter {name!r}: {where} has no {path!r}")
    value = memory.get(path)
    if isinstance(value, MemoryObject):
        raise TypeError(
            f"injected tool parameter {name!r}: {path!r} in {where} is an object, not a value"
        )
    return value
