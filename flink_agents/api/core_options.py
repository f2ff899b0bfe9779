"""Options that tune how agents run, and the configuration that holds them.

Option keys follow the upstream project where it has the option (``max-retries``,
``error-handling-strategy``, ``event-log.level``, ``baseLogDir``, ``retry-wait-interval``
in seconds...). The project's own options that hold a duration name its unit at the end
of the key: ``-s`` for seconds (``tool-call.timeout-s``, ``durable-execution.stop-grace-s``).
Values may be given typed or as strings (as they come from a Flink ``config.yaml``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import Enum
from typing import Any, Generic, TypeVar, cast, overload

from flink_agents.api.errors import UnknownOptionError, closest_names

__all__ = [
    "AgentConfigOptions",
    "AgentConfiguration",
    "AgentExecutionOptions",
    "ConfigOption",
    "ErrorHandlingStrategy",
    "EventLogLevel",
    "InputFailurePolicy",
    "MemoryEventOptions",
    "ShortTermMemoryTtlUpdate",
    "ShortTermMemoryTtlVisibility",
    "check_user_key",
]

T = TypeVar("T")


class ErrorHandlingStrategy(str, Enum):
    """What the built-in chat action does when a model call fails."""

    FAIL = "fail"
    """Raise: the run (and on Flink, the job) fails."""
    RETRY = "retry"
    """Retry retryable errors with backoff; then answer with an error response."""
    IGNORE = "ignore"
    """Do not retry; answer with an error response at once."""


class EventLogLevel(str, Enum):
    """How much the event log writes."""

    OFF = "off"
    """Nothing."""
    STANDARD = "standard"
    """Every event, long strings truncated, media redacted."""
    VERBOSE = "verbose"
    """Every event in full (media still redacted), plus one record per action."""


class ConfigOption(Generic[T]):
    """A typed option: its key, its type and its default (``positive``: a number that
    must be greater than 0)."""

    def __init__(
        self,
        key: str,
        config_type: type,
        default: T,
        description: str = "",
        *,
        positive: bool = False,
    ) -> None:
        self.key = key
        self.config_type = config_type
        self.default = default
        self.description = description
        self.positive = positive

    def convert(self, value: Any) -> T:
        """``value`` as this option's type (strings are parsed)."""
        if value is None:
            return cast(T, None)
        kind = self.config_type
        if isinstance(kind, type) and issubclass(kind, Enum):
            if isinstance(value, kind):
                return cast(T, value)
            text = str(value).strip()
            for member in kind:
                if text.lower() in (str(member.value).lower(), member.name.lower()):
                    return cast(T, member)
            raise ValueError(
                f"option {self.key!r}: {value!r} is not one of {[m.value for m in kind]}"
            )
        if kind is bool:
            if isinstance(value, bool):
                return cast(T, value)
            text = str(value).strip().lower()
            if text in ("true", "1", "yes", "on"):
                return cast(T, True)
            if text in ("false", "0", "no", "off"):
                return cast(T, False)
            raise ValueError(f"option {self.key!r}: {value!r} is not a boolean")
        if kind in (int, float, str):
            try:
                converted = kind(value)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"option {self.key!r}: {value!r} is not a {kind.__name__}"
                ) from exc
            if self.positive and not (isinstance(converted, (int, float)) and converted > 0):
                raise ValueError(f"option {self.key!r}: {value!r} is not greater than 0")
            return cast(T, converted)
        return cast(T, value)

    def __repr__(self) -> str:
        return f"ConfigOption({self.key!r}, default={self.default!r})"


class InputFailurePolicy(str, Enum):
    """What happens to an input whose run fails (`input-failure.policy`)."""

    FAIL = "fail"
    """The task fails with the error; Flink restores the last checkpoint and tries again."""
    SKIP = "skip"
    """The run is abandoned: a failure record goes to the error stream, the key goes on."""


class ShortTermMemoryTtlUpdate(str, Enum):
    """What refreshes a short-term memory path's TTL (upstream's values)."""

    ON_CREATE_AND_WRITE = "ON_CREATE_AND_WRITE"
    """Writes only."""
    ON_READ_AND_WRITE = "ON_READ_AND_WRITE"
    """Writes and reads."""


class ShortTermMemoryTtlVisibility(str, Enum):
    """Whether an expired short-term memory path can still be read (upstream's values)."""

    NEVER_RETURN_EXPIRED = "NEVER_RETURN_EXPIRED"
    """Never: it reads as absent as soon as it expires."""
    RETURN_EXPIRED_IF_NOT_CLEANED_UP = "RETURN_EXPIRED_IF_NOT_CLEANED_UP"
    """Until it is cleaned up, which here is when the key's next run starts."""


class AgentExecutionOptions:
    """How actions, model calls and tool calls run."""

    ERROR_HANDLING_STRATEGY: ConfigOption[ErrorHandlingStrategy] = ConfigOption(
        "error-handling-strategy",
        ErrorHandlingStrategy,
        ErrorHandlingStrategy.RETRY,
        "fail | retry | ignore, for failed chat model calls.",
    )
    MAX_RETRIES: ConfigOption[int] = ConfigOption(
        "max-retries", int, 3, "Retries of a retryable model call after the first attempt."
    )
    RETRY_WAIT_INTERVAL: ConfigOption[float] = ConfigOption(
        "retry-wait-interval",
        float,
        1.0,
        "Base backoff in seconds; attempt n waits about base * 2**n, with jitter.",
    )
    MAX_RETRY_WAIT: ConfigOption[float] = ConfigOption(
        "max-retry-wait-interval-s",
        float,
        60.0,
        "Upper bound of one retry wait in seconds; a server's longer retry-after is "
        "honoured up to this bound, never past it.",
    )
    CHAT_MAX_MODEL_CALLS: ConfigOption[int] = ConfigOption(
        "chat.max-model-calls",
        int,
        10,
        "Model calls allowed for one chat request (tool round trips included).",
    )
    TOOL_CALL_PARALLEL: ConfigOption[bool] = ConfigOption(
        "tool-call.parallel", bool, True, "Run the tool calls of one model turn concurrently."
    )
    TOOL_CALL_TIMEOUT: ConfigOption[float] = ConfigOption(
        "tool-call.timeout-s",
        float,
        300.0,
        "Seconds one tool call may run (a sync tool: from when it starts on a tool thread); "
        "a slower call gives the model an error result 'tool NAME timed out after N s' and "
        "the chat loop goes on. A sync tool's thread that does not return is written off.",
        positive=True,
    )
    MAX_IN_FLIGHT_RUNS: ConfigOption[int] = ConfigOption(
        "max-in-flight-runs",
        int,
        1000,
        "Agent runs (inputs of different keys) in progress at once.",
    )
    NUM_ASYNC_THREADS: ConfigOption[int] = ConfigOption(
        "num-async-threads",
        int,
        max(4, (os.cpu_count() or 1) * 2),
        "Threads for synchronous actions; synchronous tools get as many threads of their own.",
    )
    INPUT_FAILURE_POLICY: ConfigOption[InputFailurePolicy] = ConfigOption(
        "input-failure.policy",
        InputFailurePolicy,
        InputFailurePolicy.FAIL,
        "fail | skip: when a run fails, fail the task (Flink's restart strategy applies), or "
        "abandon the run, send a failure record to the error stream and go on with the key's "
        "next input.",
    )
    INPUT_FAILURE_RETRIES: ConfigOption[int] = ConfigOption(
        "input-failure.retries",
        int,
        0,
        "Under policy skip: how often a failed run is tried again from its start (recorded "
        "durable calls replay) before it is skipped.",
    )
    SHORT_TERM_MEMORY_STATE_TTL_MS: ConfigOption[int] = ConfigOption(
        "short-term-memory.state-ttl.ms",
        int,
        0,
        "Milliseconds a short-term memory path lives after it was last touched (0: for "
        "ever); an expired path reads as absent.",
    )
    SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE: ConfigOption[ShortTermMemoryTtlUpdate] = ConfigOption(
        "short-term-memory.state-ttl.update-type",
        ShortTermMemoryTtlUpdate,
        ShortTermMemoryTtlUpdate.ON_READ_AND_WRITE,
        "ON_CREATE_AND_WRITE | ON_READ_AND_WRITE: what refreshes a path's TTL.",
    )
    SHORT_TERM_MEMORY_STATE_TTL_VISIBILITY: ConfigOption[ShortTermMemoryTtlVisibility] = (
        ConfigOption(
            "short-term-memory.state-ttl.visibility",
            ShortTermMemoryTtlVisibility,
            ShortTermMemoryTtlVisibility.NEVER_RETURN_EXPIRED,
            "NEVER_RETURN_EXPIRED | RETURN_EXPIRED_IF_NOT_CLEANED_UP (expired paths are "
            "cleaned up when the key's next run starts).",
        )
    )
    AGENT_RUN_BEGIN_EVENT: ConfigOption[bool] = ConfigOption(
        "agent-run.begin-event",
        bool,
        False,
        "Make an AgentRunBeginEvent (the key's short-term memory values) at the start of "
        "every run, for the actions that listen to it.",
    )


class AgentConfigOptions:
    """Job-level options: identity, the event log, durable execution and tracing."""

    JOB_IDENTIFIER: ConfigOption[str | None] = ConfigOption("job-identifier", str, None)
    BASE_LOG_DIR: ConfigOption[str | None] = ConfigOption(
        "baseLogDir", str, None, "Directory of the event log (no event log when unset)."
    )
    EVENT_LOG_LEVEL: ConfigOption[EventLogLevel] = ConfigOption(
        "event-log.level", EventLogLevel, EventLogLevel.STANDARD, "off | standard | verbose."
    )
    EVENT_LOG_MAX_STRING_LENGTH: ConfigOption[int] = ConfigOption(
        "event-log.standard.max-string-length",
        int,
        2000,
        "At the standard level, longer strings are truncated to this many characters.",
    )
    DURABLE_EXECUTION_STORE: ConfigOption[str | None] = ConfigOption(
        "durable-execution.store",
        str,
        None,
        "Action-state store of durable (exactly-once) model and tool calls: "
        "sqlite:///path.db, postgresql://... or unset (no durable execution).",
    )
    DURABLE_EXECUTION_STORE_TABLE: ConfigOption[str | None] = ConfigOption(
        "durable-execution.store.table",
        str,
        None,
        "Table of the action-state store (default: the store's own default); one per "
        "pipeline unless durable-execution.store.shared is set.",
    )
    DURABLE_EXECUTION_PIPELINE_ID: ConfigOption[str | None] = ConfigOption(
        "durable-execution.pipeline-id",
        str,
        None,
        "Id of the pipeline (job) the action-state store's records belong to; another "
        "pipeline never sees them. Default: the agent class's module:qualname (plus the "
        "Flink operator's name); set it explicitly in production.",
    )
    DURABLE_EXECUTION_STORE_SHARED: ConfigOption[bool] = ConfigOption(
        "durable-execution.store.shared",
        bool,
        False,
        "Allow a store table that holds records of other pipelines (records stay scoped by "
        "pipeline id); when false such a table is refused with DurableStoreError.",
    )
    DURABLE_EXECUTION_PRUNE_REST_ADDRESS: ConfigOption[str | None] = ConfigOption(
        "durable-execution.prune.rest-address",
        str,
        None,
        "JobManager REST address (http://host:port) polled for completed checkpoints; "
        "default: rest.address and rest.port of the TaskManager's Flink configuration.",
    )
    DURABLE_EXECUTION_PRUNE_INTERVAL: ConfigOption[float] = ConfigOption(
        "durable-execution.prune.interval-s",
        float,
        5.0,
        "Seconds between two looks at the latest completed checkpoint (and prunes).",
    )
    SESSION_CLUSTER_CHECK_PYTHON_JAR: ConfigOption[bool] = ConfigOption(
        "session-cluster.check-python-jar",
        bool,
        True,
        "Refuse to submit a thread-mode agent job to a session cluster whose JobManager has no "
        "flink-python jar on its classpath (only one thread-mode job could start there).",
    )
    DURABLE_EXECUTION_STOP_GRACE: ConfigOption[float] = ConfigOption(
        "durable-execution.stop-grace-s",
        float,
        5.0,
        "Seconds in-flight model and tool calls get to finish and record their outcome when "
        "the agent operator closes (stop-with-savepoint, end of job), so a restore replays "
        "them instead of calling again; no new call starts meanwhile.",
    )
    DURABLE_EXECUTION_PRUNE_CLOCK_SKEW: ConfigOption[float] = ConfigOption(
        "durable-execution.prune.clock-skew-s",
        float,
        2.0,
        "Seconds a run must have finished before a checkpoint's trigger time to be pruned "
        "(covers clock differences between JobManager and TaskManager hosts).",
    )
    TRACING_ENABLED: ConfigOption[bool] = ConfigOption(
        "tracing.enabled",
        bool,
        False,
        "Emit OpenTelemetry spans (GenAI semantic conventions: invoke_agent per run, one span "
        "per action, chat per model call, execute_tool per tool call) through the global "
        "tracer provider; on Flink a worker with no provider sets one up from the OTEL_* "
        "environment variables (needs the 'tracing' extra).",
    )
    TRACING_RECORD_CONTENT: ConfigOption[bool] = ConfigOption(
        "tracing.record-content",
        bool,
        False,
        "Also record messages and tool arguments and results on the spans (redacted: no "
        "media data or URLs, base64 payloads or secrets).",
    )


class MemoryEventOptions:
    """Which memory events are made (upstream's keys). Each kind resolves: its own key if
    set, else ``memory.generate-event`` if set, else its default (writes on, reads off).
    The long-term keys are accepted; long-term memory is not available here."""

    MEMORY_GENERATE_EVENT: ConfigOption[bool | None] = ConfigOption(
        "memory.generate-event", bool, None, "Every memory event kind not set on its own."
    )
    SHORT_TERM_WRITE: ConfigOption[bool | None] = ConfigOption(
        "memory.generate-event.short-term-write", bool, None, "ShortTermWriteEvent (on)."
    )
    SHORT_TERM_READ: ConfigOption[bool | None] = ConfigOption(
        "memory.generate-event.short-term-read", bool, None, "ShortTermReadEvent (off)."
    )
    SENSORY_WRITE: ConfigOption[bool | None] = ConfigOption(
        "memory.generate-event.sensory-write", bool, None, "SensoryWriteEvent (on)."
    )
    SENSORY_READ: ConfigOption[bool | None] = ConfigOption(
        "memory.generate-event.sensory-read", bool, None, "SensoryReadEvent (off)."
    )
    LONG_TERM_UPDATE: ConfigOption[bool | None] = ConfigOption(
        "memory.generate-event.long-term-update", bool, None, "Not available here."
    )
    LONG_TERM_GET: ConfigOption[bool | None] = ConfigOption(
        "memory.generate-event.long-term-get", bool, None, "Not available here."
    )
    LONG_TERM_SEARCH: ConfigOption[bool | None] = ConfigOption(
        "memory.generate-event.long-term-search", bool, None, "Not available here."
    )

    @staticmethod
    def enabled(config: AgentConfiguration, option: ConfigOption[bool | None]) -> bool:
        """Whether the memory event kind of ``option`` is made under ``config``."""
        for key in (option.key, MemoryEventOptions.MEMORY_GENERATE_EVENT.key):
            value = config.get(key)
            if value is not None:
                return bool(option.convert(value))
        return not option.key.endswith("-read")


class AgentConfiguration:
    """Option values by key.

    Keys of your own are kept for actions to read (``ctx.config.get("myapp.threshold")``),
    but a key that is none of the project's options and looks like one raises
    `UnknownOptionError` when it is set (see `check_user_key`).
    """

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {}
        self._resolved: dict[str, Any] = {}
        for key, value in (values or {}).items():
            self.set_str(key, value)

    @overload
    def get(self, option: ConfigOption[T]) -> T: ...
    @overload
    def get(self, option: str, default: Any = None) -> Any: ...
    def get(self, option: ConfigOption[Any] | str, default: Any = None) -> Any:
        """The value of an option (its default when unset), or of a raw key."""
        if isinstance(option, ConfigOption):
            # Options are read on every step: remember each resolved value.
            try:
                return self._resolved[option.key]
            except KeyError:
                pass
            if option.key in self._values:
                value = option.convert(self._values[option.key])
            else:
                value = option.default
            self._resolved[option.key] = value
            return value
        return self._values.get(option, default)

    def set(self, option: ConfigOption[T] | str, value: Any) -> AgentConfiguration:
        """Set an option (checked against its type) or a raw key."""
        if isinstance(option, ConfigOption):
            self._values[option.key] = option.convert(value)
            self._resolved.pop(option.key, None)
        else:
            self.set_str(option, value)
        return self

    def set_str(self, key: str, value: Any) -> AgentConfiguration:
        """Set a value by key (an ``agent.`` prefix is dropped); a known option's value is
        checked and converted, any other key is checked with `check_user_key`."""
        key = key.removeprefix("agent.")
        option = _OPTIONS_BY_KEY.get(key)
        if option is None:
            check_user_key(key)
        self._values[key] = option.convert(value) if option is not None else value
        self._resolved.pop(key, None)
        return self

    def to_dict(self) -> dict[str, Any]:
        """The values that were set, by key (enums as their string values)."""
        return {k: (v.value if isinstance(v, Enum) else v) for k, v in self._values.items()}

    def copy(self) -> AgentConfiguration:
        """An independent copy."""
        duplicate = AgentConfiguration()
        duplicate._values = dict(self._values)
        return duplicate

    def __repr__(self) -> str:
        return f"AgentConfiguration({self.to_dict()!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AgentConfiguration) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]


_OPTIONS_BY_KEY: dict[str, ConfigOption[Any]] = {
    opt.key: opt
    for holder in (AgentExecutionOptions, AgentConfigOptions, MemoryEventOptions)
    for opt in vars(holder).values()
    if isinstance(opt, ConfigOption)
}

_NAMESPACES: frozenset[str] = frozenset(key.split(".", 1)[0] for key in _OPTIONS_BY_KEY)
"""First segments of the project's option keys (``chat``, ``tool-call``, ``max-retries``...)."""

_NEAR_MISS = 0.8
"""How similar (difflib ratio, case-insensitive) a key must be to one of ours to be taken
for a misspelling of it."""


def check_user_key(key: str) -> None:
    """Raise `UnknownOptionError` when ``key``, which is none of the project's options,
    looks like one: it starts with the first segment of one of ours (``chat.``,
    ``tool-call.``, ``durable-execution.``, ``max-retries``...; those namespaces are the
    project's), or it is a near miss of one (``max-retry``, ``baselogdir``). Any other
    key is the user's own; giving your keys a namespace of your own (``myapp.threshold``)
    keeps them clear of ours.
    """
    namespace = key.split(".", 1)[0]
    near = closest_names(key, _OPTIONS_BY_KEY, cutoff=_NEAR_MISS)
    if namespace not in _NAMESPACES and not near:
        return
    listed = [known for known in _OPTIONS_BY_KEY if known.split(".", 1)[0] == namespace]
    error = UnknownOptionError.for_option(
        "the agent configuration", key, _OPTIONS_BY_KEY, listed=listed
    )
    if namespace not in _NAMESPACES or "." not in key:
        raise error
    raise UnknownOptionError(
        f"{error}; keys under {namespace + '.'!r} are the project's, give keys of your own "
        "a prefix of your own (e.g. 'myapp.')",
        owner=error.owner,
        option=key,
        suggestions=error.suggestions,
    )
