"""pemja internals: how thread mode's embedded Python reaches Java, and where pemja lives.

Thread mode runs Python inside the TaskManager's JVM through pemja (0.5.7 in apache-flink
1.20.5, 2.0.2, 2.1.3, 2.2.1 and 2.3.0; checked on each line's jars and sources).

Reaches:

- `java_class`: `pemja.findClass`, which exists only inside the JVM (pemja's native module
  adds it); outside, `import pemja` gives an empty package. PyFlink's thread-mode modules
  import it the same way. The agent operator makes Java `Row` keys with it.
- `is_flink_python_jar`: pemja's Java side (`pemja.core.PythonInterpreter`, which loads its
  native library) ships inside `flink-python-*.jar`. The class loader that loads that jar
  loads the library: from the TaskManager's `lib/`, once per TaskManager; from a job's own
  copy (Flink's `opt/`, added by `flink run`), once per job, which pemja cannot do twice in
  one JVM on Java 15+ (`NoSuchFieldException: loadedLibraryNames`). So a session cluster
  needs that jar in `lib/` and `pemja.` parent-first
  (`flink_agents.runtime.flink.session_cluster` checks and warns).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flink_agents._compat import Assumption
from flink_agents.runtime.flink.compat._source import jar_entries, source_has

__all__ = ["ASSUMPTIONS", "FIND_CLASS", "is_flink_python_jar", "java_class"]

CHECKED_ON = "0.5.7 (apache-flink 1.20.5, 2.0.2, 2.1.3, 2.2.1, 2.3.0)"

_JAR_PREFIX = "flink-python"
_INTERPRETER_CLASS = "pemja/core/PythonInterpreter.class"

FIND_CLASS = Assumption(
    "pemja",
    CHECKED_ON,
    "inside the JVM, pemja.findClass(name) gives a Java class (PyFlink's thread-mode "
    "modules import it the same way)",
    lambda: source_has("pyflink.fn_execution.embedded.state_impl", "from pemja import findClass"),
)
IN_FLINK_PYTHON_JAR = Assumption(
    "pemja",
    CHECKED_ON,
    f"pemja's Java side ({_INTERPRETER_CLASS}) ships inside PyFlink's "
    f"{_JAR_PREFIX}-*.jar, whose class loader loads pemja's native library",
    lambda: _INTERPRETER_CLASS in jar_entries(),
)
ASSUMPTIONS = (FIND_CLASS, IN_FLINK_PYTHON_JAR)


def java_class(name: str) -> Any:
    """The Java class `name` (e.g. `org.apache.flink.types.Row`), from thread-mode Python."""
    try:
        from pemja import findClass  # pyright: ignore[reportAttributeAccessIssue]
    except ImportError:
        FIND_CLASS.broken()
    return findClass(name)


def is_flink_python_jar(path: str) -> bool:
    """Whether a class path entry is a flink-python jar (the one that carries pemja)."""
    name = Path(path).name
    return name.startswith(_JAR_PREFIX) and name.endswith(".jar")
