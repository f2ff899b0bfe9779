"""What a job script's own definitions need to work in the Flink workers.

A job script runs as ``__main__`` where the job is built. The workers have another
``__main__``: cloudpickle ships the agent with the script's functions and classes by value.
Two things would still go wrong there, and this module prepares them when the job is built:

- values in keyed state and in the durable call log name their classes by path
  (``__main__:Weather``), which means nothing in a worker: `script_classes` lists the
  script's pydantic model and enum classes, they travel with the job, and each worker
  registers them (`flink_agents.api._values.register_script_classes`) before it reads
  state, so a restored run gets its `Weather` back, not a dict;
- a tool's argument model is built in the worker from the function's type hints, and under
  ``from __future__ import annotations`` a hint names a class the shipped function's
  globals lack: `ship_tool_type_hints` makes the hints travel resolved.

Failure records that leave the agent operator carry the script's classes by value too
(`pickled_outputs`); its outputs leave as JSON values (`crossing_value`).
"""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Iterable, Iterator
from enum import Enum
from types import ModuleType
from typing import Any

import cloudpickle
from pydantic import BaseModel

from flink_agents.api._type_hints import ship_type_hints
from flink_agents.api.tools.function_tool import FunctionTool

__all__ = ["script_classes", "ship_tool_type_hints"]

_LOG = logging.getLogger(__name__)

_SCRIPT_MODULE = "__main__"


def _classes_in(owner: Any, prefix: str, module: str, depth: int = 0) -> Iterator[type]:
    """Classes defined in ``module`` under ``owner`` (a module or a class), nested ones too."""
    for name, value in list(vars(owner).items()):
        if not isinstance(value, type) or value.__module__ != module:
            continue
        if value.__qualname__ != f"{prefix}{name}":  # an alias, or a class from elsewhere
            continue
        yield value
        if depth < 8:
            yield from _classes_in(value, f"{value.__qualname__}.", module, depth + 1)


def _ships(cls: type) -> bool:
    try:
        cloudpickle.dumps(cls)
    except Exception as exc:
        _LOG.debug("class %s of the job script does not pickle: %s", cls.__qualname__, exc)
        return False
    return True


def script_classes(module: ModuleType | None = None) -> tuple[type, ...]:
    """The pydantic model and enum classes the job script (``__main__``, or ``module``)
    defines at module level or nested in its classes, which cloudpickle can ship."""
    module = module if module is not None else sys.modules.get(_SCRIPT_MODULE)
    if module is None:
        return ()
    return tuple(
        cls
        for cls in _classes_in(module, "", module.__name__)
        if issubclass(cls, (BaseModel, Enum)) and _ships(cls)
    )


def ship_tool_type_hints(tools: Iterable[Any]) -> None:
    """Make the type hints of tool functions (or `FunctionTool`s) travel resolved when they
    are pickled (`flink_agents.api._type_hints`); other resources
    are left alone."""
    for tool in tools:
        if isinstance(tool, FunctionTool):
            ship_type_hints(tool.target)
        elif inspect.isfunction(tool) or inspect.ismethod(tool):
            ship_type_hints(tool)
