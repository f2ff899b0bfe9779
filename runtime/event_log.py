"""The event log: one JSON line per event, with the run's lineage, media redacted.

Each line holds ``key``, ``seq`` (the run), the event's ``id``, ``type``,
``upstream_event_id`` and ``upstream_action_name``, and its ``attributes``. At every
level, media blocks anywhere in the attributes lose their data and URL
(`ChatMessage.sanitize` and `MediaBlock.redact`), and every string goes through
`flink_agents.api.redaction.redact`: ``data:`` URLs and long base64 runs inside any
string, registered secrets (API keys) and credential shapes are masked. At the
``standard`` level long strings are then truncated; ``verbose`` keeps them and adds one
``action`` record per action execution (its error text redacted the same way). That is
this project's format, written with ``eventLoggerType: jsonl``.

Otherwise (as upstream: ``baseLogDir`` set, or ``eventLoggerType: file``) the log is
upstream's file event log: ``events-{jobId}-{taskName}-{subtaskId}.log`` under
``baseLogDir`` (default ``<temp dir>/flink-agents``), one flat record per event
(``timestamp``, ``logLevel``, ``eventId``, ``eventType``, ``upstreamEventId``,
``upstreamActionName``, ``eventAttributes``: the attributes sanitized as above, a long
string truncated into upstream's ``{"truncatedString": ..., "omittedChars": n}``
wrapper), no action records; with
``event-log.trace.enabled`` also upstream's execution lifecycle records of actions and of
the model, tool and parser calls they report (`log_execution`,
`flink_agents.runtime.execution_reports`). Both are read by ``flink_agents.cli.trace_tree``.
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from flink_agents.api.content_blocks import (
    MEDIA_BLOCK_CLASSES,
)
from flink_agents.api.core_options import (
    AgentConfigOptions,
    AgentConfiguration,
    EventLogLevel,
    LoggerType,
)
from flink_agents.api.events.event import Event
from flink_agents.api.message import ChatMessage
from flink_agents.api.redaction import redact, redact_value
from flink_agents.api.trace import ExecutionLifecycleEvents
from flink_agents.runtime.private_files import make_private_dirs, open_private_append

__all__ = ["DEFAULT_FILE_LOG_DIR", "EventLog", "file_event_log_name", "sanitize_json"]

DEFAULT_FILE_LOG_DIR = Path(tempfile.gettempdir()) / "flink-agents"
"""Where upstream's file event log goes without ``baseLogDir`` (as upstream:
``java.io.tmpdir/flink-agents``)."""

_UNSAFE_IN_NAMES = re.compile(r'[\\/:*?"<>|]')


def file_event_log_name(job_id: str, task_name: str, subtask_index: int) -> str:
    """Upstream's file name of a subtask's event log: ``events-{jobId}-{taskName}-{subtaskId}.log``
    (characters a file name cannot hold in the task name replaced by ``_``)."""
    return f"events-{job_id}-{_UNSAFE_IN_NAMES.sub('_', task_name)}-{subtask_index}.log"


def sanitize_json(value: Any, max_string_length: int | None = None) -> Any:
    """A log-safe copy of a JSON value.

    Media blocks (and messages holding them) lose their data and URL; every string,
    at any depth, goes through `redact` (``data:`` URLs, base64 runs, registered
    secrets, credential shapes), values under credential-naming keys are masked, and,
    when ``max_string_length`` is set, long strings are truncated after redaction.
    """
    return redact_value(value, max_string_length=max_string_length, mapping_hook=_redacted)


def _wrap_long_strings(value: Any, max_string_length: int) -> Any:
    """``value`` with every string longer than ``max_string_length`` (at any depth, keys
    aside) replaced by upstream's wrapper: ``{"truncatedString": "<first chars>...",
    "omittedChars": <the rest's length>}``."""
    if isinstance(value, str):
        if len(value) <= max_string_length:
            return value
        return {
            "truncatedString": value[:max_string_length] + "...",
            "omittedChars": len(value) - max_string_length,
        }
    if isinstance(value, dict):
        return {k: _wrap_long_strings(v, max_string_length) for k, v in value.items()}
    if isinstance(value, list):
        return [_wrap_long_strings(v, max_string_length) for v in value]
    return value


def _redacted(value: Mapping[str, Any]) -> dict[str, Any] | None:
    """The redacted form of a message or media block dict; None for anything else."""
    if "role" in value and "blocks" in value:
        try:
            return ChatMessage.model_validate(value).sanitize().model_dump(mode="json")
        except ValidationError:
            return None
    kind = value.get("type")
    if isinstance(kind, str) and kind in MEDIA_BLOCK_CLASSES and "mime_type" in value:
        try:
            return MEDIA_BLOCK_CLASSES[kind].model_validate(value).redact().model_dump(mode="json")
        except ValidationError:
            # Not a valid block: drop the payload fields anyway.
            return {k: v for k, v in value.items() if k not in ("data", "url")}
    return None


def _timestamp() -> str:
    """Now, as upstream's records write it (ISO 8601, UTC, ``Z``)."""
    now = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    return now.replace("+00:00", "Z")


class EventLog:
    """Writes event records as JSON lines to a text stream (thread-safe)."""

    def __init__(
        self,
        stream: TextIO | None,
        level: EventLogLevel = EventLogLevel.STANDARD,
        *,
        max_string_length: int = 2000,
        upstream_records: bool = False,
        trace_records: bool = False,
    ) -> None:
        self._stream = stream
        self.level = level
        self.max_string_length = max_string_length
        self.upstream_records = upstream_records
        """Upstream's flat event records (and no action records) instead of this project's."""
        self.trace_records = upstream_records and trace_records
        """Upstream's execution lifecycle records too (``event-log.trace.enabled``, in
        upstream's file event log only)."""
        self._lock = threading.Lock()
        self._owned = False

    @classmethod
    def for_directory(
        cls,
        directory: str | Path,
        level: EventLogLevel = EventLogLevel.STANDARD,
        *,
        file_name: str = "events.jsonl",
        max_string_length: int = 2000,
        upstream_records: bool = False,
        trace_records: bool = False,
    ) -> EventLog:
        """An event log appending to ``directory/file_name``.

        The file is created ``0600`` and missing directories ``0700`` when needed (see
        `flink_agents.runtime.private_files`).
        """
        path = Path(directory)
        if level is EventLogLevel.OFF:
            return cls(None, level)
        make_private_dirs(path)
        # Line-buffered: each record is in the file when its line is written, so the log
        # can be followed (tail -f) while the job runs, not only after close().
        stream = open_private_append(path / file_name, buffering=1)
        log = cls(
            stream,
            level,
            max_string_length=max_string_length,
            upstream_records=upstream_records,
            trace_records=trace_records,
        )
        log._owned = True
        return log

    @classmethod
    def from_config(
        cls,
        config: AgentConfiguration,
        *,
        subtask_index: int | None = None,
        job_id: str | None = None,
        task_name: str = "local-runner",
    ) -> EventLog | None:
        """The event log the options ask for (None when none), for one subtask of a Flink
        job (``subtask_index`` given) or for the local runner.

        ``eventLoggerType: jsonl``: this project's ``events.jsonl`` under ``baseLogDir``
        (``events-<subtask>.jsonl`` for a subtask; none when unset). Otherwise, as upstream,
        ``baseLogDir`` set or ``eventLoggerType: file``: upstream's file event log,
        `file_event_log_name` under ``baseLogDir`` or `DEFAULT_FILE_LOG_DIR` (``job_id``
        unknown: a new random one). ``event-log.level: off``: none.
        """
        level = config.get(AgentConfigOptions.EVENT_LOG_LEVEL)
        kind = cls.configured_kind(config)
        if kind is None:
            return None
        upstream = kind is LoggerType.FILE
        directory: str | Path = (config.get(AgentConfigOptions.BASE_LOG_DIR) or "").strip()
        if upstream:
            directory = directory or DEFAULT_FILE_LOG_DIR
            file_name = file_event_log_name(
                job_id or uuid.uuid4().hex, task_name, subtask_index or 0
            )
        else:
            file_name = "events.jsonl" if subtask_index is None else f"events-{subtask_index}.jsonl"
        return cls.for_directory(
            directory,
            level,
            file_name=file_name,
            max_string_length=config.get(AgentConfigOptions.EVENT_LOG_MAX_STRING_LENGTH),
            upstream_records=upstream,
            trace_records=config.get(AgentConfigOptions.EVENT_LOG_TRACE_ENABLED),
        )

    @staticmethod
    def configured_kind(config: AgentConfiguration) -> LoggerType | None:
        """The event log the options ask for: `LoggerType.FILE` (upstream's file event log),
        `LoggerType.JSONL` (this project's), or None (none: see `from_config`)."""
        if config.get(AgentConfigOptions.EVENT_LOG_LEVEL) is EventLogLevel.OFF:
            return None
        has_directory = bool((config.get(AgentConfigOptions.BASE_LOG_DIR) or "").strip())
        logger_type = config.get(AgentConfigOptions.EVENT_LOGGER_TYPE)
        if logger_type is LoggerType.JSONL:
            return LoggerType.JSONL if has_directory else None
        if logger_type is LoggerType.FILE or has_directory:
            return LoggerType.FILE
        return None

    @property
    def enabled(self) -> bool:
        """False at level ``off`` or without a stream."""
        return self._stream is not None and self.level is not EventLogLevel.OFF

    def _limit(self) -> int | None:
        """The length strings are truncated to; None: none (``verbose``, or 0 as upstream)."""
        if self.level is not EventLogLevel.STANDARD or self.max_string_length <= 0:
            return None
        return self.max_string_length

    def _upstream_payload(self, value: Mapping[str, Any]) -> dict[str, Any]:
        """A payload of upstream's records: sanitized, long strings in upstream's wrapper."""
        sanitized = sanitize_json(dict(value))
        limit = self._limit()
        return sanitized if limit is None else _wrap_long_strings(sanitized, limit)

    def log_event(self, key: Any, seq: int, event: Event) -> None:
        """Write one event record."""
        if not self.enabled:
            return
        data = event.to_dict()
        if self.upstream_records:
            self._write(self._upstream_record(data))
            return
        record = {
            **self._head("event", key, seq),
            "id": data["id"],
            "type": data["type"],
            "upstream_event_id": data["upstream_event_id"],
            "upstream_action_name": data["upstream_action_name"],
            "attributes": sanitize_json(data["attributes"], self._limit()),
        }
        self._write(record)

    def _upstream_record(self, data: dict[str, Any]) -> dict[str, Any]:
        """Upstream's flat record of an event (its lineage fields only when set)."""
        record: dict[str, Any] = {
            "timestamp": _timestamp(),
            "logLevel": self.level.name,
            "eventId": data["id"],
            "eventType": data["type"],
        }
        for name, field in (
            ("upstreamEventId", "upstream_event_id"),
            ("upstreamActionName", "upstream_action_name"),
        ):
            if data[field] is not None:
                record[name] = data[field]
        record["eventAttributes"] = self._upstream_payload(_upstream_tool_calls(data["attributes"]))
        return record

    @property
    def records_executions(self) -> bool:
        """Whether `log_execution` writes anything."""
        return self.trace_records and self.enabled

    def log_execution(
        self,
        event_type: str,
        trace: Mapping[str, Any],
        attributes: Mapping[str, Any],
        problem_category: str | None = None,
    ) -> None:
        """Write one of upstream's execution lifecycle records (`records_executions` only).

        ``trace`` holds the record's trace fields (``inputRunId`` ... ``entityMetadata``,
        in upstream's order), ``attributes`` its event attributes (a failure's
        ``errorType`` and ``errorMessage``); both are sanitized as event attributes are.
        """
        if not self.records_executions:
            return
        status = ExecutionLifecycleEvents.expected_status(event_type)
        if status is None:
            raise ValueError(f"{event_type!r} is not an execution lifecycle event type")
        record: dict[str, Any] = {
            "timestamp": _timestamp(),
            "logLevel": self.level.name,
        }
        record.update(sanitize_json(dict(trace)))  # upstream never truncates trace fields
        record["eventId"] = str(uuid.uuid4())
        record["eventType"] = event_type
        record["status"] = status
        if problem_category is not None:
            record["problemCategory"] = problem_category
        record["eventAttributes"] = self._upstream_payload(attributes)
        self._write(record)

    def log_action(
        self,
        key: Any,
        seq: int,
        action: str,
        trigger_event_id: str,
        duration_s: float,
        sent_event_ids: list[str],
        error: str | None = None,
    ) -> None:
        """Write one action record (``verbose`` level only; upstream's records have none)."""
        if not self.enabled or self.level is not EventLogLevel.VERBOSE or self.upstream_records:
            return
        record = {
            **self._head("action", key, seq),
            "action": action,
            "trigger_event_id": trigger_event_id,
            "duration_ms": round(duration_s * 1000.0, 3),
            "sent_event_ids": sent_event_ids,
            "error": redact(error) if error is not None else None,
        }
        self._write(record)

    @staticmethod
    def _head(kind: str, key: Any, seq: int) -> dict[str, Any]:
        """The fields every record of this log's own format starts with."""
        return {"record": kind, "ts": time.time(), "key": redact_value(key), "seq": seq}

    def _write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock:
            if self._stream is not None:
                self._stream.write(line + "\n")

    def flush(self) -> None:
        """Flush the stream."""
        with self._lock:
            if self._stream is not None:
                self._stream.flush()

    def close(self) -> None:
        """Flush, and close the stream when this log opened it."""
        with self._lock:
            stream, self._stream = self._stream, None
        if stream is not None:
            stream.flush()
            if self._owned:
                stream.close()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("an EventLog holds an open stream; create it where it is used")


def _upstream_tool_calls(value: Any) -> Any:
    """``value`` with each ``tool_calls`` list of tool call blocks (``{"type": "tool_call",
    "id", "name", "input"}``) in upstream's form, ``{"id", "type": "function", "function":
    {"name", "arguments"}}``: what readers of upstream's event log (its e2e tests'
    ``collect_tool_invocations``) take a tool request's calls from."""
    if isinstance(value, Mapping):
        return {
            key: _upstream_call_list(item) if key == "tool_calls" else _upstream_tool_calls(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_upstream_tool_calls(item) for item in value]
    return value


def _upstream_call_list(calls: Any) -> Any:
    if not isinstance(calls, list):
        return _upstream_tool_calls(calls)
    return [
        {
            "id": call.get("id"),
            "type": "function",
            "function": {"name": call.get("name"), "arguments": call.get("input", {})},
        }
        if isinstance(call, Mapping) and call.get("type") == "tool_call"
        else _upstream_tool_calls(call)
        for call in calls
    ]
