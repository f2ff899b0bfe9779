"""Name a class by ``module:qualname`` and find it again from that name."""

from __future__ import annotations

import importlib

__all__ = ["class_path", "resolve_class_path"]


def class_path(cls: type) -> str:
    """``module:qualname`` of a class; the colon keeps nested qualnames unambiguous."""
    return f"{cls.__module__}:{cls.__qualname__}"


def resolve_class_path(path: str) -> type | None:
    """The class a ``module:qualname`` names, or ``None`` when it cannot be imported.

    Classes defined inside functions (``<locals>`` in the qualname) and generic aliases
    (``Model[int]``) cannot be found by name and give ``None``.
    """
    module_name, sep, qualname = path.partition(":")
    if not sep or not module_name or not qualname or "<" in qualname or "[" in qualname:
        return None
    try:
        target: object = importlib.import_module(module_name)
    except ImportError:
        return None
    for part in qualname.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target if isinstance(target, type) else None
