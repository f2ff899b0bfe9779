"""Filling ``{name}`` placeholders in prompt templates (upstream's module).

One pass over the template: each ``{name}`` whose name was given is replaced by
``str(value)``; any other braces (a JSON example, a name that was not given) stay as
they are, and a value is never expanded again (a value ``"{secret}"`` stays literal).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SafeFormatter", "format_string"]

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
"""A name between braces, no nested braces."""


class SafeFormatter:
    """Fills placeholders from ``kwargs``; a missing name is left in place, not an error."""

    def __init__(self, kwargs: Mapping[str, Any] | None = None) -> None:
        self.kwargs: dict[str, Any] = dict(kwargs or {})

    def format(self, text: str) -> str:
        """``text`` with every known ``{name}`` replaced (in one pass)."""
        values = self.kwargs

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            return str(values[name]) if name in values else match.group(0)

        return _PLACEHOLDER.sub(replace, text)


def format_string(_template: str, /, **kwargs: Any) -> str:
    """``_template`` with ``{name}`` filled from ``kwargs`` (see `SafeFormatter`)."""
    return SafeFormatter(kwargs).format(_template)
