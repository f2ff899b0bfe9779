"""A setup's typed options as call parameters (its ``model_kwargs``): only those set.

A chat model setup declares its options as typed fields, ``None`` meaning "not set: the
provider's default". Its ``model_kwargs`` passes the ones that are set, then its
``params`` (which win); `set_options` is that first step. A setup that subclasses another
adds its own options to the base's ``model_kwargs`` with `add_options` (the ``params``
already in them still win).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["add_options", "set_options"]


def set_options(setup: object, names: Iterable[str]) -> dict[str, Any]:
    """``{name: value}`` for each of ``names`` (in order) whose field on ``setup`` is not
    ``None``."""
    values = ((name, getattr(setup, name)) for name in names)
    return {name: value for name, value in values if value is not None}


def add_options(kwargs: dict[str, Any], setup: object, names: Iterable[str]) -> dict[str, Any]:
    """``kwargs`` (a base setup's ``model_kwargs``), with each of ``names`` whose field on
    ``setup`` is set and that ``kwargs`` do not hold already (their ``params`` win), after
    them in order."""
    for name, value in set_options(setup, names).items():
        kwargs.setdefault(name, value)
    return kwargs
