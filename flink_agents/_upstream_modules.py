"""Upstream's modules that are not here: importing one says so, and what to use instead.

Apache Flink Agents may have modules this project does not (none today: the last ones,
the Java wrappers and the execution reporter, are here). Without help an upstream agent
that imports one stops at a bare ``ModuleNotFoundError: No module named ...``;
`UnavailableUpstreamModules` (a finder placed last on ``sys.meta_path`` by
``flink_agents/__init__``) turns that into a ``ModuleNotFoundError`` naming the feature,
what to use instead, and ``docs/migrating-from-flink-agents.md``.

The finder is consulted only after the ordinary ones found nothing, so a module added
here later is imported as usual; remove its entry from `UNAVAILABLE_UPSTREAM_MODULES`
when it is added.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["UNAVAILABLE_UPSTREAM_MODULES", "UnavailableUpstreamModules", "install"]

UNAVAILABLE_UPSTREAM_MODULES: tuple[tuple[str, str, str], ...] = (
    # (upstream module, with its submodules; what it offers upstream; what to use here)
)
"""Upstream modules (each with its submodules) that are not here: one entry per module,
removed when the module is added."""

_DOC = "docs/migrating-from-flink-agents.md"


def _entry(fullname: str) -> tuple[str, str, str] | None:
    for entry in UNAVAILABLE_UPSTREAM_MODULES:
        module = entry[0]
        if fullname == module or fullname.startswith(module + "."):
            return entry
    return None


class UnavailableUpstreamModules:
    """A meta path finder (placed last) for `UNAVAILABLE_UPSTREAM_MODULES`: finding one
    raises ``ModuleNotFoundError`` saying what is not available and what to use."""

    @classmethod
    def find_spec(
        cls,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        entry = _entry(fullname)
        if entry is None:
            return None
        module, feature, instead = entry
        raise ModuleNotFoundError(
            f"{fullname}: upstream Apache Flink Agents' {module} ({feature}) is not available "
            f"in pyflink-agents; instead, {instead}. See {_DOC} (section {module}).",
            name=fullname,
        )


def install() -> None:
    """Put the finder last on ``sys.meta_path`` (once)."""
    if UnavailableUpstreamModules not in sys.meta_path:
        sys.meta_path.append(UnavailableUpstreamModules)  # pyright: ignore[reportArgumentType]
