"""What `compat.pemja` assumes holds in the installed apache-flink's pemja."""

from __future__ import annotations

import pytest

from flink_agents._compat import Assumption, IncompatibleDependencyError
from flink_agents.runtime.flink.compat import pemja


@pytest.mark.parametrize("assumption", pemja.ASSUMPTIONS, ids=lambda a: a.text[:50])
def test_the_installed_pemja_is_as_assumed(assumption: Assumption) -> None:
    assumption.check()


def test_outside_the_jvm_find_class_is_named_not_an_import_error() -> None:
    with pytest.raises(IncompatibleDependencyError, match=r"^pemja .* pemja.findClass"):
        pemja.java_class("org.apache.flink.types.Row")


def test_flink_python_jars_are_told_by_name() -> None:
    assert pemja.is_flink_python_jar("/opt/flink/lib/flink-python-2.2.1.jar")
    assert not pemja.is_flink_python_jar("/opt/flink/lib/flink-dist-2.2.1.jar")
    assert not pemja.is_flink_python_jar("/opt/flink/lib/flink-python-2.2.1.jar.bak")
