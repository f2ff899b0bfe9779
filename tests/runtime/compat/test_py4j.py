"""What `compat.py4j` assumes holds in the installed py4j, and the wrap is made once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import py4j.java_gateway as java_gateway  # pyright: ignore[reportMissingImports]
import pytest

from flink_agents._compat import IncompatibleDependencyError
from flink_agents.runtime.flink.compat.py4j import RETURN_VALUE, wrap_return_value


def test_the_installed_py4j_calls_its_module_global_per_java_call() -> None:
    RETURN_VALUE.check()


def test_the_wrap_is_installed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def original(*args: Any) -> str:
        return "answer"

    monkeypatch.setattr(java_gateway, "get_return_value", original)
    wrapped: list[Callable[..., Any]] = []

    def wrapper(current: Callable[..., Any]) -> Callable[..., Any]:
        wrapped.append(current)
        return lambda *args: f"wrapped {current(*args)}"

    wrap_return_value(wrapper, "_test_marker")
    wrap_return_value(wrapper, "_test_marker")
    assert wrapped == [original]
    assert java_gateway.get_return_value() == "wrapped answer"


def test_a_py4j_without_the_global_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(java_gateway, "get_return_value")
    with pytest.raises(IncompatibleDependencyError, match=r"^py4j \S+ breaks .*get_return_value"):
        wrap_return_value(lambda current: current, "_test_marker")
