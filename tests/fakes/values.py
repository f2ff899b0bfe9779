"""Values that test the door: what a runner must refuse without stopping."""

from __future__ import annotations

from typing import Any

__all__ = ["nested_lists"]


def nested_lists(depth: int) -> list[Any]:
    """A list nested `depth` deep (``[[[...]]]``): past the recursion limit, neither JSON
    nor pickle can write it."""
    top: list[Any] = []
    inner = top
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return top
