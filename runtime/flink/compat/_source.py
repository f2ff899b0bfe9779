"""Cheap checks of a dependency's source, for modules that cannot be imported outside a
Flink worker (PyFlink's thread-mode modules import pemja's JVM-only functions)."""

from __future__ import annotations

import importlib.util
import zipfile
from functools import cache
from pathlib import Path

__all__ = ["jar_class_names", "jar_entries", "source_has"]


def source_has(module: str, *snippets: str) -> bool:
    """Whether the source file of `module` (found, not imported) has every snippet."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return False
    text = Path(spec.origin).read_text(encoding="utf-8")
    return all(snippet in text for snippet in snippets)


@cache
def jar_entries() -> frozenset[str]:
    """The entries of PyFlink's jars (lib/*.jar and opt/flink-python*.jar)."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or spec.origin is None:
        return frozenset()
    root = Path(spec.origin).parent
    entries: set[str] = set()
    for jar in [*root.glob("lib/*.jar"), *root.glob("opt/flink-python*.jar")]:
        with zipfile.ZipFile(jar) as archive:
            entries.update(archive.namelist())
    return frozenset(entries)


@cache
def jar_class_names() -> frozenset[str]:
    """The simple names of the classes in PyFlink's jars."""
    return frozenset(
        entry.rsplit("/", 1)[-1].removesuffix(".class")
        for entry in jar_entries()
        if entry.endswith(".class")
    )
