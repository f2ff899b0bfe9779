"""`requires_extra`: an SDK that does not import names the extra to install."""

from __future__ import annotations

import importlib

import pytest

from flink_agents.integrations._extras import requires_extra


def test_a_failed_import_names_the_extra_and_keeps_the_cause() -> None:
    with (
        pytest.raises(ImportError) as raised,
        requires_extra("demo", "the demo model needs the demo SDK"),
    ):
        importlib.import_module("flink_agents_no_such_sdk")
    assert str(raised.value) == (
        "the demo model needs the demo SDK: pip install 'pyflink-agents[demo]'"
    )
    assert isinstance(raised.value.__cause__, ModuleNotFoundError)


def test_imports_that_succeed_and_other_errors_pass_through() -> None:
    with requires_extra("demo", "the demo model needs json"):
        json = importlib.import_module("json")
    assert json.dumps([]) == "[]"
    with pytest.raises(ZeroDivisionError), requires_extra("demo", "unused"):
        _ = 1 / 0
