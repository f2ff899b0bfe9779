"""`FlinkAgentsExecutionEnvironment`: agents as keyed operators in a PyFlink job.

```
from flink_agents.runtime.flink import (
    FlinkAgentsExecutionEnvironment, create_stream_execution_environment)

env = create_stream_execution_environment()      # finds Java, configures Python workers
agents_env = FlinkAgentsExecutionEnvironment(env)
out = agents_env.from_datastream(ds, key_selector=lambda r: r["user"]).apply(MyAgent())
out.to_datastream().print()
agents_env.execute()
```

The environment sets the options a job needs to run Python workers from this interpreter
(`python.executable`, `python.client.executable`) and runs the agent operator in thread mode
(Python inside the JVM) unless told otherwise or unless thread mode cannot work in this
process (then process mode, with a warning).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import cloudpickle  # pyright: ignore[reportMissingTypeStubs]
from pydantic import BaseModel
from pyflink.common import Row, Types  # pyright: ignore[reportMissingImports]
from pyflink.common.typeinfo import (  # pyright: ignore[reportMissingImports]
    ExternalTypeInfo,
    RowTypeInfo,
    TypeInformation,
)
from pyflink.datastream import (  # pyright: ignore[reportMissingImports]
    DataStream,
    KeyedStream,
    StreamExecutionEnvironment,
)
from pyflink.datastream.functions import (  # pyright: ignore[reportMissingImports]
    KeySelector,
    ProcessFunction,
)
from pyflink.java_gateway import get_gateway  # pyright: ignore[reportMissingImports]
from pyflink.table import Schema, StreamTableEnvironment, Table  # pyright: ignore[reportMissingImports]

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import (
    AgentConfigOptions,
    AgentConfiguration,
    AgentExecutionOptions,
    ConfigOption,
)
from flink_agents.api.execution_environment import AgentBuilder, AgentsExecutionEnvironment
from flink_agents.runtime.errors import (
    IncompleteFlinkConfigError,
    InputRefusedError,
    ProcessModeCheckpointingError,
    ThreadModeUnavailableError,
)
from flink_agents.runtime.flink.compat.beam import quiet_unused_filesystem_warning
from flink_agents.runtime.flink.compat.pyflink import (
    gateway_running,
    install_collect_fix,
    java_configuration,
    java_env,
    java_stream,
    key_by_map_name,
    key_by_selector,
    keyed_stream,
    local_deployment,
    wrapped_type_info,
)
from flink_agents.runtime.flink.config_file import (
    agent_options_from_conf_dir,
    complete_flink_conf_dir,
    missing_module_opens,
    packaged_conf_dir,
)
from flink_agents.runtime.flink.durability import rest_address_of
from flink_agents.runtime.flink.java import JavaRuntime, ensure_java
from flink_agents.runtime.flink.job_failure import install_job_failure_hook
from flink_agents.runtime.flink.operator import (
    APPROVAL_OUTPUT,
    ERROR_OUTPUT,
    AgentOperatorOptions,
    EngineFactory,
    KeyedAgentOperator,
)
from flink_agents.runtime.flink.python_workers import (
    ExecutionMode,
    embedded_interpreter_matches,
    prepare_worker_environment,
    python_worker_options,
)
from flink_agents.runtime.flink.replayed_sources import warn_if_replayed
from flink_agents.runtime.flink.session_cluster import check_session_cluster
from flink_agents.runtime.input_failure import accept_key, printable, refusal
from flink_agents.runtime.keys import agent_key, refused_key_text
from flink_agents.runtime.scheduler import runs_within

__all__ = [
    "AgentStream",
    "FlinkAgentsExecutionEnvironment",
    "create_stream_execution_environment",
    "keyed_agent_stream",
    "keyed_input",
    "prepare_flink_environment",
]

_LOG = logging.getLogger(__name__)

_EXECUTION_MODE_KEY = "python.execution-mode"


_PROCESS_MODE_CHECKPOINTING = (
    "the agent operator cannot run in process mode in a checkpointed job: after a restore, "
    "PyFlink 2.3's process mode loses the timers a Python operator registered in its first "
    "callback, so runs in flight at a failure could end without their outputs. Use thread "
    "mode (the default) for checkpointed jobs, or turn checkpointing off."
)

_THREAD_MODE_UNAVAILABLE = (
    "thread mode (the default) cannot run in this process: PyFlink's JVM was started before "
    "the project prepared its environment (the JVM's PATH must start with {bin}), so Python "
    "inside the JVM would not be this environment. Import flink_agents before creating any "
    "PyFlink object (Configuration, StreamExecutionEnvironment, TableEnvironment): the import "
    "puts the environment's bin first on PATH. Or create the stream environment with "
    "create_stream_execution_environment({{...options...}}) (Flink options as a dict), or call "
    "prepare_flink_environment() before creating any PyFlink object. To run Python in "
    "separate worker processes instead, set python.execution-mode to process (slower; see "
    "docs/deployment.md)."
)


_JVM_WITHOUT_OPENS = (
    "PyFlink's JVM runs without Flink's JVM options (env.java.opts.all: --add-opens ...), "
    "so every job would fail with InaccessibleObjectException. The JVM reads them from "
    "$FLINK_CONF_DIR/config.yaml when it starts (FLINK_CONF_DIR={conf_dir}), and a "
    "config.yaml with only an agent: section replaces Flink's own. Create the stream "
    "environment with create_stream_execution_environment() before any other PyFlink object "
    "(it completes such a folder with Flink's defaults), or copy {packaged}/config.yaml into "
    "that folder and add your settings to it."
)


def _gateway_started() -> bool:
    """Whether this process already has a PyFlink JVM (its own, or `flink run`'s)."""
    if os.environ.get("PYFLINK_GATEWAY_PORT"):  # launched by the `flink` command line
        return True
    return gateway_running()


def prepare_flink_environment() -> JavaRuntime:
    """Export a Java runtime and this interpreter's environment for PyFlink's JVM.

    Call before the first StreamExecutionEnvironment (or TableEnvironment) is created: the
    JVM, and the local mini-cluster in it, inherit the environment variables set here.
    """
    if _gateway_started():
        _LOG.warning(
            "the PyFlink gateway is already running: JAVA_HOME/PATH/PYTHONPATH changes "
            "made now do not reach it"
        )
    runtime = ensure_java()
    prepare_worker_environment()
    quiet_unused_filesystem_warning()  # Beam, imported with the first environment, logs it
    if not _gateway_started():
        complete_flink_conf_dir()  # a config.yaml with only `agent:` gets Flink's defaults
    return runtime


def create_stream_execution_environment(
    configuration: Any | Mapping[str, Any] | None = None,
) -> StreamExecutionEnvironment:
    """`prepare_flink_environment`, then `StreamExecutionEnvironment.get_execution_environment`.

    `configuration` is a PyFlink `Configuration` or a mapping of Flink options (values as
    strings or numbers). Prefer the mapping: creating a `Configuration` starts PyFlink's JVM,
    so one created before this call misses the environment thread mode needs.
    """
    if not _gateway_started():
        prepare_flink_environment()
    if configuration is None:
        return StreamExecutionEnvironment.get_execution_environment()
    if isinstance(configuration, Mapping):
        from pyflink.common import Configuration  # pyright: ignore[reportMissingImports]

        options = cast(Mapping[str, Any], configuration)
        configuration = Configuration()
        for key, value in options.items():
            configuration.set_string(key, str(value))
    return StreamExecutionEnvironment.get_execution_environment(configuration)


def _thread_mode_works(j_configuration: Any) -> bool:
    """Whether Python embedded in the JVM that will run the job is this environment.

    Only known for local runs (the mini-cluster lives in the gateway JVM); a job submitted
    to a cluster trusts the cluster's setup.
    """
    if os.environ.get("PYFLINK_GATEWAY_PORT") or not local_deployment(j_configuration):
        return True
    gateway: Any = get_gateway()
    jvm_path = gateway.jvm.System.getenv("PATH") or ""
    return embedded_interpreter_matches({"PATH": str(jvm_path)})


def _check_jvm_options(j_configuration: Any) -> None:
    """Refuse a local job whose JVM lacks Flink's module opens: it would fail in its first
    serializer with `InaccessibleObjectException` (a `config.yaml` without Flink's settings,
    read when the JVM started)."""
    if os.environ.get("PYFLINK_GATEWAY_PORT") or not local_deployment(j_configuration):
        return
    jvm: Any = get_gateway().jvm
    version = str(jvm.System.getProperty("java.specification.version"))
    major = int(version.split(".")[-1]) if version.replace(".", "").isdigit() else 0
    arguments = [
        str(a)
        for a in jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    ]
    if missing_module_opens(arguments, major):
        conf_dir = os.environ.get("FLINK_CONF_DIR", "<site-packages>/pyflink/conf")
        raise IncompleteFlinkConfigError(
            _JVM_WITHOUT_OPENS.format(conf_dir=conf_dir, packaged=packaged_conf_dir())
        )


def _configured_mode(j_conf: Any) -> ExecutionMode | None:
    value = j_conf.getString(_EXECUTION_MODE_KEY, None)
    if value == "thread":
        return "thread"
    if value == "process":
        return "process"
    return None


_NO_KEY = "<no key: the key selector raised>"
"""How a failure record names the key of an input whose key selector raised."""


def keyed_input(selector: Callable[[Any], Any], value: Any) -> tuple[str, bytes]:
    """What the stream carries into Java for `value`: its key's text (`encode_key`: keys of
    different types, `1` and `"1"`, never share keyed state) and the value pickled.

    Nothing here raises for a bad input, which would stop the job before any policy applies:
    a key without text (or a selector that raised) becomes a refused key text
    (`keys.refused_key_text`), a value that cannot be pickled (nesting past the recursion
    limit) its `printable` stand-in under a refused key text; the agent operator turns
    either into a failure record or an error, by `input-failure.policy`, as the local
    runner does."""
    refused: InputRefusedError | None = None
    text: str | None = None
    try:
        key = agent_key(selector(value))  # a UUID (upstream's key type) is its text
    except Exception as exc:
        refused = refusal(_NO_KEY, exc)
    else:
        try:
            text = accept_key(key)
        except InputRefusedError as exc:
            refused = exc
    try:
        data = cloudpickle.dumps(value)  # what PyFlink's pickled type does
    except Exception as exc:
        if text is not None:
            refused = refusal(text, exc)
        data = cloudpickle.dumps(printable(value, "input"))
    if refused is not None:
        return refused_key_text(text, refused.key, refused.cause_type, refused.cause_message), data
    assert text is not None
    return text, data


class _KeyedInput(ProcessFunction):
    """`keyed_input` as the function before the key-by (PyFlink's `key_by` map)."""

    def __init__(self, selector: Callable[[Any], Any]) -> None:
        self._selector = selector

    def process_element(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, value: Any, ctx: Any
    ) -> Iterator[Row]:
        yield Row(*keyed_input(self._selector, value))


_KEYED_INPUT_TYPE = Types.PRIMITIVE_ARRAY(Types.BYTE())


def _key_by_text(ds: DataStream, selector: Callable[[Any], Any]) -> KeyedStream:
    """`ds` keyed by its keys' texts, each value pickled (`keyed_input`): PyFlink's
    `DataStream.key_by`, with `_KeyedInput` as its map."""
    with_keys = ds.process(
        _KeyedInput(selector), output_type=Types.ROW([Types.STRING(), _KEYED_INPUT_TYPE])
    )
    with_keys.name(key_by_map_name())
    j_keyed = java_stream(with_keys).keyBy(
        key_by_selector(), Types.ROW([Types.STRING()]).get_java_type_info()
    )
    return keyed_stream(j_keyed, _KEYED_INPUT_TYPE, ds)


def _identity(value: Any) -> Any:
    return value


def _row_to_dict(row: Row) -> dict[str, Any]:
    return row.as_dict(recursive=True)


def _row_type_of(type_info: TypeInformation | None) -> RowTypeInfo | None:
    """The `RowTypeInfo` of an output type: itself, or the one an `ExternalTypeInfo` wraps
    (upstream's documented `ExternalTypeInfo(RowTypeInfo(...))`); None for other types."""
    if isinstance(type_info, ExternalTypeInfo):
        type_info = wrapped_type_info(type_info)
    return type_info if isinstance(type_info, RowTypeInfo) else None


class _ToRow:
    """Turns an agent output into a Row of `field_names` (dict, model, Row or sequence)."""

    def __init__(self, field_names: list[str]) -> None:
        self._names = field_names

    def __call__(self, value: Any) -> Row:
        names = self._names
        if isinstance(value, Row):
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if isinstance(value, dict):
            missing = [n for n in names if n not in value]
            if missing:
                raise ValueError(f"agent output lacks fields {missing} of the table schema")
            row = Row(*[value[n] for n in names])
        elif isinstance(value, (list, tuple)) and len(value) == len(names):
            row = Row(*value)
        elif len(names) == 1:
            row = Row(value)
        else:
            raise ValueError(
                f"cannot turn an agent output of type {type(value).__name__} into a row of {names}"
            )
        row.set_field_names(names)
        return row


def operator_options_from(
    config: AgentConfiguration, given: AgentOperatorOptions | None = None
) -> AgentOperatorOptions:
    """The agent operator's options: the fields set in `given`, the others from `config`:
    `max-in-flight-runs-bytes`, `max-in-flight-runs`, `max-buffered-inputs` (unset: twice
    the runs the in-flight bounds let go on, at least 10,000), `gc.tuning`, `gc.freeze`; the
    rest their defaults."""
    given_fields = given.model_fields_set if given is not None else set()

    def chosen(field: str, option: ConfigOption[Any]) -> Any:
        if given is not None and field in given_fields:
            return getattr(given, field)
        return config.get(option)

    max_in_flight = chosen("max_in_flight", AgentExecutionOptions.MAX_IN_FLIGHT_RUNS)
    max_bytes = chosen("max_in_flight_bytes", AgentExecutionOptions.MAX_IN_FLIGHT_RUNS_BYTES)
    max_buffered = config.get(AgentExecutionOptions.MAX_BUFFERED_INPUTS)
    from_config = {
        "max_in_flight": max_in_flight,
        "max_in_flight_bytes": max_bytes,
        "max_buffered": max_buffered
        or max(_MIN_BUFFERED, 2 * runs_within(max_bytes, max_in_flight)),
        "gc_tuning": bool(config.get(AgentExecutionOptions.GC_TUNING)),
        "gc_freeze": bool(config.get(AgentExecutionOptions.GC_FREEZE)),
    }
    if given is None:
        return AgentOperatorOptions(**from_config)
    return given.model_copy(
        update={name: value for name, value in from_config.items() if name not in given_fields}
    )


_MIN_BUFFERED = 10_000
"""Inputs a subtask accepts unfinished by default (at least)."""


def keyed_agent_stream(
    ds: DataStream,
    key_selector: Callable[[Any], Any],
    engine_factory: EngineFactory,
    *,
    options: AgentOperatorOptions | None = None,
    execution_mode: ExecutionMode = "thread",
    name: str = "agent",
    uid: str | None = None,
    output_type: TypeInformation | None = None,
) -> DataStream:
    """`ds` keyed by `key_selector` through the keyed agent operator; outputs downstream."""
    j_env = java_stream(ds).getExecutionEnvironment()
    if execution_mode == "process" and j_env.getCheckpointConfig().isCheckpointingEnabled():
        raise ProcessModeCheckpointingError(_PROCESS_MODE_CHECKPOINTING)
    configure_python_workers(java_configuration(j_env), execution_mode)
    keyed = _key_by_text(ds, key_selector)
    pickled = output_type is None or output_type == Types.PICKLED_BYTE_ARRAY()
    out = keyed.process(
        KeyedAgentOperator(engine_factory, options, pickled_outputs=pickled),
        output_type=output_type or Types.PICKLED_BYTE_ARRAY(),
    )
    if uid is not None:
        # A stable id maps the agent's state onto a job whose graph changed around it. PyFlink
        # fuses the agent operator with a Python operator after it and gives the fused one
        # this uid (see `chaining`).
        install_collect_fix()
        out = out.uid(uid)
    return out.name(name)


def configure_python_workers(j_conf: Any, mode: ExecutionMode) -> None:
    """Set the worker options on a job's (Java) configuration.

    The execution mode is job-wide: PyFlink's embedded operators check it at run time.
    An interpreter the user configured is kept.
    """
    options = python_worker_options(mode)
    for key in ("python.executable", "python.client.executable"):
        if not j_conf.containsKey(key):
            j_conf.setString(key, options[key])
    j_conf.setString(_EXECUTION_MODE_KEY, mode)


class AgentStream(AgentBuilder):
    """An input stream waiting for its agent (`apply`), then its outputs."""

    def __init__(
        self,
        environment: FlinkAgentsExecutionEnvironment,
        ds: DataStream,
        key_selector: Callable[[Any], Any],
    ) -> None:
        self._environment = environment
        self._input = ds
        self._key_selector = key_selector
        self._output: DataStream | None = None

    def apply(self, agent: Any, *, name: str | None = None, uid: str | None = None) -> AgentStream:
        """Run `agent` on this stream (an Agent, the name of one `load_yaml` registered;
        or an `EngineFactory`, for tests).

        `name` names the operator (default: the agent's name, else its class name). `uid`
        is the operator's id in savepoints (default `agent-<name>`, `-2`, `-3`... for
        further agents of that name in the job): keep it when the job changes, so a
        restore maps the agent's state onto it."""
        if self._output is not None:
            raise RuntimeError("an agent was already applied to this stream")
        environment = self._environment
        if environment.execution_mode == "thread":
            environment.check_session_cluster()
        if isinstance(agent, str):
            name = name or agent
            agent = environment.resolve_agent(agent)
        name = name or type(agent).__name__
        # In a checkpointed job, a source read again after a restore repeats outputs.
        warn_if_replayed(java_stream(self._input), name)
        self._output = keyed_agent_stream(
            self._input,
            self._key_selector,
            environment.engine_factory_for(agent, name=name),
            options=environment.operator_options_for_job(),
            execution_mode=environment.execution_mode,
            name=name,
            uid=environment.claim_uid(uid or f"agent-{name}", given=uid is not None),
        )
        return self

    def to_datastream(self, output_type: TypeInformation | None = None) -> DataStream:
        """The agent's outputs (the values of its OutputEvents): Python objects, or of
        `output_type` when given (upstream's signature; a `RowTypeInfo` turns each output
        into a row as `to_table` does)."""
        if self._output is None:
            raise RuntimeError("apply(agent) first")
        if output_type is None:
            return self._output
        row_type = _row_type_of(output_type)
        if row_type is not None:
            names = list(row_type.get_field_names())
            return self._output.map(_ToRow(names), output_type=output_type)
        return self._output.map(_identity, output_type=output_type)

    def to_error_datastream(self) -> DataStream:
        """Failure records of the inputs skipped under `input-failure.policy: skip` (dicts:
        key, input, action, event_type, error_type, message, attempts, failed_at), exactly
        once like outputs. Each is also logged at WARNING."""
        return self.to_datastream().get_side_output(ERROR_OUTPUT)

    def to_approval_request_datastream(self) -> DataStream:
        """`ApprovalRequest`s of tool calls waiting for a person (docs/approvals.md), exactly
        once like outputs: answer each with a `ToolApproval` input of the same key."""
        return self.to_datastream().get_side_output(APPROVAL_OUTPUT)

    def to_table(
        self, schema: RowTypeInfo | Schema, output_type: TypeInformation | None = None
    ) -> Table:
        """The agent's outputs as a Table: `to_table(row_type)` with a
        `Types.ROW_NAMED(...)`, or upstream's `to_table(schema, output_type)` with a table
        `Schema` and the `RowTypeInfo` of the rows (as is, or wrapped in an
        `ExternalTypeInfo`, the form upstream's docs show).

        Each output becomes a row: a dict or pydantic model by field name, a tuple/list by
        position, a single value when the row has one field.
        """
        t_env = self._environment.table_environment
        if isinstance(schema, RowTypeInfo):
            if output_type is not None:
                raise TypeError("to_table(row_type) takes no output_type")
            return t_env.from_data_stream(self.to_datastream(schema))
        if _row_type_of(output_type) is None:
            raise TypeError(
                "to_table(schema, output_type) needs the rows' RowTypeInfo (or an "
                f"ExternalTypeInfo of one), got {output_type!r}"
            )
        return t_env.from_data_stream(self.to_datastream(output_type), schema)


class FlinkAgentsExecutionEnvironment(AgentsExecutionEnvironment):
    """Builds agent jobs on a PyFlink StreamExecutionEnvironment.

    Args:
        env: the stream environment (create it with `create_stream_execution_environment`
            where Java or the worker environment must be set up first).
        t_env: a table environment for `from_table` / `to_table` (created on demand).
        execution_mode: `thread` (Python inside the JVM) or `process`; default: the
            environment's `python.execution-mode` if set, else `thread`.
        operator_options: tuning of the agent operator; the fields not given come from
            the agent options (`max-in-flight-runs-bytes`, `max-in-flight-runs`,
            `max-buffered-inputs`, `gc.tuning`, `gc.freeze`).
    """

    def __init__(
        self,
        env: StreamExecutionEnvironment,
        t_env: StreamTableEnvironment | None = None,
        *,
        execution_mode: ExecutionMode | None = None,
        operator_options: AgentOperatorOptions | None = None,
    ) -> None:
        self._register(env, t_env, operator_options)
        self.execution_mode: ExecutionMode = self._set_up_jvm(execution_mode)

    def _register(
        self,
        env: StreamExecutionEnvironment,
        t_env: StreamTableEnvironment | None,
        operator_options: AgentOperatorOptions | None,
    ) -> None:
        """What registering agents and resources needs (no JVM): the environments, the
        agent options (those of Flink's configuration file first)."""
        super().__init__()
        self._env = env
        self._t_env = t_env
        self._operator_options = operator_options
        self._uids: set[str] = set()
        self._session_checked = False
        # Options in Flink's configuration file first; settings in code override them.
        config = self.get_config()
        for key, value in agent_options_from_conf_dir().items():
            try:
                config.set_str(key, value)
            except ValueError as exc:
                raise ValueError(f"agent option {key!r} in $FLINK_CONF_DIR: {exc}") from exc

    def _set_up_jvm(self, execution_mode: ExecutionMode | None) -> ExecutionMode:
        """Check the JVM's configuration, set up its Python workers; the execution mode."""
        j_conf = java_configuration(java_env(self._env))
        mode: ExecutionMode = execution_mode or _configured_mode(j_conf) or "thread"
        if mode == "thread" and not _thread_mode_works(j_conf):
            raise ThreadModeUnavailableError(
                _THREAD_MODE_UNAVAILABLE.format(bin=os.path.dirname(sys.executable))
            )
        _check_jvm_options(j_conf)
        install_job_failure_hook()  # a failed job's first line names its Python cause
        configure_python_workers(j_conf, mode)
        return mode

    def check_session_cluster(self) -> None:
        """Refuse a session cluster whose TaskManagers would load pemja per job (once per
        environment; see `session_cluster`)."""
        if self._session_checked:
            return
        self._session_checked = True
        if not self.get_config().get(AgentConfigOptions.SESSION_CLUSTER_CHECK_PYTHON_JAR):
            return
        j_conf = java_configuration(java_env(self._env))
        options = {str(k): str(v) for k, v in dict(j_conf.toMap()).items()}
        check_session_cluster(options, rest_address_of(options))

    def claim_uid(self, uid: str, *, given: bool) -> str:
        """`uid` for an agent operator of this job: a default one gets a number when taken;
        a given one must be unique."""
        claimed = self._uids
        if uid in claimed:
            if given:
                raise ValueError(f"operator uid {uid!r} is already used by another agent")
            n = 2
            while f"{uid}-{n}" in claimed:
                n += 1
            uid = f"{uid}-{n}"
        claimed.add(uid)
        return uid

    @property
    def stream_environment(self) -> StreamExecutionEnvironment:
        """The PyFlink environment jobs are built on."""
        return self._env

    @property
    def table_environment(self) -> StreamTableEnvironment:
        """The table environment (created on first use)."""
        if self._t_env is None:
            self._t_env = StreamTableEnvironment.create(self._env)
        return self._t_env

    def operator_options_for_job(self) -> AgentOperatorOptions:
        """The operator options: the fields given in `operator_options`, the others from the
        agent options (`operator_options_from`)."""
        return operator_options_from(self.get_config(), self._operator_options)

    def engine_factory_for(self, agent: Any, *, name: str | None = None) -> EngineFactory:
        """What builds the run engine for `agent` in each subtask (`name`: the operator's)."""
        from flink_agents.runtime.flink.engine_factory import AgentEngineFactory

        if isinstance(agent, Agent):
            return AgentEngineFactory(
                agent,
                self.get_config().copy(),
                shared_resources=self.resources,
                operator_name=name,
            )
        if callable(agent):
            return cast(EngineFactory, agent)
        raise TypeError(f"apply() takes an Agent, got {type(agent).__name__}")

    def from_datastream(self, input: DataStream, key_selector: Any = None) -> AgentStream:
        """Agent input from a DataStream; `key_selector(record)` (a function or a
        `KeySelector`) is the record's key. A `KeyedStream` needs it too: PyFlink does not
        give its key selector back."""
        if key_selector is None:
            if isinstance(input, KeyedStream):
                raise ValueError(
                    "from_datastream(keyed_stream) needs the key_selector the stream was keyed "
                    "by: PyFlink does not give it back (pass key_selector=...)"
                )
            raise ValueError("from_datastream needs a key_selector")
        return AgentStream(self, input, _selector(key_selector))

    def from_table(self, input: Table, key_selector: Any = None) -> AgentStream:
        """Agent input from a Table: each row becomes a dict of its fields (the agent's
        input); `key_selector` receives the row (`_table_key`)."""
        if key_selector is None:
            raise ValueError("from_table needs a key_selector")
        rows = self.table_environment.to_data_stream(input)
        dicts = rows.map(_row_to_dict, output_type=Types.PICKLED_BYTE_ARRAY())
        return AgentStream(self, dicts, _table_key(_selector(key_selector)))

    def execute(self, job_name: str | None = None) -> Any:
        """Run the job (blocks until a bounded job ends)."""
        if job_name is None:
            return self._env.execute()
        return self._env.execute(job_name)


def _table_key(selector: Callable[[Any], Any]) -> Callable[[dict[str, Any]], Any]:
    """The key of a table row the agent gets as a dict: ``selector`` of the row as a
    `Row` of those fields, read by position (``row[0]``, upstream's tests), by name
    (``row["id"]``) or as an attribute (``row.id``)."""

    def key(fields: dict[str, Any]) -> Any:
        return selector(Row(**fields))

    return key


def _selector(key_selector: Any) -> Callable[[Any], Any]:
    """A callable from a function or a PyFlink KeySelector."""
    if isinstance(key_selector, KeySelector):
        return key_selector.get_key
    if callable(key_selector):
        return key_selector
    raise TypeError(f"key_selector must be callable or a KeySelector, got {key_selector!r}")
