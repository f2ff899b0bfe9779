"""Configure PyFlink's Python workers to run the interpreter and packages of this process.

Measured facts this module encodes (apache-flink 2.3):

- Workers do not inherit the virtual environment: without `python.executable` and
  `python.client.executable` set to this interpreter a job fails with
  `No module named 'pyflink'` inside the worker.
- Thread mode runs Python inside the JVM (pemja). That embedded interpreter finds its
  installation through the first `python3` on the JVM's PATH, not through
  `python.executable`: unless the virtual environment's `bin` comes first it starts the base
  interpreter and fails with `No module named 'pemja'` (or misses this package). PYTHONPATH
  with the environment's site-packages helps for plain installs; editable installs need the
  environment itself (their import hook is a `.pth` file).
- Both must be in place before the JVM starts: the mini-cluster of a local run lives in the
  gateway JVM and inherits the client's environment variables. Importing `flink_agents`
  puts a virtual environment's `bin` first already (`flink_agents._virtual_env`), so a job
  started with ``.venv/bin/python job.py``, not activated, gets it with PyFlink's own
  entry points too.
"""

from __future__ import annotations

import logging
import os
import shutil
import site
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Literal

from flink_agents._virtual_env import bin_dir, put_bin_first

__all__ = [
    "ExecutionMode",
    "embedded_interpreter_matches",
    "prepare_worker_environment",
    "python_worker_options",
    "site_packages_dirs",
    "venv_bin_dir",
]

_LOG = logging.getLogger(__name__)

ExecutionMode = Literal["thread", "process"]
"""PyFlink's `python.execution-mode`: Python inside the JVM, or in a separate worker."""


def venv_bin_dir() -> str:
    """The folder of this interpreter as invoked (a venv's `bin`, not the resolved base)."""
    return bin_dir()


def site_packages_dirs() -> list[str]:
    """This interpreter's site-packages folders that exist."""
    dirs = [*site.getsitepackages()]
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if isinstance(user_site, str):
        dirs.append(user_site)
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def prepare_worker_environment(environ: MutableMapping[str, str] | None = None) -> None:
    """Put this interpreter's `bin` first on PATH and its site-packages on PYTHONPATH.

    Affects the processes started afterwards: the PyFlink gateway JVM, the mini-cluster in it,
    and Flink's shell scripts. (Importing `flink_agents` already put a virtual environment's
    `bin` first: `flink_agents._virtual_env`.)
    """
    env = os.environ if environ is None else environ
    put_bin_first(env)
    py_parts = env.get("PYTHONPATH", "").split(os.pathsep)
    missing = [d for d in site_packages_dirs() if d not in py_parts]
    if missing:
        env["PYTHONPATH"] = os.pathsep.join([*[p for p in py_parts if p], *missing])


def python_worker_options(mode: ExecutionMode) -> dict[str, str]:
    """The Flink options that make workers run this interpreter in `mode`."""
    return {
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
        "python.execution-mode": mode,
    }


def embedded_interpreter_matches(jvm_environ: Mapping[str, str]) -> bool:
    """Whether Python embedded in a JVM with `jvm_environ` would be this environment.

    The embedded interpreter locates its installation from the first `python3` on PATH.
    """
    found = shutil.which("python3", path=jvm_environ.get("PATH", ""))
    if found is None:
        return False
    found_path = Path(found)
    if str(found_path.parent) == venv_bin_dir():
        return True
    if sys.prefix != sys.base_prefix:
        # A virtual environment: only its own bin gives the embedded Python its packages.
        return False
    return os.path.realpath(found) == os.path.realpath(sys.executable)
