"""Python worker setup: this interpreter for workers, its environment first for thread mode."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from flink_agents.runtime.flink.python_workers import (
    embedded_interpreter_matches,
    prepare_worker_environment,
    python_worker_options,
    site_packages_dirs,
    venv_bin_dir,
)


def test_prepare_puts_this_environment_first() -> None:
    env = {"PATH": os.pathsep.join(["/usr/bin", venv_bin_dir()]), "PYTHONPATH": "/repo"}
    prepare_worker_environment(env)
    prepare_worker_environment(env)
    path = env["PATH"].split(os.pathsep)
    assert path[0] == venv_bin_dir() and path.count(venv_bin_dir()) == 1
    python_path = env["PYTHONPATH"].split(os.pathsep)
    assert python_path[0] == "/repo"
    assert set(site_packages_dirs()) <= set(python_path)
    assert len(python_path) == len(set(python_path))


def test_prepare_keeps_java_bin_ahead(tmp_path: Path) -> None:
    java_bin = str(tmp_path / "jdk" / "bin")
    env = {"JAVA_HOME": str(tmp_path / "jdk"), "PATH": os.pathsep.join([java_bin, "/usr/bin"])}
    prepare_worker_environment(env)
    assert env["PATH"].split(os.pathsep)[:3] == [java_bin, venv_bin_dir(), "/usr/bin"]


def test_worker_options_name_this_interpreter() -> None:
    assert python_worker_options("process") == {
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
        "python.execution-mode": "process",
    }


def test_embedded_interpreter_is_the_first_python3_on_path(tmp_path: Path) -> None:
    other = tmp_path / "other-bin"
    other.mkdir()
    python3 = other / "python3"
    python3.write_text("#!/bin/sh\n")
    python3.chmod(0o755)
    assert embedded_interpreter_matches({"PATH": os.pathsep.join([venv_bin_dir(), str(other)])})
    assert not embedded_interpreter_matches({"PATH": str(other)})
    assert not embedded_interpreter_matches({"PATH": str(tmp_path / "nothing")})
