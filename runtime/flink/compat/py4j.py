"""py4j internals: the call path every Java call's answer goes through.

Reach (checked on py4j 0.10.9.7, the py4j of apache-flink 1.20.5, 2.0.2, 2.1.3, 2.2.1 and
2.3.0):

- `wrap_return_value`: `py4j.java_gateway.get_return_value`, a module global that
  `JavaMember.__call__` (every Java method call) looks up at each call, so replacing it
  wraps every answer. PyFlink replaces it already (`pyflink.util.exceptions`) to turn Java
  exceptions into Python ones; the agents environment wraps PyFlink's so a failed job names
  its Python cause (`flink_agents.runtime.flink.job_failure`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from flink_agents._compat import Assumption

__all__ = ["ASSUMPTIONS", "RETURN_VALUE", "wrap_return_value"]

CHECKED_ON = "0.10.9.7"


def _looked_up_per_call() -> bool:
    import py4j.java_gateway as java_gateway  # pyright: ignore[reportMissingImports]

    return callable(getattr(java_gateway, "get_return_value", None)) and (
        "get_return_value(" in inspect.getsource(java_gateway.JavaMember.__call__)
    )


RETURN_VALUE = Assumption(
    "py4j",
    CHECKED_ON,
    "py4j.java_gateway.get_return_value is a module global JavaMember.__call__ calls for "
    "every Java call's answer",
    _looked_up_per_call,
)
ASSUMPTIONS = (RETURN_VALUE,)


def wrap_return_value(
    wrapper: Callable[[Callable[..., Any]], Callable[..., Any]], marker: str
) -> None:
    """Replace py4j's `get_return_value` with `wrapper(current)`, once: the result is marked
    with attribute `marker`, and a current one that has it is kept."""
    import py4j.java_gateway as java_gateway  # pyright: ignore[reportMissingImports]

    current: Any = getattr(java_gateway, "get_return_value", None)
    if current is None:
        RETURN_VALUE.broken()
    if getattr(current, marker, False):
        return
    wrapped = wrapper(current)
    setattr(wrapped, marker, True)
    java_gateway.get_return_value = wrapped
