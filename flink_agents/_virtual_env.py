"""This interpreter's `bin` first on PATH, as activating its virtual environment does.

PyFlink's thread mode runs Python inside the JVM, and that embedded interpreter finds its
installation through the first `python3` on the JVM's PATH. A job started with a virtual
environment's python without activating it (``.venv/bin/python job.py``: how IDEs, cron and
scripts start it) would start the JVM with a PATH that leads to another interpreter, and
every thread-mode job would fail. So importing `flink_agents` puts the environment's `bin`
first on this process's PATH, which is what ``activate`` does: the JVM that PyFlink starts
afterwards (``StreamExecutionEnvironment.get_execution_environment()``, in upstream's
import order) inherits it. Nothing else is touched, and PyFlink is not imported.

`flink_agents.runtime.flink.python_workers` puts the same `bin` first before it starts a
JVM itself (`put_bin_first` is the one rule for both).
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

__all__ = ["activate", "bin_dir", "put_bin_first"]


def bin_dir() -> str:
    """The folder of this interpreter as invoked (a venv's `bin`, not the resolved base)."""
    return str(Path(sys.executable).parent)


def put_bin_first(environ: MutableMapping[str, str]) -> None:
    """`bin_dir()` first on `environ`'s PATH, once; a Java `bin` that `JAVA_HOME` names and
    that was first stays ahead of it (it holds no python)."""
    parts = environ.get("PATH", "").split(os.pathsep)
    first = bin_dir()
    if parts[0] == first:
        return
    java_home = environ.get("JAVA_HOME")
    java_bin = str(Path(java_home) / "bin") if java_home else None
    head = [java_bin] if java_bin and parts[0] == java_bin else []
    entries = [*head, first]
    environ["PATH"] = os.pathsep.join([*entries, *[p for p in parts if p and p not in entries]])


def activate(environ: MutableMapping[str, str] | None = None) -> bool:
    """In a virtual environment, put its `bin` first on PATH (`put_bin_first`); True when
    this interpreter runs from one. Outside one, and in an interpreter with no executable
    (Python embedded in a JVM may have none), nothing changes."""
    if sys.prefix == sys.base_prefix or not os.path.isfile(sys.executable):
        return False
    put_bin_first(os.environ if environ is None else environ)
    return True
