"""Whether thread mode can serve many jobs on this TaskManager, and a warning when not.

Thread mode loads pemja's native library through the class loader of the flink-python jar.
When that jar comes with each job (Flink's `opt/`, added by `flink run`) instead of the
TaskManager's `lib/`, every job loads the library again in a class loader of its own, which
pemja cannot do on Java 15+: the next thread-mode job on the TaskManager (and a restart of
this job after its slots were freed, `slot.idle.timeout`) fails in `open` with
`NoSuchFieldException: loadedLibraryNames`. That failure happens in Java before any Python
code of the failing job runs, so the job that *does* start warns about it.
"""

from __future__ import annotations

import glob
import itertools
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["flink_python_on_jvm_classpath", "warn_if_pemja_per_job"]

_LOG = logging.getLogger(__name__)
_CLASSPATH_FLAGS = (b"-classpath", b"-cp", b"--class-path")
_warned = False

PEMJA_PER_JOB_WARNING = (
    "this TaskManager runs thread-mode Python from the job's own copy of the flink-python "
    "jar (it is not in the TaskManager's lib/): on Java 15+ the next thread-mode job on this "
    "TaskManager, and a restart of this job after its slots were freed (slot.idle.timeout), "
    "fail in open with 'NoSuchFieldException: loadedLibraryNames'. Put flink-python-*.jar "
    "from Flink's opt/ into lib/ on every TaskManager and add 'pemja.' to "
    "classloader.parent-first-patterns.additional (tools/flink_cluster/standalone.py does "
    "both), or run each job on a cluster of its own. See docs/operations.md."
)


def flink_python_on_jvm_classpath(
    cmdline: bytes | None = None, environ: Mapping[str, str] | None = None
) -> bool | None:
    """Whether the JVM this (embedded) interpreter runs in has a flink-python jar on its own
    class path; None when that cannot be told (not Linux, not inside a `java` process)."""
    if cmdline is None:
        if not sys.platform.startswith("linux"):
            return None
        try:
            cmdline = Path("/proc/self/cmdline").read_bytes()
        except OSError:
            return None
    args = cmdline.split(b"\0")
    if not args or Path(os.fsdecode(args[0])).name not in ("java", "java.exe"):
        return None
    env = os.environ if environ is None else environ
    entries = [e for e in env.get("CLASSPATH", "").split(os.pathsep) if e]
    for flag, value in itertools.pairwise(args):
        if flag in _CLASSPATH_FLAGS:
            entries += [e for e in os.fsdecode(value).split(os.pathsep) if e]
    for entry in entries:
        names = glob.glob(entry) if entry.endswith("*") else [entry]
        if any(Path(n).name.startswith("flink-python") and n.endswith(".jar") for n in names):
            return True
    return False


def warn_if_pemja_per_job() -> bool:
    """Log `PEMJA_PER_JOB_WARNING` once per process when it applies; whether it did."""
    global _warned
    if _warned or flink_python_on_jvm_classpath() is not False:
        return False
    _warned = True
    _LOG.warning(PEMJA_PER_JOB_WARNING)
    return True
