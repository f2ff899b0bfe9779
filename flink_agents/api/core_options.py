"""Options that tune how agents run, and the configuration that holds them.

Option keys follow the upstream project where it has the option (``max-retries``,
``error-handling-strategy``, ``event-log.level``, ``baseLogDir``, ``retry-wait-interval``
in seconds...). The project's own options that hold a duration name its unit at the end
of the key: ``-s`` for seconds (``tool-call.timeout-s``, ``durable-execution.stop-grace-s``).
Values may be given typed or as strings (as they come from a Flink ``config.yaml``).

Every option of upstream's ``core_options`` is declared here under its key and default.
A few cannot be honoured by this runtime (a Fluss action-state store, Java event
listeners...): `UNSUPPORTED_OPTIONS` says what to use instead; setting one to anything but
its default logs that as a warning. ``actionStateStoreBackend`` set to anything but
``kafka`` (which would promise exactly-once calls that nothing here keeps) raises
`ValueError`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar, overload

from flink_agents.api.configuration import ConfigOption, Configuration, agent_section
from flink_agents.api.errors import UnknownOptionError, closest_names

__all__ = [
    "UNSUPPORTED_OPTIONS",
    "UPSTREAM_OPTION_KEYS",
    "AgentConfigOptions",
    "AgentConfiguration",
    "AgentExecutionOptions",
    "ConditionEvaluationFailureStrategy",
    "ConfigOption",
    "ErrorHandlingStrategy",
    "EventLogLevel",
    "InputFailurePolicy",
    "LoggerType",
    "LongTermMemoryOptions",
    "MemoryEventOptions",
    "ShortTermMemoryTtlUpdate",
    "ShortTermMemoryTtlVisibility",
    "check_user_key",
]

T = TypeVar("T")

_LOG = logging.getLogger(__name__)


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


class LoggerType(str, Enum):
    """Upstream's event logger types (``eventLoggerType``)."""

    SLF4J = "slf4j"
    """Upstream: events to the Java logger. Here there is none: no event log unless
    ``baseLogDir`` is set, which (as upstream) makes it the file event log."""
    FILE = "file"
    """Upstream's file event log: ``events-{jobId}-{taskName}-{subtaskId}.log`` under
    ``baseLogDir`` (default ``<temp dir>/flink-agents``), upstream's flat records."""
    JSONL = "jsonl"
    """This project's own (not upstream's): ``events.jsonl`` under ``baseLogDir``
    (``events-<subtask>.jsonl`` per Flink subtask; none when unset), with each record's run
    (``key``, ``seq``) and, at ``verbose``, one record per action."""


class ConditionEvaluationFailureStrategy(str, Enum):
    """What happens when an action's trigger condition cannot be evaluated on an event (an
    attribute it reads is missing or of another type)."""

    WARN_AND_SKIP = "WARN_AND_SKIP"
    """A warning (once per action and expression); the condition counts as false."""
    FAIL = "FAIL"
    """The run fails (`TriggerConditionFailedError`); ``input-failure.policy`` decides."""


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
        "fail | retry | ignore, for failed chat model calls. Upstream's default is fail; "
        "here retry, so a rate limit does not fail a streaming job.",
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
    TOOL_CALL_MAX_PER_TURN: ConfigOption[int] = ConfigOption(
        "tool-call.max-per-turn",
        int,
        64,
        "Tool calls of one model answer that are run at most; each call past it is not run "
        "and gives the model an error result naming this option, and the chat loop goes on.",
        positive=True,
    )
    # Human approval of tool calls (docs/approvals.md).
    TOOL_CALL_APPROVAL_TIMEOUT: ConfigOption[float | None] = ConfigOption(
        "tool-call.approval-timeout-s",
        float,
        None,
        "Seconds a tool call that requires approval waits for its ToolApproval (unset: "
        "forever); past it, on a timer in keyed state (processing time on Flink), the call "
        "counts as denied with a reason saying it timed out, and the chat loop goes on.",
        positive=True,
    )
    TOOL_CALL_APPROVAL_REQUIRED_TOOLS: ConfigOption[list[str]] = ConfigOption(
        "tool-call.approval-required-tools",
        list,
        [],
        "Names of tools (a list, or comma-separated) whose calls wait for a person's "
        "ToolApproval, besides those declared with requires_approval=True: for tools an "
        "MCP server offers.",
    )
    TOOL_CALL_MAX_ABANDONED_THREADS: ConfigOption[int] = ConfigOption(
        "tool-call.max-abandoned-threads",
        int,
        64,
        "Sync tool threads beyond num-async-threads at most at a time: extra ones, started "
        "when every tool thread has been blocked 10 ms while calls wait (so no call waits "
        "behind hung ones), and written-off ones, whose call timed out and still runs. When "
        "every tool thread holds a timed-out call at this limit, further calls are not run: "
        "their result is 'no free tool thread'. 0: none.",
    )
    # Skills (flink_agents.api.skills, docs/skills.md): the built-in bash tool.
    SKILLS_COMMANDS_ENABLED: ConfigOption[bool] = ConfigOption(
        "skills.commands.enabled",
        bool,
        False,
        "Whether the built-in bash tool of a chat model setup with skills runs commands "
        "(its allowed_commands, or scripts inside its skills' folders). Off: the tool runs "
        "nothing and answers the model that commands are off.",
    )
    SKILLS_COMMAND_TIMEOUT: ConfigOption[float] = ConfigOption(
        "skills.command-timeout-s",
        float,
        60.0,
        "Seconds a command of the bash tool may run at most (the model may ask for less); "
        "past it the command and its children are killed and the model is told.",
        positive=True,
    )
    MAX_IN_FLIGHT_RUNS_BYTES: ConfigOption[int] = ConfigOption(
        "max-in-flight-runs-bytes",
        int,
        256 * 2**20,
        "Memory in bytes the agent runs in progress at once (inputs of different keys) may "
        "take, per runner or Flink subtask: a run is counted for 16 KiB plus 4 bytes per "
        "character of its data's JSON (its input, then its latest snapshot), and a run that "
        "would go past the bound waits for others to end (one run always goes on). The "
        "default, 256 MiB, lets about 16,000 small runs wait at once.",
        positive=True,
    )
    MAX_IN_FLIGHT_RUNS: ConfigOption[int | None] = ConfigOption(
        "max-in-flight-runs",
        int,
        None,
        "Agent runs in progress at once at most, on top of max-in-flight-runs-bytes "
        "(a provider that takes only so many calls at once is better bounded by its "
        "connection's max_concurrent_requests). Unset: no count, only the memory bound.",
        positive=True,
    )
    MAX_BUFFERED_INPUTS: ConfigOption[int | None] = ConfigOption(
        "max-buffered-inputs",
        int,
        None,
        "Accepted inputs not yet finished (waiting behind their key or running) before the "
        "runner stops reading input: backpressure. Unset: twice the runs the in-flight "
        "bounds let go on at once (max-in-flight-runs-bytes / 16 KiB, at most "
        "max-in-flight-runs), and on Flink at least 10,000 per subtask.",
    )
    NUM_ASYNC_THREADS: ConfigOption[int] = ConfigOption(
        "num-async-threads",
        int,
        (os.cpu_count() or 1) * 2,
        "Threads for synchronous actions at most; synchronous tools get as many threads of "
        "their own. A pool starts a thread when a call waits and none is idle.",
    )
    CHAT_ASYNC: ConfigOption[bool] = ConfigOption(
        "chat.async",
        bool,
        True,
        "Upstream: run model calls asynchronously. Here they always are (false is accepted "
        "with a warning).",
    )
    TOOL_CALL_ASYNC: ConfigOption[bool] = ConfigOption(
        "tool-call.async",
        bool,
        True,
        "Upstream: run tool calls asynchronously. Here they always are (sync tools on their "
        "own threads; false is accepted with a warning).",
    )
    RAG_ASYNC: ConfigOption[bool] = ConfigOption(
        "rag.async",
        bool,
        True,
        "Upstream: run context retrieval asynchronously. No vector stores here (false is "
        "accepted with a warning).",
    )
    # Batched context retrieval (docs/rag.md).
    RAG_BATCH_INTERVAL: ConfigOption[float] = ConfigOption(
        "rag.batch-interval-s",
        float,
        0.02,
        "Seconds at least between two batched calls of the context retrieval action for "
        "one vector store (query embeddings, store lookups): a request that comes sooner "
        "after the last one went waits the rest of it with those that come meanwhile "
        "(unless every key that asked in the last second is in); one that comes later goes "
        "at once. 0: a batch goes as soon as the previous one is answered (small batches "
        "against a fast provider, each costing a whole request).",
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
    GC_TUNING: ConfigOption[bool] = ConfigOption(
        "gc.tuning",
        bool,
        True,
        "While runs are in flight (a local stream; a Flink subtask from open to close), "
        "collect the youngest generation every 20,000 allocations instead of 700 (the last "
        "runner puts the thresholds back); off: Python's collector as it is (see "
        "docs/deployment.md).",
    )
    # Process-wide side effects that cannot be undone exactly: opt-in.
    GC_FREEZE: ConfigOption[bool] = ConfigOption(
        "gc.freeze",
        bool,
        False,
        "While runs are in flight, also freeze the objects that exist when runs start "
        "(gc.freeze()) so full collections skip them; the last runner unfreezes, which "
        "also unfreezes objects the application froze itself (see docs/deployment.md).",
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

    JOB_IDENTIFIER: ConfigOption[str | None] = ConfigOption(
        "job-identifier",
        str,
        None,
        "Upstream: the job's identifier. Not used here (accepted with a warning): a "
        "pipeline's durable records are identified by durable-execution.pipeline-id.",
    )
    BASE_LOG_DIR: ConfigOption[str | None] = ConfigOption(
        "baseLogDir",
        str,
        None,
        "Directory of the event log (no event log when unset, unless eventLoggerType is "
        "file). As upstream, setting it makes the event log upstream's file event log "
        "unless eventLoggerType is jsonl.",
    )
    EVENT_LOG_LEVEL: ConfigOption[EventLogLevel] = ConfigOption(
        "event-log.level", EventLogLevel, EventLogLevel.STANDARD, "off | standard | verbose."
    )
    EVENT_LOG_MAX_STRING_LENGTH: ConfigOption[int] = ConfigOption(
        "event-log.standard.max-string-length",
        int,
        2000,
        "At the standard level, longer strings are truncated to this many characters (0: "
        "none). In the file event log a truncated string is upstream's wrapper "
        '{"truncatedString": "<first chars>...", "omittedChars": <n>}.',
    )
    EVENT_LOG_MAX_ARRAY_ELEMENTS: ConfigOption[int] = ConfigOption(
        "event-log.standard.max-array-elements",
        int,
        20,
        "Upstream: at the standard level, longer arrays are truncated. Here arrays are kept "
        "whole (another value is accepted with a warning).",
    )
    EVENT_LOG_MAX_DEPTH: ConfigOption[int] = ConfigOption(
        "event-log.standard.max-depth",
        int,
        5,
        "Upstream: at the standard level, deeper values are cut. Here values are kept whole "
        "(another value is accepted with a warning).",
    )
    EVENT_LOG_TRACE_ENABLED: ConfigOption[bool] = ConfigOption(
        "event-log.trace.enabled",
        bool,
        False,
        "Execution lifecycle records (actions and the model, tool and parser calls they "
        "report) in upstream's file event log, as upstream; this project's events.jsonl "
        "(eventLoggerType: jsonl) has none (tracing.enabled: OpenTelemetry spans).",
    )
    EVENT_LOGGER_TYPE: ConfigOption[LoggerType] = ConfigOption(
        "eventLoggerType",
        LoggerType,
        LoggerType.SLF4J,
        "file: upstream's file event log, events-{jobId}-{taskName}-{subtaskId}.log under "
        "baseLogDir (default <temp dir>/flink-agents), upstream's flat records; slf4j: "
        "the same when baseLogDir is set (as upstream), else none (no Java logger here); "
        "jsonl: this project's events.jsonl under baseLogDir (none when unset).",
    )
    PRETTY_PRINT: ConfigOption[bool] = ConfigOption(
        "prettyPrint",
        bool,
        False,
        "Upstream: indented event log records. Here one JSON record per line (true is "
        "accepted with a warning).",
    )
    EVENT_LISTENERS: ConfigOption[list[str] | None] = ConfigOption(
        "event-listeners",
        list,
        None,
        "Upstream: Java event listener classes. Not available here (accepted with a "
        "warning); an action that listens to the event types does the same in Python.",
    )
    CONDITION_EVALUATION_FAILURE_STRATEGY: ConfigOption[ConditionEvaluationFailureStrategy] = (
        ConfigOption(
            "action.trigger-condition.evaluate-failure-strategy",
            ConditionEvaluationFailureStrategy,
            ConditionEvaluationFailureStrategy.WARN_AND_SKIP,
            "When an action's trigger condition expression cannot be evaluated on an event: "
            "WARN_AND_SKIP (a warning, the condition counts as false) or FAIL (the run "
            "fails; input-failure.policy decides what then).",
        )
    )
    ACTION_STATE_STORE_BACKEND: ConfigOption[str | None] = ConfigOption(
        "actionStateStoreBackend",
        str,
        None,
        "kafka: durable model and tool calls recorded on a compacted Kafka topic (the "
        "kafka* options; instead of durable-execution.store). fluss is not available here "
        "(raises).",
    )
    KAFKA_BOOTSTRAP_SERVERS: ConfigOption[str] = ConfigOption(
        "kafkaBootstrapServers",
        str,
        "localhost:9092",
        "Brokers of the Kafka action-state store (actionStateStoreBackend: kafka).",
    )
    KAFKA_ACTION_STATE_TOPIC: ConfigOption[str | None] = ConfigOption(
        "kafkaActionStateTopic",
        str,
        None,
        "Topic of the Kafka action-state store (required with actionStateStoreBackend: "
        "kafka); created compacted when missing.",
    )
    KAFKA_ACTION_STATE_TOPIC_NUM_PARTITIONS: ConfigOption[int] = ConfigOption(
        "kafkaActionStateTopicNumPartitions",
        int,
        64,
        "Partitions of the action-state topic when the store creates it (keep them: a "
        "changed count is refused).",
    )
    KAFKA_ACTION_STATE_TOPIC_REPLICATION_FACTOR: ConfigOption[int] = ConfigOption(
        "kafkaActionStateTopicReplicationFactor",
        int,
        1,
        "Replicas of the action-state topic when the store creates it (3 in production).",
    )
    FLUSS_BOOTSTRAP_SERVERS: ConfigOption[str] = ConfigOption(
        "flussBootstrapServers", str, "localhost:9123", "Upstream's Fluss action-state store."
    )
    FLUSS_ACTION_STATE_DATABASE: ConfigOption[str] = ConfigOption(
        "flussActionStateDatabase", str, "flink_agents", "Upstream's Fluss action-state store."
    )
    FLUSS_ACTION_STATE_TABLE: ConfigOption[str | None] = ConfigOption(
        "flussActionStateTable", str, None, "Upstream's Fluss action-state store."
    )
    FLUSS_ACTION_STATE_TABLE_BUCKETS: ConfigOption[int] = ConfigOption(
        "flussActionStateTableBuckets", int, 64, "Upstream's Fluss action-state store."
    )
    FLUSS_SECURITY_PROTOCOL: ConfigOption[str] = ConfigOption(
        "flussSecurityProtocol", str, "PLAINTEXT", "Upstream's Fluss action-state store."
    )
    FLUSS_SASL_MECHANISM: ConfigOption[str] = ConfigOption(
        "flussSaslMechanism", str, "PLAIN", "Upstream's Fluss action-state store."
    )
    FLUSS_SASL_JAAS_CONFIG: ConfigOption[str | None] = ConfigOption(
        "flussSaslJaasConfig", str, None, "Upstream's Fluss action-state store."
    )
    FLUSS_SASL_USERNAME: ConfigOption[str | None] = ConfigOption(
        "flussSaslUsername", str, None, "Upstream's Fluss action-state store."
    )
    FLUSS_SASL_PASSWORD: ConfigOption[str | None] = ConfigOption(
        "flussSaslPassword", str, None, "Upstream's Fluss action-state store."
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
    DURABLE_EXECUTION_STORE_RETRY_TIMEOUT: ConfigOption[float] = ConfigOption(
        "durable-execution.store.retry-timeout-s",
        float,
        60.0,
        "Seconds a store operation that failed because the store could not be read or "
        "written just now (read-only or full disk, lock, database down or restarting) is "
        "tried again, with backoff up to 5 s, before the task fails; 0: fail at once.",
    )
    DURABLE_EXECUTION_STORE_ENCRYPTION_KEY_ENV: ConfigOption[str | None] = ConfigOption(
        "durable-execution.store.encryption-key-env",
        str,
        None,
        "Name of an environment variable (set on every worker) holding Fernet keys, comma "
        "separated, the first encrypting: recorded results and errors are then encrypted at "
        "rest in the action-state store. Unset: stored as plain JSON.",
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
    STORED_CLASSES_ALLOWED_MODULES: ConfigOption[list[str]] = ConfigOption(
        "stored-classes.allowed-modules",
        list,
        [],
        "Module prefixes (a list, or comma-separated) whose classes may be imported when "
        "stored data names them (agent state, a savepoint, durable call records). Other "
        "classes are found only in modules already imported (the agent's, its actions' and "
        "tools'); a recorded exception of any other class replays as "
        "DurableCallFailedError, a value raises StoredClassRefusedError.",
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
    The long-term kinds are made from what an action did to ``ctx.long_term_memory``."""

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
        "memory.generate-event.long-term-update",
        bool,
        None,
        "LongTermUpdateEvent (on): the items an action's long-term memory calls added, "
        "changed or deleted, and the sets it cleared.",
    )
    LONG_TERM_GET: ConfigOption[bool | None] = ConfigOption(
        "memory.generate-event.long-term-get",
        bool,
        None,
        "LongTermGetEvent (on): the items an action's long-term memory calls read by get.",
    )
    LONG_TERM_SEARCH: ConfigOption[bool | None] = ConfigOption(
        "memory.generate-event.long-term-search",
        bool,
        None,
        "LongTermSearchEvent (on): per set and query, the hits of an action's searches.",
    )

    @staticmethod
    def enabled(config: AgentConfiguration, option: ConfigOption[bool | None]) -> bool:
        """Whether the memory event kind of ``option`` is made under ``config``."""
        for key in (option.key, MemoryEventOptions.MEMORY_GENERATE_EVENT.key):
            value = config.get(key)
            if value is not None:
                return bool(option.convert(value))
        return not option.key.endswith("-read")


class LongTermMemoryOptions:
    """Which backend ``ctx.long_term_memory`` uses (upstream's keys). Set all three of
    `Mem0` for mem0 on the agent's own resources; with none set, an action that reads
    ``ctx.long_term_memory`` fails with a `LongTermMemoryError` naming them."""

    class Mem0:
        """mem0 (the ``mem0`` extra): it distills what is added into facts with the chat
        model, embeds them with the embedding model and keeps them in the vector store."""

        CHAT_MODEL_SETUP: ConfigOption[str | None] = ConfigOption(
            "long-term-memory.mem0.chat-model-setup",
            str,
            None,
            "Name of the chat model setup mem0 extracts and merges memories with.",
        )
        EMBEDDING_MODEL_SETUP: ConfigOption[str | None] = ConfigOption(
            "long-term-memory.mem0.embedding-model-setup",
            str,
            None,
            "Name of the embedding model setup mem0 embeds memories and queries with.",
        )
        VECTOR_STORE: ConfigOption[str | None] = ConfigOption(
            "long-term-memory.mem0.vector-store",
            str,
            None,
            "Name of the vector store (a collection-managing one) mem0 keeps memories in.",
        )


class AgentConfiguration(Configuration):
    """Option values by key.

    Keys of your own are kept for actions to read (``ctx.config.get("myapp.threshold")``),
    but a key that is none of the project's options and looks like one raises
    `UnknownOptionError` when it is set (see `check_user_key`). Upstream's accessors work
    too: ``get_int`` / ``get_float`` / ``get_bool`` / ``get_str`` and ``set_int`` ... by key,
    ``load_from_file(path)`` (the ``agent:`` section of a YAML file), ``get_conf_data``.
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
            converted = option.convert(value)
            _check_supported(option.key, converted)
            self._values[option.key] = converted
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
            self._values[key] = value
        else:
            converted = option.convert(value)
            _check_supported(key, converted)
            self._values[key] = converted
        self._resolved.pop(key, None)
        return self

    def set_int(self, key: str, value: int) -> AgentConfiguration:
        """`set_str` (upstream's name for an int)."""
        return self.set_str(key, value)

    def set_float(self, key: str, value: float) -> AgentConfiguration:
        """`set_str` (upstream's name for a float)."""
        return self.set_str(key, value)

    def set_bool(self, key: str, value: bool) -> AgentConfiguration:
        """`set_str` (upstream's name for a boolean)."""
        return self.set_str(key, value)

    def get_int(self, key: str, default: int | None = None) -> int | None:
        """The value of ``key`` as an int (``default`` when unset)."""
        return self._typed(key, int, default)

    def get_float(self, key: str, default: float | None = None) -> float | None:
        """The value of ``key`` as a float (``default`` when unset)."""
        return self._typed(key, float, default)

    def get_bool(self, key: str, default: bool | None = None) -> bool | None:
        """The value of ``key`` as a boolean (``"false"`` is False; ``default`` when unset)."""
        return self._typed(key, bool, default)

    def get_str(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key`` as a string (an option's enum as its value; ``default``
        when unset)."""
        value = self._values.get(key.removeprefix("agent."))
        if value is None:
            return default
        return str(value.value) if isinstance(value, Enum) else str(value)

    def _typed(self, key: str, kind: type, default: Any) -> Any:
        key = key.removeprefix("agent.")
        value = self._values.get(key)
        if value is None:
            return default
        return ConfigOption(key, kind).convert(value)

    def load_from_file(self, config_path: str | Path | None = None) -> AgentConfiguration:
        """Set the options in the ``agent:`` section of the YAML file at ``config_path``
        (nested or dotted keys, as in Flink's ``config.yaml``)."""
        if config_path is None:
            return self
        for key, value in agent_section(config_path).items():
            try:
                self.set_str(key, value)
            except ValueError as exc:
                raise ValueError(f"agent option {key!r} in {config_path}: {exc}") from exc
        return self

    def get_conf_data(self) -> dict[str, Any]:
        """The values that were set, by key (upstream's name for `to_dict`)."""
        return self.to_dict()

    def get_config_data_by_prefix(self, prefix: str) -> dict[str, Any]:
        """The values under ``prefix.``, by the rest of their key."""
        head = f"{prefix}."
        return {k.removeprefix(head): v for k, v in self.to_dict().items() if k.startswith(head)}

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
    for holder in (
        AgentExecutionOptions,
        AgentConfigOptions,
        MemoryEventOptions,
        LongTermMemoryOptions.Mem0,
    )
    for opt in vars(holder).values()
    if isinstance(opt, ConfigOption)
}

UPSTREAM_OPTION_KEYS: frozenset[str] = frozenset(
    {
        # AgentExecutionOptions
        "error-handling-strategy",
        "max-retries",
        "retry-wait-interval",
        "num-async-threads",
        "chat.async",
        "tool-call.async",
        "rag.async",
        "agent-run.begin-event",
        "short-term-memory.state-ttl.ms",
        "short-term-memory.state-ttl.update-type",
        "short-term-memory.state-ttl.visibility",
        # AgentConfigOptions
        "job-identifier",
        "baseLogDir",
        "event-log.level",
        "event-log.standard.max-string-length",
        "event-log.standard.max-array-elements",
        "event-log.standard.max-depth",
        "event-log.trace.enabled",
        "eventLoggerType",
        "prettyPrint",
        "event-listeners",
        "action.trigger-condition.evaluate-failure-strategy",
        "actionStateStoreBackend",
        "kafkaBootstrapServers",
        "kafkaActionStateTopic",
        "kafkaActionStateTopicNumPartitions",
        "kafkaActionStateTopicReplicationFactor",
        "flussBootstrapServers",
        "flussActionStateDatabase",
        "flussActionStateTable",
        "flussActionStateTableBuckets",
        "flussSecurityProtocol",
        "flussSaslMechanism",
        "flussSaslJaasConfig",
        "flussSaslUsername",
        "flussSaslPassword",
        # MemoryEventOptions
        "memory.generate-event",
        "memory.generate-event.short-term-write",
        "memory.generate-event.short-term-read",
        "memory.generate-event.sensory-write",
        "memory.generate-event.sensory-read",
        "memory.generate-event.long-term-update",
        "memory.generate-event.long-term-get",
        "memory.generate-event.long-term-search",
        # LongTermMemoryOptions
        "long-term-memory.mem0.chat-model-setup",
        "long-term-memory.mem0.embedding-model-setup",
        "long-term-memory.mem0.vector-store",
    }
)
"""Keys of the options the upstream project (Apache Flink Agents' ``core_options``) has;
every other option is the project's own (docs/options.md says which is which)."""

_STORE_INSTEAD = (
    "durable-execution.store (sqlite:///path.db or postgresql://...) records model and tool "
    "calls so a restored run does not make them again"
)

UNSUPPORTED_OPTIONS: dict[str, str] = {
    AgentExecutionOptions.CHAT_ASYNC.key: "model calls always run asynchronously here",
    AgentExecutionOptions.TOOL_CALL_ASYNC.key: (
        "tool calls always run asynchronously here (sync tools on their own threads)"
    ),
    AgentExecutionOptions.RAG_ASYNC.key: "there is no context retrieval (vector stores) here",
    AgentConfigOptions.EVENT_LOG_MAX_ARRAY_ELEMENTS.key: (
        "the standard event log level truncates long strings only "
        "(event-log.standard.max-string-length)"
    ),
    AgentConfigOptions.EVENT_LOG_MAX_DEPTH.key: (
        "the standard event log level truncates long strings only "
        "(event-log.standard.max-string-length)"
    ),
    AgentConfigOptions.PRETTY_PRINT.key: "the event log writes one JSON record per line",
    AgentConfigOptions.EVENT_LISTENERS.key: (
        "Java event listeners are not available; an action that listens to the event types "
        "does the same in Python"
    ),
    AgentConfigOptions.JOB_IDENTIFIER.key: (
        "a pipeline's durable records are identified by durable-execution.pipeline-id"
    ),
    **{
        option.key: _STORE_INSTEAD
        for option in vars(AgentConfigOptions).values()
        if isinstance(option, ConfigOption) and option.key.startswith("fluss")
    },
}
"""Upstream options this runtime accepts but cannot honour, and what to use instead.
Setting one to anything but its default logs a warning."""

_STORE_BACKENDS = frozenset({"kafka"})
"""The values of ``actionStateStoreBackend`` this runtime keeps its promise for."""

_warned: set[str] = set()


def _check_supported(key: str, value: Any) -> None:
    """Warn (once per key) about an upstream option this runtime cannot honour when it is set
    to anything but its default; refuse an action-state store backend it does not have
    (its silent absence would cost calls made twice)."""
    if key == AgentConfigOptions.ACTION_STATE_STORE_BACKEND.key:
        if value is not None and str(value).strip().lower() not in _STORE_BACKENDS:
            raise ValueError(
                f"agent option {key!r} (upstream's) is {value!r}, which is not available "
                f"here: kafka is (with the kafka* options), or {_STORE_INSTEAD}"
            )
        return
    instead = UNSUPPORTED_OPTIONS.get(key)
    if instead is None or value == _OPTIONS_BY_KEY[key].default:
        return
    message = f"agent option {key!r} (upstream's) is not available here: {instead}"
    if key not in _warned:
        _warned.add(key)
        _LOG.warning("%s; the setting is ignored", message)


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
