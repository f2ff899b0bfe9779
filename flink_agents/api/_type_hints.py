"""A function's type hints, resolved where it is pickled, for the process that unpickles it.

cloudpickle ships a job script's functions by value, with only the globals their code uses.
Under ``from __future__ import annotations`` a tool parameter annotated with a class of the
script (``query: CityQuery``) names a class that is not among them, so its hints cannot be
resolved in a Flink worker, and the tool's argument model would miss the class. A
`ShippedTypeHints` kept in the function's ``__dict__`` (which cloudpickle ships too) travels
as the hints resolved in the process that pickles (with the classes, by value where they
cannot be imported by name); `type_hints` reads it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, get_type_hints

__all__ = ["ShippedTypeHints", "ship_type_hints", "type_hints"]

_ATTRIBUTE = "__flink_agents_type_hints__"


class ShippedTypeHints:
    """A function's type hints (``Annotated`` kept), resolved when pickled."""

    __slots__ = ("_func", "_hints")

    def __init__(
        self, func: Callable[..., Any] | None, hints: dict[str, Any] | None = None
    ) -> None:
        self._func = func
        self._hints = hints

    def resolve(self) -> dict[str, Any]:
        """The hints: as shipped, else resolved here (`NameError` when they cannot be)."""
        if self._hints is not None:
            return self._hints
        if self._func is None:
            raise NameError("the type hints could not be resolved where the function was pickled")
        return get_type_hints(self._func, include_extras=True)

    def __reduce__(self) -> tuple[Any, tuple[None, dict[str, Any] | None]]:
        try:
            hints: dict[str, Any] | None = self.resolve()
        except Exception:  # resolved where it is used, as without this object
            hints = None
        return (ShippedTypeHints, (None, hints))


def ship_type_hints(func: Callable[..., Any]) -> None:
    """Make ``func``'s type hints travel with it when it is pickled (a Flink job does this
    for its agent's tools); a callable that takes no attributes is left alone."""
    with contextlib.suppress(AttributeError, TypeError):
        setattr(func, _ATTRIBUTE, ShippedTypeHints(func))


def type_hints(func: Callable[..., Any]) -> dict[str, Any] | None:
    """``func``'s type hints (``Annotated`` kept) as shipped with it, else resolved here;
    None when they cannot be resolved."""
    shipped = getattr(func, _ATTRIBUTE, None)
    try:
        if isinstance(shipped, ShippedTypeHints):
            return shipped.resolve()
        return get_type_hints(func, include_extras=True)
    except Exception:  # unresolvable forward references
        return None
