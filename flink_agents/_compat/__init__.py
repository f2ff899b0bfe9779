"""Reaches into dependencies' internals: one module per dependency, each reach a named
function with the versions it was checked on, and the error a broken assumption raises.

Where the modules are (the API layer never imports the runtime, so this package holds what
both use):

- `flink_agents._compat.pydantic`: pydantic's instance slots (trusted instances, field
  writes without validation).
- `flink_agents.runtime.compat.asyncio`: the loop's ready queue, for the loop thread.
- `flink_agents.runtime.flink.compat.pyflink`, `.py4j`, `.beam`, `.pemja`: PyFlink's
  private attributes and Java classes, py4j's call path, Beam's logger, pemja's jar.

A reach whose assumption no longer holds raises `IncompatibleDependencyError`, naming the
dependency, its installed version and the assumption, instead of an `AttributeError` deep in
a job; `tests/compat/` and `tests/runtime/compat/` check every assumption against the
installed versions (`tools/flink_lines.sh` runs them on every Flink line).
"""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

__all__ = ["Assumption", "IncompatibleDependencyError", "installed_version"]


class IncompatibleDependencyError(RuntimeError):
    """An installed dependency no longer has an internal this project relies on."""

    def __init__(self, dependency: str, version: str, assumption: str, checked_on: str) -> None:
        self.dependency = dependency
        self.version = version
        self.assumption = assumption
        super().__init__(
            f"{dependency} {version} breaks an assumption of flink-agents: {assumption} "
            f"(checked on {dependency} {checked_on}); install a checked version or report it"
        )


def installed_version(distribution: str) -> str:
    """The installed version of `distribution` ('unknown' when it has no metadata)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class Assumption:
    """What a reach relies on, in the versions it was checked on."""

    dependency: str
    """The distribution (`apache-flink`, `py4j`, `pydantic`...; `python` for the stdlib)."""
    checked_on: str
    """The versions it was checked on."""
    text: str
    """What is assumed, as a reader should see it in the error."""
    holds: Callable[[], bool]
    """Whether the installed version still does (cheap: no JVM, no job)."""

    def check(self) -> None:
        """Raise `IncompatibleDependencyError` unless the assumption holds."""
        if not self.holds():
            self.broken()

    def broken(self) -> NoReturn:
        """Raise `IncompatibleDependencyError` for this assumption and the installed version."""
        if self.dependency == "python":
            version = platform.python_version()
        else:
            version = installed_version(self.dependency)
        raise IncompatibleDependencyError(self.dependency, version, self.text, self.checked_on)
