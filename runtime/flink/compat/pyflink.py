"""PyFlink internals: private attributes, Java classes the Python API does not expose, and
the fusion fix for `execute_and_collect`.

Every reach was checked on apache-flink 1.20.5, 2.0.2, 2.1.3, 2.2.1 and 2.3.0 (Python 3.11,
Java 17; the source of each line's `pyflink`). Each function raises
`IncompatibleDependencyError` (apache-flink, its version, the assumption) when what it
reaches for is not there; `ASSUMPTIONS` lists the checks `tests/runtime/compat/` runs
against the installed apache-flink without a JVM.

Reaches:

- `gateway_running`: `pyflink.java_gateway._gateway`, whether the gateway JVM started (its
  environment can no longer change).
- `java_stream`, `java_env`: `DataStream._j_data_stream`,
  `StreamExecutionEnvironment._j_stream_execution_environment`.
- `java_configuration`, `local_deployment`: `pyflink.util.java_utils`'s
  `get_j_env_configuration` and `is_local_deployment` (the job's Java configuration, to set
  the Python workers' options).
- `keyed_stream`: `KeyedStream(j_keyed_stream, original_data_type_info, origin_stream)`, a
  Python `KeyedStream` over a Java one keyed by `key_by_selector`, named `key_by_map_name`
  (PyFlink's own `key_by`, with the agent's map before it): Java classes `KeyByKeySelector`
  and `PythonConfigUtil.STREAM_KEY_BY_MAP_OPERATOR_NAME`.
- `wrapped_type_info`: `ExternalTypeInfo._type_info` (upstream documents
  `ExternalTypeInfo(RowTypeInfo(...))` as an output type).
- `java_runtime_context`: thread mode's `StreamingRuntimeContext._runtime_context`, the Java
  RuntimeContext (Flink 2's task info, the TaskManager's configuration, the job id).
- `keyed_state_backend`: the keyed state backend behind a RuntimeContext (thread mode:
  `get_keyed_state_backend()._keyed_state_backend`, Flink's Java one; process mode:
  `_keyed_state_backend`, PyFlink's), to make another key current at end of input.
- `timer_collector`: thread mode's timer context `_j_timer_context` (PyFlink's
  `InternalTimerContext`/`OnTimerContext` of `embedded.process_function`), its Java operator
  (`this$0` of `EmbeddedPythonKeyedProcessOperator$OnTimerContextImpl`) and that operator's
  `collector` field (`AbstractEmbeddedDataStreamPythonFunctionOperator`, a
  `TimestampedCollector`), read by Java reflection: the end-of-input drain erases the timer's
  timestamp on it (`flink_agents.runtime.flink.timer_outputs`).
- `install_collect_fix`: wraps `DataStream._apply_chaining_optimization` (below).
- Java classes found by simple name in a job graph (`replayed_sources`):
  `LegacySourceTransformation`, `InputFormatSourceFunction` (package `source.legacy` in
  Flink 2, `source` in 1.20), `CollectionInputFormat`; and `TaskInfo`.

Behaviour relied on without a reach (checked on the same lines by `tools/flink_lines.sh`):
after a failure PyFlink calls `close` on neither the failed nor the cancelled instances of a
function, so the agent operator stops its runs from a `weakref.finalize` too
(`flink_agents.runtime.flink.operator`).

**The fusion fix.** PyFlink fuses a Python operator with the Python operator after it into
one. `DataStream.execute_and_collect` fuses only what its stream reaches, and finds who
consumes a fused operator among the operators the environment lists, which holds physical
operators only: a union, a repartition or a side output between the fused pair and the
collected stream is not there. Such a consumer keeps reading the operators that were fused,
and the job runs them twice (with a uid on the first, Flink refuses the job: `Hash collision
on user-specified ID`). `install_collect_fix` makes `execute_and_collect` list the collected
stream first, so the fusion finds every consumer on its way there. `env.execute()` needs no
fix: it fuses over every operator.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pyflink.java_gateway as java_gateway  # pyright: ignore[reportMissingImports]
from pyflink.common.typeinfo import ExternalTypeInfo, TypeInformation  # pyright: ignore[reportMissingImports]
from pyflink.datastream import (  # pyright: ignore[reportMissingImports]
    DataStream,
    KeyedStream,
    StreamExecutionEnvironment,
)
from pyflink.java_gateway import get_gateway  # pyright: ignore[reportMissingImports]

from flink_agents._compat import Assumption
from flink_agents.runtime.flink.compat._source import jar_class_names, source_has

__all__ = [
    "ASSUMPTIONS",
    "gateway_running",
    "install_collect_fix",
    "java_configuration",
    "java_env",
    "java_runtime_context",
    "java_stream",
    "key_by_map_name",
    "key_by_selector",
    "keyed_state_backend",
    "keyed_stream",
    "local_deployment",
    "timer_collector",
    "wrapped_type_info",
]

CHECKED_ON = "1.20.5, 2.0.2, 2.1.3, 2.2.1, 2.3.0"

_EMBEDDED_CONTEXT = "pyflink.fn_execution.datastream.embedded.runtime_context"
_PROCESS_CONTEXT = "pyflink.fn_execution.datastream.process.runtime_context"
_EMBEDDED_FUNCTIONS = "pyflink.fn_execution.datastream.embedded.process_function"


def _assumption(text: str, holds: Callable[[], bool]) -> Assumption:
    return Assumption("apache-flink", CHECKED_ON, text, holds)


def _has_java_classes(*names: str) -> Callable[[], bool]:
    return lambda: all(name in jar_class_names() for name in names)


def _java_utils() -> Any:
    import pyflink.util.java_utils as java_utils  # pyright: ignore[reportMissingImports]

    return java_utils


GATEWAY = _assumption(
    "pyflink.java_gateway has a module attribute _gateway (None until the JVM starts)",
    lambda: hasattr(java_gateway, "_gateway"),
)
JAVA_STREAM = _assumption(
    "a DataStream keeps its Java stream in _j_data_stream",
    lambda: "self._j_data_stream = j_data_stream" in inspect.getsource(DataStream.__init__),
)
JAVA_ENV = _assumption(
    "a StreamExecutionEnvironment keeps its Java one in _j_stream_execution_environment",
    lambda: (
        "self._j_stream_execution_environment"
        in inspect.getsource(StreamExecutionEnvironment.__init__)
    ),
)
JAVA_UTILS = _assumption(
    "pyflink.util.java_utils has get_j_env_configuration and is_local_deployment",
    lambda: (
        callable(getattr(_java_utils(), "get_j_env_configuration", None))
        and callable(getattr(_java_utils(), "is_local_deployment", None))
    ),
)
KEYED_STREAM = _assumption(
    "KeyedStream(j_keyed_stream, original_data_type_info, origin_stream) wraps a Java "
    "keyed stream, and PyFlink's jars have KeyByKeySelector and PythonConfigUtil",
    lambda: (
        list(inspect.signature(KeyedStream.__init__).parameters)
        == ["self", "j_keyed_stream", "original_data_type_info", "origin_stream"]
        and _has_java_classes("KeyByKeySelector", "PythonConfigUtil")()
    ),
)
EXTERNAL_TYPE_INFO = _assumption(
    "ExternalTypeInfo keeps the type it wraps in _type_info",
    lambda: "self._type_info = type_info" in inspect.getsource(ExternalTypeInfo.__init__),
)
JAVA_RUNTIME_CONTEXT = _assumption(
    "thread mode's StreamingRuntimeContext keeps the Java RuntimeContext in "
    "_runtime_context, and PyFlink's jars have TaskInfo (Flink 2's getTaskInfo())",
    lambda: (
        source_has(_EMBEDDED_CONTEXT, "self._runtime_context = runtime_context")
        and _has_java_classes("TaskInfo")()
    ),
)
KEYED_STATE_BACKEND = _assumption(
    "the keyed state backend of a RuntimeContext is get_keyed_state_backend()."
    "_keyed_state_backend in thread mode and _keyed_state_backend in process mode",
    lambda: (
        source_has(_EMBEDDED_CONTEXT, "def get_keyed_state_backend(self)")
        and source_has(
            "pyflink.fn_execution.embedded.state_impl",
            "self._keyed_state_backend = keyed_state_backend",
        )
        and source_has(_PROCESS_CONTEXT, "self._keyed_state_backend = keyed_state_backend")
    ),
)
TIMER_COLLECTOR = _assumption(
    "thread mode's timer context keeps the Java one in _j_timer_context, and PyFlink's jars "
    "have EmbeddedPythonKeyedProcessOperator$OnTimerContextImpl (its operator in this$0) and "
    "AbstractEmbeddedDataStreamPythonFunctionOperator (the operator's `collector` field)",
    lambda: (
        source_has(_EMBEDDED_FUNCTIONS, "self._j_timer_context = j_timer_context")
        and _has_java_classes(
            "EmbeddedPythonKeyedProcessOperator$OnTimerContextImpl",
            "AbstractEmbeddedDataStreamPythonFunctionOperator",
        )()
    ),
)
CHAINING = _assumption(
    "DataStream._apply_chaining_optimization(self) fuses the Python operators of "
    "execute_and_collect",
    lambda: list(inspect.signature(DataStream._apply_chaining_optimization).parameters) == ["self"],
)
SOURCE_CLASSES = _assumption(
    "PyFlink's jars have LegacySourceTransformation, InputFormatSourceFunction and "
    "CollectionInputFormat (from_collection's source, found by simple name)",
    _has_java_classes(
        "LegacySourceTransformation", "InputFormatSourceFunction", "CollectionInputFormat"
    ),
)
ASSUMPTIONS = (
    GATEWAY,
    JAVA_STREAM,
    JAVA_ENV,
    JAVA_UTILS,
    KEYED_STREAM,
    EXTERNAL_TYPE_INFO,
    JAVA_RUNTIME_CONTEXT,
    KEYED_STATE_BACKEND,
    TIMER_COLLECTOR,
    CHAINING,
    SOURCE_CLASSES,
)


def _attribute(obj: Any, name: str, assumption: Assumption) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError:
        assumption.broken()


def gateway_running() -> bool:
    """Whether this process's PyFlink gateway JVM started."""
    return _attribute(java_gateway, "_gateway", GATEWAY) is not None


def java_stream(ds: DataStream) -> Any:
    """The Java `DataStream` behind `ds`."""
    return _attribute(ds, "_j_data_stream", JAVA_STREAM)


def java_env(env: StreamExecutionEnvironment) -> Any:
    """The Java `StreamExecutionEnvironment` behind `env`."""
    return _attribute(env, "_j_stream_execution_environment", JAVA_ENV)


def java_configuration(j_env: Any) -> Any:
    """The (Java) configuration of a Java stream environment, which a job's options go to."""
    return _attribute(_java_utils(), "get_j_env_configuration", JAVA_UTILS)(j_env)


def local_deployment(j_configuration: Any) -> bool:
    """Whether a job with this configuration runs on the gateway JVM's mini-cluster."""
    return bool(_attribute(_java_utils(), "is_local_deployment", JAVA_UTILS)(j_configuration))


def key_by_map_name() -> str:
    """The name PyFlink gives the map before a `key_by` (its operators look for it)."""
    jvm: Any = get_gateway().jvm
    return str(jvm.org.apache.flink.python.util.PythonConfigUtil.STREAM_KEY_BY_MAP_OPERATOR_NAME)


def key_by_selector() -> Any:
    """A Java `KeyByKeySelector`: keys a stream of `Row(key, value)` by its first field."""
    jvm: Any = get_gateway().jvm
    return jvm.KeyByKeySelector()


def keyed_stream(j_keyed: Any, value_type: TypeInformation, origin: DataStream) -> KeyedStream:
    """A Python `KeyedStream` over the Java keyed stream `j_keyed` of `origin`."""
    try:
        return KeyedStream(j_keyed, value_type, origin)
    except TypeError:
        KEYED_STREAM.broken()


def wrapped_type_info(type_info: ExternalTypeInfo) -> TypeInformation:
    """The type an `ExternalTypeInfo` wraps."""
    return _attribute(type_info, "_type_info", EXTERNAL_TYPE_INFO)


def java_runtime_context(runtime_context: Any) -> Any | None:
    """The Java RuntimeContext behind a thread-mode RuntimeContext; None in process mode."""
    if type(runtime_context).__module__ != _EMBEDDED_CONTEXT:
        return getattr(runtime_context, "_runtime_context", None)  # process mode: none
    return _attribute(runtime_context, "_runtime_context", JAVA_RUNTIME_CONTEXT)


def keyed_state_backend(runtime_context: Any) -> tuple[Any, bool]:
    """The keyed state backend behind `runtime_context`, and whether it is Flink's Java one
    (thread mode: keys are Java `Row`s) rather than PyFlink's (process mode)."""
    get_backend = getattr(runtime_context, "get_keyed_state_backend", None)
    if get_backend is not None:  # thread mode
        return _attribute(get_backend(), "_keyed_state_backend", KEYED_STATE_BACKEND), True
    return _attribute(runtime_context, "_keyed_state_backend", KEYED_STATE_BACKEND), False


def _java_field(j_object: Any, name: str) -> Any:
    """The value of field `name` of a Java object, declared on its class or a superclass."""
    j_class = j_object.getClass()
    while j_class is not None:
        for field in j_class.getDeclaredFields():
            if field.getName() == name:
                field.setAccessible(True)
                return field.get(j_object)
        j_class = j_class.getSuperclass()
    TIMER_COLLECTOR.broken()


def timer_collector(timer_context: Any) -> Any | None:
    """The Java `TimestampedCollector` the outputs of a timer callback go through, from the
    callback's context; None in process mode (no Java operator in this process)."""
    j_context = getattr(timer_context, "_j_timer_context", None)
    if j_context is None:
        if type(timer_context).__module__ == _EMBEDDED_FUNCTIONS:
            TIMER_COLLECTOR.broken()  # thread mode's, without its Java context
        return None
    return _java_field(_java_field(j_context, "this$0"), "collector")


_FIXED = "_flink_agents_collect_fix"


def install_collect_fix() -> None:
    """Make `DataStream.execute_and_collect` fuse Python operators without leaving the
    fused ones in the job (see the module doc). Idempotent."""
    current: Callable[[Any], None] = _attribute(
        DataStream, "_apply_chaining_optimization", CHAINING
    )
    if getattr(current, _FIXED, False):
        return

    def _apply_chaining_optimization(self: Any) -> None:
        j_stream = java_stream(self)
        j_env = j_stream.getExecutionEnvironment()
        j_transformation = j_stream.getTransformation()
        if not j_env.getTransformations().contains(j_transformation):
            j_env.addOperator(j_transformation)
        current(self)

    setattr(_apply_chaining_optimization, _FIXED, True)
    DataStream._apply_chaining_optimization = _apply_chaining_optimization
