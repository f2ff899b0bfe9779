"""Importing `flink_agents` puts a virtual environment's `bin` first on PATH, as activating it
would: thread mode's embedded Python finds its installation through the JVM's PATH, and a
job started with ``.venv/bin/python job.py`` (not activated) starts that JVM with PyFlink's
own entry points after its imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flink_agents import _virtual_env

ROOT = Path(__file__).resolve().parents[1]


def _without_bin(path: str) -> str:
    here = str(Path(sys.executable).parent)
    return os.pathsep.join(p for p in path.split(os.pathsep) if p != here)


def test_importing_the_package_puts_the_environments_bin_first_on_path() -> None:
    assert sys.prefix != sys.base_prefix, "the tests run in the project's virtual environment"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = _without_bin(env.get("PATH", "")) + os.pathsep + "/elsewhere/bin"
    code = "import os, flink_agents.api.execution_environment; print(os.environ['PATH'])"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    path = done.stdout.strip().split(os.pathsep)
    assert path[0] == str(Path(sys.executable).parent)
    assert path[1:] == env["PATH"].split(os.pathsep)  # the rest as it was


def test_a_java_bin_that_was_first_stays_first_and_bin_is_put_once() -> None:
    java_home = "/opt/java"
    env = {"PATH": os.pathsep.join(["/opt/java/bin", "/usr/bin"]), "JAVA_HOME": java_home}
    _virtual_env.put_bin_first(env)
    _virtual_env.put_bin_first(env)
    assert env["PATH"].split(os.pathsep) == ["/opt/java/bin", _virtual_env.bin_dir(), "/usr/bin"]


def test_outside_a_virtual_environment_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "base_prefix", sys.prefix)
    env = {"PATH": "/usr/bin"}
    assert not _virtual_env.activate(env)
    assert env == {"PATH": "/usr/bin"}


def test_an_interpreter_without_an_executable_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "executable", "")  # as Python embedded in a JVM may have
    env = {"PATH": "/usr/bin"}
    assert not _virtual_env.activate(env)
    assert env == {"PATH": "/usr/bin"}
