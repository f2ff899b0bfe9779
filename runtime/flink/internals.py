"""Every place the runtime reaches into a dependency's internals, and a check that each is
still there in the versions installed.

PyFlink, py4j and asyncio keep no promise about private names and Java classes the Python
API does not expose. Each reach below names what it relies on, which module relies on it,
why, and the versions it was checked on. `missing_internals()` looks each up without a
JVM (Python names by import, Java classes by their entries in PyFlink's jars), so a new
apache-flink or Python that drops one fails `tests/runtime/flink/test_internals.py`,
which `tools/flink_lines.sh` runs on every Flink line, instead of a job at run time.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["CHECKED_FLINK", "CHECKED_PYTHON", "INTERNALS", "Internal", "missing_internals"]

CHECKED_FLINK = ("1.20.5", "2.0.2", "2.1.3", "2.2.1", "2.3.0")
"""The apache-flink releases every reach below was checked on (Python 3.11, Java 17)."""

CHECKED_PYTHON = ("3.11",)
"""The Python versions the asyncio reaches were checked on."""


@dataclass(frozen=True)
class Internal:
    """One reach into a dependency's internals."""

    name: str
    """What is relied on: a dotted Python name or a Java class's simple name."""
    used_by: str
    """The module that relies on it."""
    why: str
    present: Callable[[], bool]
    """Whether the installed versions still have it (no JVM needed)."""


def _python_name(dotted: str) -> Callable[[], bool]:
    """Whether `module.attr.attr...` resolves: the longest importable prefix, then attributes."""

    def present() -> bool:
        parts = dotted.split(".")
        for split in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            for attribute in parts[split:]:
                if not hasattr(found, attribute):
                    return False
                found = getattr(found, attribute)
            return True
        return False

    return present


@cache
def _java_class_names() -> frozenset[str]:
    """The simple names of every class in PyFlink's jars (lib and opt)."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or spec.origin is None:
        return frozenset()
    root = Path(spec.origin).parent
    names: set[str] = set()
    for jar in [*root.glob("lib/*.jar"), *root.glob("opt/flink-python*.jar")]:
        with zipfile.ZipFile(jar) as archive:
            for entry in archive.namelist():
                if entry.endswith(".class"):
                    names.add(entry.rsplit("/", 1)[-1].removesuffix(".class"))
    return frozenset(names)


def _java_class(simple_name: str) -> Callable[[], bool]:
    return lambda: simple_name in _java_class_names()


def _loop_attributes(*names: str) -> Callable[[], bool]:
    def present() -> bool:
        loop = asyncio.new_event_loop()
        try:
            handle = loop.call_soon(lambda: None)
            return all(hasattr(loop, n) or hasattr(handle, n) for n in names)
        finally:
            loop.close()

    return present


INTERNALS: tuple[Internal, ...] = (
    Internal(
        "pyflink.datastream.DataStream._apply_chaining_optimization",
        "flink_agents.runtime.flink.chaining",
        "wrapped so execute_and_collect fuses Python operators without running them twice",
        _python_name("pyflink.datastream.DataStream._apply_chaining_optimization"),
    ),
    Internal(
        "pyflink.util.java_utils.get_j_env_configuration",
        "flink_agents.runtime.flink.environment",
        "the Java environment's configuration, to set the Python workers' options",
        _python_name("pyflink.util.java_utils.get_j_env_configuration"),
    ),
    Internal(
        "pyflink.util.java_utils.is_local_deployment",
        "flink_agents.runtime.flink.environment",
        "whether the job runs on the gateway's mini-cluster",
        _python_name("pyflink.util.java_utils.is_local_deployment"),
    ),
    Internal(
        "pyflink.java_gateway._gateway",
        "flink_agents.runtime.flink.environment",
        "whether the gateway JVM already started (its environment can no longer change)",
        _python_name("pyflink.java_gateway._gateway"),
    ),
    Internal(
        "py4j.java_gateway.get_return_value",
        "flink_agents.runtime.flink.job_failure",
        "wrapped so a failed job raises FlinkJobFailedError with the agent's cause",
        _python_name("py4j.java_gateway.get_return_value"),
    ),
    Internal(
        "PythonConfigUtil",
        "flink_agents.runtime.flink.environment",
        "STREAM_KEY_BY_MAP_OPERATOR_NAME, the name of PyFlink's key_by map",
        _java_class("PythonConfigUtil"),
    ),
    Internal(
        "KeyByKeySelector",
        "flink_agents.runtime.flink.environment",
        "the Java key selector of a Python key_by, reused for the agent's keyed stream",
        _java_class("KeyByKeySelector"),
    ),
    Internal(
        "LegacySourceTransformation",
        "flink_agents.runtime.flink.replayed_sources",
        "found by simple name to warn about sources read again after a restore",
        _java_class("LegacySourceTransformation"),
    ),
    Internal(
        "InputFormatSourceFunction",
        "flink_agents.runtime.flink.replayed_sources",
        "from_collection's source function (package source.legacy in Flink 2, source in 1.20)",
        _java_class("InputFormatSourceFunction"),
    ),
    Internal(
        "CollectionInputFormat",
        "flink_agents.runtime.flink.replayed_sources",
        "tells from_collection from other input formats in the warning",
        _java_class("CollectionInputFormat"),
    ),
    Internal(
        "TaskInfo",
        "flink_agents.runtime.flink.operator",
        "thread mode's RuntimeContext getters fail on Flink 2; the task's name, subtask and "
        "attempt are read from the Java RuntimeContext's getTaskInfo() instead",
        _java_class("TaskInfo"),
    ),
    Internal(
        "EmbeddedPythonKeyedProcessOperator$OnTimerContextImpl",
        "flink_agents.runtime.flink.timer_outputs",
        "thread mode's timer context (the Python context's _j_timer_context): its enclosing "
        "operator's `collector` field (a TimestampedCollector) has the drain's outputs' "
        "timestamp erased",
        _java_class("EmbeddedPythonKeyedProcessOperator$OnTimerContextImpl"),
    ),
    Internal(
        "AbstractEmbeddedDataStreamPythonFunctionOperator",
        "flink_agents.runtime.flink.timer_outputs",
        "declares the `collector` field the drain's outputs go through",
        _java_class("AbstractEmbeddedDataStreamPythonFunctionOperator"),
    ),
    Internal(
        "asyncio.events._get_running_loop",
        "flink_agents.runtime.flink.loop_thread",
        "the loop thread runs ready callbacks itself between Flink's callbacks",
        _python_name("asyncio.events._get_running_loop"),
    ),
    Internal(
        "asyncio.events._set_running_loop",
        "flink_agents.runtime.flink.loop_thread",
        "the loop thread runs ready callbacks itself between Flink's callbacks",
        _python_name("asyncio.events._set_running_loop"),
    ),
    Internal(
        "BaseEventLoop._ready, _scheduled; Handle._run, _cancelled",
        "flink_agents.runtime.flink.loop_thread",
        "the loop thread runs ready callbacks itself between Flink's callbacks",
        _loop_attributes("_ready", "_scheduled", "_run", "_cancelled"),
    ),
)
"""Every reach into internals, in one list (a new one is added here with its check)."""


def missing_internals() -> list[Internal]:
    """The reaches the installed versions no longer offer."""
    return [internal for internal in INTERNALS if not internal.present()]
