"""Every reach into PyFlink's, py4j's and asyncio's internals is still there in the
installed versions (tools/flink_lines.sh runs this on every Flink line)."""

from __future__ import annotations

import importlib.util

from flink_agents.runtime.flink.internals import (
    INTERNALS,
    Internal,
    _java_class,
    _loop_attributes,
    _python_name,
    missing_internals,
)


def test_every_internal_the_runtime_relies_on_is_present() -> None:
    missing = missing_internals()
    assert not missing, "gone in this apache-flink/py4j/Python: " + "; ".join(
        f"{m.name} (used by {m.used_by}: {m.why})" for m in missing
    )


def test_each_check_tells_a_missing_internal() -> None:
    assert _python_name("pyflink.datastream.DataStream.key_by")()
    assert not _python_name("pyflink.datastream.DataStream._no_such_method")()
    assert not _python_name("pyflink.no_such_module.name")()
    assert _java_class("KeyByKeySelector")()
    assert not _java_class("NoSuchClassInAnyFlinkJar")()
    assert _loop_attributes("_ready", "_run")()
    assert not _loop_attributes("_ready", "_no_such_attribute")()


def test_every_internal_names_its_user_and_reason() -> None:
    for internal in INTERNALS:
        assert isinstance(internal, Internal)
        assert internal.used_by.startswith("flink_agents.runtime."), internal.name
        assert internal.why, internal.name
        assert importlib.util.find_spec(internal.used_by), internal.used_by
