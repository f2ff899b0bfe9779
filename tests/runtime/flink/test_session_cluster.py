"""Telling whether a TaskManager's JVM has flink-python on its own class path."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_agents.runtime.errors import SessionClusterSetupError
from flink_agents.runtime.flink.session_cluster import (
    check_session_cluster,
    flink_python_on_jvm_classpath,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse


def _cmdline(*args: str) -> bytes:
    return b"\0".join(a.encode() for a in args) + b"\0"


def test_a_jar_on_the_class_path_is_found(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "flink-python-2.3.0.jar").write_bytes(b"")
    (lib / "flink-dist-2.3.0.jar").write_bytes(b"")
    explicit = _cmdline("/usr/bin/java", "-Xmx1g", "-classpath", f"{lib}/flink-python-2.3.0.jar")
    assert flink_python_on_jvm_classpath(explicit, {}) is True
    wildcard = _cmdline("/usr/bin/java", "-cp", f"{lib}/*", "TaskManagerRunner")
    assert flink_python_on_jvm_classpath(wildcard, {}) is True
    from_env = _cmdline("/usr/bin/java", "TaskManagerRunner")
    assert flink_python_on_jvm_classpath(from_env, {"CLASSPATH": f"{lib}/*"}) is True


def test_a_task_manager_without_it_is_told_apart(tmp_path: Path) -> None:
    (tmp_path / "flink-dist-2.3.0.jar").write_bytes(b"")
    cmd = _cmdline("/opt/jdk/bin/java", "-classpath", f"{tmp_path}/flink-dist-2.3.0.jar")
    assert flink_python_on_jvm_classpath(cmd, {}) is False


def test_outside_a_jvm_nothing_is_said() -> None:
    assert flink_python_on_jvm_classpath(_cmdline("/usr/bin/python3", "-m", "pytest"), {}) is None


def _jobmanager(classpath: list[str]) -> FakeProviderServer:
    server = FakeProviderServer()
    server.enqueue(ScriptedResponse(body={"jvm": {}, "classpath": classpath}))
    return server


def test_a_session_cluster_without_flink_python_is_refused() -> None:
    session = {"execution.target": "remote"}
    with _jobmanager(["/opt/flink/lib/flink-dist-2.3.0.jar"]) as server:
        with pytest.raises(
            SessionClusterSetupError, match=r"flink-python-\*\.jar from Flink's opt"
        ):
            check_session_cluster(session, server.base_url)
        assert server.requests[0].path == "/jobmanager/environment"
    with _jobmanager(["/c/lib/flink-dist-2.3.0.jar", "/c/lib/flink-python-2.3.0.jar"]) as server:
        check_session_cluster(session, server.base_url)  # the project's setup


def test_other_targets_and_silent_clusters_are_not_checked() -> None:
    with _jobmanager([]) as server:
        check_session_cluster({"execution.target": "local"}, server.base_url)
        check_session_cluster({}, server.base_url)
        assert server.requests == []
    check_session_cluster({"execution.target": "remote"}, None)
    check_session_cluster({"execution.target": "remote"}, "http://127.0.0.1:9")  # no answer
