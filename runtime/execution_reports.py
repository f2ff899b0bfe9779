"""The execution reports of one action execution, written as upstream's lifecycle records.

An `ExecutionReports` belongs to one `ActionContext`: the action itself is one execution
(entity type ``action``) and each model, tool or parser call it reports is a child of it.
A start report opens an execution (a new ``executionId``) under its entity type, name and
metadata; the terminal report with the same three closes it (one without a start gets
an id of its own, as upstream). ``reused`` reports a call whose recorded outcome a durable
call log replayed instead of making it again: it is not reported as started or finished.

Records go to the event log (`EventLog.log_execution`), which writes them only in
upstream's file event log with ``event-log.trace.enabled``; without one nothing is built.
All records of an input run share its ``inputRunId``, derived from the run's key and
sequence number, so a run restored after a failure keeps its id.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

from flink_agents.api.trace import (
    ExecutionEntityTypes,
    ExecutionLifecycleEvents,
    ExecutionProblemCategories,
    ExecutionReporters,
)
from flink_agents.runtime.action_context import ActionContext, key_digest, key_text
from flink_agents.runtime.event_log import EventLog

if TYPE_CHECKING:
    from flink_agents.runtime.run_state import RunState

__all__ = ["ExecutionReports", "MadeCalls", "execution_reports", "input_run_id"]

_LOG = logging.getLogger(__name__)

_RUN_IDS = uuid.UUID("6f1d8f0e-4a57-4b52-9d0c-7c2f3a61e0a4")
"""The namespace of input run ids (uuid5 of the run's key digest and sequence number)."""

_Key = tuple[str, str, str]


def input_run_id(key_digest: str, seq: int) -> str:
    """The ``inputRunId`` of run ``seq`` at a key: the same on every attempt of the run."""
    return str(uuid.uuid5(_RUN_IDS, f"{key_digest}-{seq}"))


def _metadata_key(metadata: Mapping[str, Any] | None) -> str:
    if not metadata:
        return ""
    return repr(sorted((str(k), repr(v)) for k, v in metadata.items()))


def _root_cause(error: BaseException) -> BaseException:
    """The last error of ``error``'s chain of explicit causes (``raise ... from``)."""
    seen = {id(error)}
    while error.__cause__ is not None and id(error.__cause__) not in seen:
        error = error.__cause__
        seen.add(id(error))
    return error


def execution_reports(log: EventLog, run: RunState, action_name: str) -> ExecutionReports:
    """The reports of one execution of ``action_name`` in ``run``."""
    return ExecutionReports(
        log, key_text(run.key), input_run_id(key_digest(run.key), run.seq), action_name
    )


class ExecutionReports:
    """The lifecycle records of one action execution and of the calls it reports."""

    __slots__ = ("_action_id", "_action_name", "_base", "_log", "_open")

    def __init__(self, log: EventLog, key: str, run_id: str, action_name: str) -> None:
        self._log = log
        self._base = {"inputRunId": run_id, "businessKey": key}
        self._action_name = action_name
        self._action_id = str(uuid.uuid4())
        self._open: dict[_Key, str] = {}

    # ------------------------------------------------------------------ the action

    def action_started(self) -> None:
        self._write(
            ExecutionLifecycleEvents.EXECUTION_STARTED_EVENT_TYPE,
            self._action_id,
            None,
            ExecutionEntityTypes.ACTION,
            self._action_name,
            None,
        )

    def action_ended(self, error: BaseException | None) -> None:
        if error is None:
            event_type = ExecutionLifecycleEvents.EXECUTION_FINISHED_EVENT_TYPE
            category = None
        else:
            event_type = ExecutionLifecycleEvents.EXECUTION_FAILED_EVENT_TYPE
            category = ExecutionProblemCategories.ACTION_EXECUTION_FAILED
        self._write(
            event_type,
            self._action_id,
            None,
            ExecutionEntityTypes.ACTION,
            self._action_name,
            None,
            error,
            category,
        )

    # ------------------------------------------------------------------ nested executions

    def started(
        self, entity_type: str, entity_name: str, metadata: Mapping[str, Any] | None
    ) -> None:
        execution_id = str(uuid.uuid4())
        self._open[(entity_type, entity_name, _metadata_key(metadata))] = execution_id
        self._child(
            ExecutionLifecycleEvents.EXECUTION_STARTED_EVENT_TYPE,
            execution_id,
            entity_type,
            entity_name,
            metadata,
        )

    def ended(
        self,
        event_type: str,
        entity_type: str,
        entity_name: str,
        metadata: Mapping[str, Any] | None,
        error: BaseException | None = None,
        problem_category: str | None = None,
    ) -> None:
        """A terminal report (finished, failed or reused) of an execution."""
        key = (entity_type, entity_name, _metadata_key(metadata))
        execution_id = self._open.pop(key, None) or str(uuid.uuid4())
        self._child(
            event_type, execution_id, entity_type, entity_name, metadata, error, problem_category
        )

    def _child(
        self,
        event_type: str,
        execution_id: str,
        entity_type: str,
        entity_name: str,
        metadata: Mapping[str, Any] | None,
        error: BaseException | None = None,
        problem_category: str | None = None,
    ) -> None:
        self._write(
            event_type,
            execution_id,
            self._action_id,
            entity_type,
            entity_name,
            metadata,
            error,
            problem_category,
        )

    def _write(
        self,
        event_type: str,
        execution_id: str,
        parent_id: str | None,
        entity_type: str,
        entity_name: str,
        metadata: Mapping[str, Any] | None,
        error: BaseException | None = None,
        problem_category: str | None = None,
    ) -> None:
        trace: dict[str, Any] = {**self._base, "executionId": execution_id}
        if parent_id is not None:
            trace["parentExecutionId"] = parent_id
        trace["entityType"] = entity_type
        trace["entityName"] = entity_name
        if metadata:
            trace["entityMetadata"] = dict(metadata)
        attributes: dict[str, Any] = {}
        if error is not None:
            cause = _root_cause(error)
            attributes["errorType"] = f"{type(cause).__module__}.{type(cause).__qualname__}"
            message = str(cause)
            if message:
                attributes["errorMessage"] = message
        self._log.log_execution(event_type, trace, attributes, problem_category)


class MadeCalls:
    """The reports of a built-in action's durable calls of one kind (model or tool calls).

    A call reports ``started`` when its function runs (`start`) and its outcome when that
    returns (`end`); the action then asks `replayed` of each call it made through the
    durable call log: a call whose function did not run was replayed from a record, and
    is reported ``reused`` (once), never as started or finished again.
    """

    __slots__ = ("_ctx", "_made", "entity_type", "problem_category")

    def __init__(self, ctx: ActionContext, entity_type: str, problem_category: str) -> None:
        self._ctx = ctx
        self._made: set[Hashable] = set()
        self.entity_type = entity_type
        self.problem_category = problem_category

    def start(self, call: Hashable, name: str, metadata: Mapping[str, Any]) -> None:
        """Call ``call`` is being made."""
        self._made.add(call)
        ExecutionReporters.started(self._ctx, self.entity_type, name, metadata)

    def end(self, name: str, metadata: Mapping[str, Any], error: BaseException | None) -> None:
        """The call made ended (``error``: how it failed)."""
        if error is None:
            ExecutionReporters.succeeded(self._ctx, self.entity_type, name, metadata)
        else:
            ExecutionReporters.failed(
                self._ctx, self.entity_type, name, metadata, error, self.problem_category
            )

    def replayed(self, call: Hashable, name: str, metadata: Mapping[str, Any]) -> None:
        """The durable call ``call`` returned (or raised): ``reused`` unless it was made."""
        if call in self._made:
            self._made.discard(call)
            return
        try:
            self._ctx.report_execution_reused(self.entity_type, name, metadata)
        except Exception:  # a report never fails the action (as `ExecutionReporters`)
            _LOG.debug("an execution report failed and was dropped", exc_info=True)
