"""Whether thread mode can serve many jobs on this TaskManager, and a warning when not.

Thread mode loads pemja's native library through the class loader of the flink-python jar.
When that jar comes with each job (Flink's `opt/`, added by `flink run`) instead of the
TaskManager's `lib/`, every job loads the library again in a class loader of its own, which
pemja cannot do on Java 15+: the next thread-mode job on the TaskManager (and a restart of
this job after its slots were freed, `slot.idle.timeout`) fails in `open` with
`NoSuchFieldException: loadedLibraryNames`. That failure happens in Java before any Python
code of the failing job runs, so the job that *does* start warns about it. (What pemja
does there, and the versions it was checked on: `flink_agents.runtime.flink.compat.pemja`.)
"""

from __future__ import annotations

import glob
import itertools
import json
import logging
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from flink_agents.runtime.errors import SessionClusterSetupError
from flink_agents.runtime.flink.compat.pemja import is_flink_python_jar

__all__ = [
    "check_session_cluster",
    "cluster_has_flink_python",
    "flink_python_on_jvm_classpath",
    "warn_if_pemja_per_job",
]

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
        if any(is_flink_python_jar(n) for n in names):
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


SESSION_TARGETS = frozenset({"remote", "kubernetes-session", "yarn-session"})
"""`execution.target`s that submit to a cluster that may already run other jobs."""


SESSION_CLUSTER_REFUSED = (
    "refusing to submit a thread-mode agent job to the session cluster at {rest}: its "
    "JobManager's classpath has no flink-python jar, so its TaskManagers load pemja with each "
    "job, and on Java 15+ only one thread-mode job (and no restart after its slots were "
    "freed) can ever start there; the others fail in open with 'NoSuchFieldException: "
    "loadedLibraryNames' and restart without end. Put flink-python-*.jar from Flink's opt/ "
    "into lib/ on the JobManager and every TaskManager and add 'pemja.' to "
    "classloader.parent-first-patterns.additional (tools/flink_cluster/standalone.py does "
    "both), or run the job in application mode or process mode (no checkpointing). To "
    "submit anyway, set the agent option session-cluster.check-python-jar to false. See "
    "docs/operations.md."
)


def cluster_has_flink_python(rest_address: str, timeout_s: float = 3.0) -> bool | None:
    """Whether the JobManager at `rest_address` has a flink-python jar on its classpath
    (usually what its TaskManagers have); None when the REST API does not say."""
    url = f"{rest_address.rstrip('/')}/jobmanager/environment"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body = json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    classpath = body.get("classpath") if isinstance(body, dict) else None
    if not isinstance(classpath, list):
        return None
    return any(is_flink_python_jar(str(entry)) for entry in classpath)


def check_session_cluster(flink_config: Mapping[str, str], rest_address: str | None) -> None:
    """Refuse (`SessionClusterSetupError`) a submission to a session cluster that would load
    pemja per job; say nothing when the target is not a session or its REST API is silent."""
    if flink_config.get("execution.target") not in SESSION_TARGETS or rest_address is None:
        return
    if cluster_has_flink_python(rest_address) is False:
        raise SessionClusterSetupError(SESSION_CLUSTER_REFUSED.format(rest=rest_address))
