"""Importing an upstream module that is not here says so, and what to use instead."""

from __future__ import annotations

import importlib
import sys
from importlib.machinery import PathFinder
from pathlib import Path

import pytest

from flink_agents import _upstream_modules
from flink_agents._upstream_modules import UNAVAILABLE_UPSTREAM_MODULES, UnavailableUpstreamModules

MIGRATING = Path(__file__).resolve().parents[1] / "docs" / "migrating-from-flink-agents.md"


@pytest.mark.parametrize("entry", UNAVAILABLE_UPSTREAM_MODULES, ids=lambda e: e[0])
def test_an_upstream_module_that_is_not_here_names_what_to_use(
    entry: tuple[str, str, str],
) -> None:
    """Fails when the module is added here: then remove its entry."""
    module, feature, instead = entry
    with pytest.raises(ModuleNotFoundError) as caught:
        importlib.import_module(module)
    message = str(caught.value)
    assert caught.value.name == module
    assert f"({feature}) is not available in pyflink-agents" in message
    assert instead in message and "docs/migrating-from-flink-agents.md" in message
    # The page has the module's section.
    assert f"`{module}" in MIGRATING.read_text(encoding="utf-8")


FAKE = ("flink_agents.api.teleporter", "the teleporter", "walk")


@pytest.fixture
def fake_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry of a module that is not here (none is, today)."""
    monkeypatch.setattr(_upstream_modules, "UNAVAILABLE_UPSTREAM_MODULES", (FAKE,))


def test_an_entry_names_the_feature_for_the_module_and_its_submodules(fake_entry: None) -> None:
    with pytest.raises(ModuleNotFoundError) as caught:
        importlib.import_module("flink_agents.api.teleporter")
    assert caught.value.name == "flink_agents.api.teleporter"
    assert "(the teleporter) is not available in pyflink-agents; instead, walk" in str(caught.value)
    with pytest.raises(ImportError, match="the teleporter"):
        from flink_agents.api.teleporter.beam import Beam  # noqa: F401  # pyright: ignore[reportMissingImports]
    assert "flink_agents.api.teleporter" not in sys.modules


def test_the_java_wrappers_and_the_reporter_are_here() -> None:
    for module in (
        "flink_agents.api.trace",
        "flink_agents.api.tools.tool_execution_metadata_provider",
        "flink_agents.api.chat_models.java_chat_model",
        "flink_agents.api.embedding_models.java_embedding_model",
        "flink_agents.api.vector_stores.java_vector_store",
    ):
        importlib.import_module(module)


def test_modules_that_are_here_and_other_names_import_as_usual() -> None:
    importlib.import_module("flink_agents.api.memory_object")
    importlib.import_module("flink_agents.api.tools.tool")
    importlib.import_module("flink_agents.api.skills")
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'flink_agents\.nothing'$"):
        importlib.import_module("flink_agents.nothing")
    # After the ordinary finders (others may be appended after it).
    finders = list(sys.meta_path)
    assert finders.index(UnavailableUpstreamModules) > finders.index(PathFinder)  # pyright: ignore[reportArgumentType]


def test_upstreams_plan_paths_name_the_api_classes() -> None:
    # Upstream's tests and older docs import these from its plan layer.
    from flink_agents.api.core_options import AgentConfiguration
    from flink_agents.api.function import JavaFunction, PythonFunction
    from flink_agents.api.tools.function_tool import FunctionTool
    from flink_agents.plan import configuration, function
    from flink_agents.plan.tools import function_tool

    assert (function.PythonFunction, function.JavaFunction) == (PythonFunction, JavaFunction)
    assert configuration.AgentConfiguration is AgentConfiguration
    assert function_tool.FunctionTool is FunctionTool
    assert AgentConfiguration({"a.b": 3}).get_int("a.b") == 3
