"""Descriptors of an agent's functions (upstream's `flink_agents.api.function`).

``Agent.add_action`` keeps an action's function as a `PythonFunction`: its module and
qualified name, as upstream records them. Here it also keeps the function itself, so an
action may be a closure, a lambda or a function of a script (it travels with the
pickled agent); `PythonFunction.as_callable` gives it back. A `JavaFunction` names a
Java method: there is no Java here, and a plan with one raises
`ResourceUnavailableError`.
"""

from __future__ import annotations

import importlib
import inspect
from abc import ABC
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

from flink_agents.api.errors import ResourceUnavailableError

__all__ = ["ACTION_PARAMETER_TYPES", "Function", "JavaFunction", "PythonFunction"]

ACTION_PARAMETER_TYPES: tuple[str, ...] = (
    "org.apache.flink.agents.api.Event",
    "org.apache.flink.agents.api.context.RunnerContext",
)
"""The Java parameter types of an action method (upstream's constant)."""


class Function(BaseModel, ABC):
    """A function named by a descriptor."""

    model_config = ConfigDict(frozen=True)

    def as_callable(self) -> Callable[..., Any]:
        """The function to call."""
        raise NotImplementedError


class PythonFunction(Function):
    """A Python function by its module and qualified name (``Class.method`` for a
    method); made by `from_callable`, it also holds the function itself."""

    module: str
    """The module it is defined in."""
    qualname: str
    """Its qualified name in that module."""

    _callable: Callable[..., Any] | None = PrivateAttr(default=None)

    @staticmethod
    def from_callable(func: Callable[..., Any]) -> PythonFunction:
        """The descriptor of ``func``, holding ``func``."""
        if not callable(func):
            raise TypeError(f"{func!r} is not callable")
        target = func.__func__ if isinstance(func, (staticmethod, classmethod)) else func
        module = inspect.getmodule(target)
        module_name = module.__name__ if module is not None else getattr(target, "__module__", "")
        qualname = getattr(target, "__qualname__", None) or type(target).__qualname__
        descriptor = PythonFunction(module=module_name or "", qualname=qualname)
        descriptor._callable = target
        return descriptor

    def as_callable(self) -> Callable[..., Any]:
        """The function: the one it was made from, else imported by module and name
        (`ImportError` / `AttributeError` when that fails; `ValueError` for a name that
        cannot be imported, such as a function defined in a function)."""
        if self._callable is not None:
            return self._callable
        if "<" in self.qualname:
            raise ValueError(
                f"{self.module}.{self.qualname} cannot be imported by name (define it at "
                "module level, or give the function itself)"
            )
        target: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            target = getattr(target, part)
        if isinstance(target, (staticmethod, classmethod)):
            target = target.__func__
        if not callable(target):
            raise TypeError(f"{self.module}.{self.qualname} is not callable")
        return target

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PythonFunction)
            and (self.module, self.qualname) == (other.module, other.qualname)
            and (
                self._callable is None
                or other._callable is None
                or self._callable is other._callable
            )
        )

    def __hash__(self) -> int:
        return hash((self.module, self.qualname))


class JavaFunction(Function):
    """A Java method (upstream's cross-language actions and tools): kept as data; a plan
    with one raises `ResourceUnavailableError` (there is no Java here)."""

    qualname: str
    """The declaring class."""
    method_name: str
    """The method."""
    parameter_types: list[str]
    """Its parameter types, in order."""

    @classmethod
    def for_action(cls, qualname: str, method_name: str) -> JavaFunction:
        """An action method ``(Event, RunnerContext)`` of ``qualname``."""
        return cls(
            qualname=qualname, method_name=method_name, parameter_types=list(ACTION_PARAMETER_TYPES)
        )

    def as_callable(self) -> Callable[..., Any]:
        raise ResourceUnavailableError(
            f"the Java function {self.qualname}.{self.method_name} (there is no Java runtime here)",
            "write the action or tool in Python",
        )
