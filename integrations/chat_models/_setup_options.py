"""A setup's typed options as call parameters (its ``model_kwargs``): only those set.

A chat model setup declares its options as typed fields, ``None`` meaning "not set: the
provider's default". Its ``model_kwargs`` passes the ones that are set, then its
``params`` (which win); `set_options` is that first step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["set_options"]


def set_options(setup: object, names: Iterable[str]) -> dict[str, Any]:
    """``{name: value}`` for each of ``names`` (in order) whose field on ``setup`` is not
    ``None``."""
    values = ((name, getattr(setup, name)) for name in names)
    return {name: value for name, value in values if value is not None}
