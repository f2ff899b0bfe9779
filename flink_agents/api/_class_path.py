"""Name a class by its path, and find the class a path names.

A class path is ``module:qualname`` (the colon keeps nested classes unambiguous:
``pkg.mod:Outer.Inner``). Where users write one by hand (a `ResourceDescriptor`), the
dotted ``module.Name`` of a module-level class is read too.
"""

from __future__ import annotations

import importlib

__all__ = ["class_path", "find_class", "import_class"]


def class_path(cls: type) -> str:
    """``module:qualname`` of ``cls``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def import_class(path: str) -> type:
    """The class ``path`` names (``module:qualname``, or dotted ``module.Name``), imported.

    Raises `ValueError` when ``path`` cannot name an importable class (no module part; a
    class defined in a function, ``<locals>``; a generic alias, ``Model[int]``),
    `ImportError` when the module cannot be imported, `AttributeError` when it has no such
    name, and `TypeError` when the name is not a class.
    """
    if ":" in path:
        module_name, _, qualname = path.partition(":")
    else:
        module_name, _, qualname = path.rpartition(".")
    if not module_name or not qualname:
        raise ValueError(f"{path!r} is not a class path (write module:QualName or module.Name)")
    if "<" in qualname or "[" in qualname:
        raise ValueError(
            f"class {path!r} cannot be imported by name (define it at module level, "
            "not in a function or as a generic alias)"
        )
    target: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not isinstance(target, type):
        raise TypeError(f"{path!r} is not a class")
    return target


def find_class(path: str) -> type | None:
    """`import_class`, or ``None`` when ``path`` names no class that can be imported."""
    try:
        return import_class(path)
    except (ValueError, ImportError, AttributeError, TypeError):
        return None
