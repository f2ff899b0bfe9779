"""What `compat.pyflink` assumes holds in the installed apache-flink (no JVM), and each reach
raises `IncompatibleDependencyError` naming apache-flink when its assumption breaks."""

from __future__ import annotations

from typing import Any

import pytest
from pyflink.common.typeinfo import ExternalTypeInfo, RowTypeInfo, Types  # pyright: ignore[reportMissingImports]
from pyflink.datastream import DataStream  # pyright: ignore[reportMissingImports]

from flink_agents._compat import Assumption, IncompatibleDependencyError, installed_version
from flink_agents.runtime.flink.compat import pyflink
from flink_agents.runtime.flink.compat._source import jar_class_names, source_has


@pytest.mark.parametrize("assumption", pyflink.ASSUMPTIONS, ids=lambda a: a.text[:50])
def test_the_installed_pyflink_has_what_is_assumed(assumption: Assumption) -> None:
    assumption.check()


def test_the_checks_tell_a_missing_internal() -> None:
    assert source_has("pyflink.datastream.data_stream", "class DataStream")
    assert not source_has("pyflink.datastream.data_stream", "class NoSuchStream")
    assert not source_has("pyflink.no_such_module")
    assert "KeyByKeySelector" in jar_class_names()
    assert "NoSuchClassInAnyFlinkJar" not in jar_class_names()


class _Bare:
    """An object without the private attributes PyFlink's objects have."""


def _says_what_broke(error: IncompatibleDependencyError, words: str) -> None:
    message = str(error)
    assert message.startswith(f"apache-flink {installed_version('apache-flink')} breaks")
    assert words in message
    assert pyflink.CHECKED_ON in message


def test_a_missing_private_attribute_is_named_not_an_attribute_error() -> None:
    with pytest.raises(IncompatibleDependencyError) as caught:
        pyflink.java_stream(_Bare())  # type: ignore[arg-type]
    _says_what_broke(caught.value, "_j_data_stream")
    with pytest.raises(IncompatibleDependencyError) as caught:
        pyflink.java_env(_Bare())  # type: ignore[arg-type]
    _says_what_broke(caught.value, "_j_stream_execution_environment")
    with pytest.raises(IncompatibleDependencyError) as caught:
        pyflink.keyed_state_backend(_Bare())
    _says_what_broke(caught.value, "_keyed_state_backend")


def test_a_gateway_module_without_its_global_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyflink.java_gateway as java_gateway  # pyright: ignore[reportMissingImports]

    monkeypatch.delattr(java_gateway, "_gateway")
    with pytest.raises(IncompatibleDependencyError, match="_gateway"):
        pyflink.gateway_running()


def test_the_wrapped_type_of_an_external_type_info() -> None:
    row = RowTypeInfo([Types.STRING()], ["a"])
    assert pyflink.wrapped_type_info(ExternalTypeInfo(row)) is row


def test_the_keyed_state_backend_of_each_mode() -> None:
    class ProcessModeContext:
        _keyed_state_backend = "pyflink's"

    class ThreadModeContext:
        class _Backend:
            _keyed_state_backend = "flink's"

        def get_keyed_state_backend(self) -> Any:
            return self._Backend()

    assert pyflink.keyed_state_backend(ProcessModeContext()) == ("pyflink's", False)
    assert pyflink.keyed_state_backend(ThreadModeContext()) == ("flink's", True)
    assert pyflink.java_runtime_context(ProcessModeContext()) is None


def test_the_collect_fix_wraps_chaining_once(monkeypatch: pytest.MonkeyPatch) -> None:
    original = DataStream._apply_chaining_optimization
    monkeypatch.setattr(DataStream, "_apply_chaining_optimization", original)
    pyflink.install_collect_fix()
    fixed = DataStream._apply_chaining_optimization
    assert fixed is not original
    pyflink.install_collect_fix()
    assert DataStream._apply_chaining_optimization is fixed


def test_a_pyflink_without_the_chaining_method_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(DataStream, "_apply_chaining_optimization")
    with pytest.raises(IncompatibleDependencyError, match="_apply_chaining_optimization"):
        pyflink.install_collect_fix()


def test_a_timer_context_without_its_java_one_is_named() -> None:
    class InternalKeyedProcessFunctionOnTimerContext:  # thread mode's, no Java context
        pass

    InternalKeyedProcessFunctionOnTimerContext.__module__ = (
        "pyflink.fn_execution.datastream.embedded.process_function"
    )
    with pytest.raises(IncompatibleDependencyError) as caught:
        pyflink.timer_collector(InternalKeyedProcessFunctionOnTimerContext())
    _says_what_broke(caught.value, "_j_timer_context")
    # Process mode's context (same class name, another module) has no Java operator here.
    InternalKeyedProcessFunctionOnTimerContext.__module__ = (
        "pyflink.fn_execution.datastream.process.process_function"
    )
    assert pyflink.timer_collector(InternalKeyedProcessFunctionOnTimerContext()) is None
    assert pyflink.timer_collector(_Bare()) is None
