"""Tool calls that wait for a person: parking a run, deciding its calls, timing them out.

The built-in tool action parks a `ToolRequestEvent` whose calls need approval (`park`):
none of its calls runs, an `ApprovalRequest` per call needing approval goes out as an
output of the run (so it is emitted exactly once, with the snapshot that holds it, as any
output), and the request waits in the run's `approvals` (`ApprovalWait`). A run with no
pending event and an undecided call is parked (`is_parked`): the scheduler lets go of it
(no task, no run slot) and keeps the key's later inputs behind it; on Flink it waits in
keyed state like any run in progress.

A `ToolApproval` input of the key decides one call (`decide`); once every call of every
wait is decided, their events are pending again and the run goes on: the tool action finds
the decisions (`decisions_for`), runs the approved calls (durable, as any tool call) and
answers the denied ones with an error result naming the person's reason. Past
``tool-call.approval-timeout-s`` (`time_out`) the undecided calls count as denied. A wait
leaves the run when its event has been processed again (`settle`).

These are pure functions of a `RunState`; `clock_ms` is the one clock (tests replace it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any
from uuid import UUID

from flink_agents.api.approvals import ApprovalRequest, ToolApproval
from flink_agents.api.events.event import Event
from flink_agents.api.redaction import redact_value
from flink_agents.runtime.errors import ApprovalNotPendingError
from flink_agents.runtime.keys import encode_key
from flink_agents.runtime.run_state import ApprovalDecision, ApprovalWait, RunState

__all__ = [
    "DECLINED",
    "TIMED_OUT",
    "clock_ms",
    "decide",
    "decisions_for",
    "denial_message",
    "is_parked",
    "new_wait",
    "next_deadline_ms",
    "pending_requests",
    "settle",
    "time_out",
]


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


clock_ms: Callable[[], int] = _wall_clock_ms
"""Milliseconds since the epoch (replaced by tests)."""

DECLINED = "a person declined this call"
TIMED_OUT = "no decision came within tool-call.approval-timeout-s"


def new_wait(
    key: Any,
    event: Event,
    calls: Sequence[tuple[str, str, dict[str, Any]]],
    timeout_s: float | None,
) -> ApprovalWait:
    """The wait of ``event`` (a tool request of a run of ``key``) for ``calls`` (call id,
    tool, arguments)."""
    now = clock_ms()
    requested_at = datetime.fromtimestamp(now / 1000.0, tz=timezone.utc)
    requests = [
        ApprovalRequest(
            key=key,
            request_id=str(event.id),
            call_id=call_id,
            tool=tool,
            arguments=redact_value(arguments),
            requested_at=requested_at,
        )
        for call_id, tool, arguments in calls
    ]
    deadline = None if timeout_s is None else now + int(timeout_s * 1000)
    return ApprovalWait(event=event, requests=requests, requested_at_ms=now, deadline_ms=deadline)


def _undecided(wait: ApprovalWait) -> list[ApprovalRequest]:
    return [r for r in wait.requests if r.call_id not in wait.decisions]


def is_parked(run: RunState) -> bool:
    """No event pending and a call waiting for its decision."""
    return not run.pending_events and any(_undecided(w) for w in run.approvals.values())


def pending_requests(run: RunState) -> list[ApprovalRequest]:
    """The requests of the calls still undecided, in the order they went out."""
    return [r for w in run.approvals.values() for r in _undecided(w)]


def next_deadline_ms(run: RunState) -> int | None:
    """When the first undecided call times out (None: never)."""
    deadlines = [
        w.deadline_ms for w in run.approvals.values() if w.deadline_ms is not None and _undecided(w)
    ]
    return min(deadlines) if deadlines else None


def _resume_if_decided(run: RunState) -> bool:
    """Once no call is undecided: the waits' events pending again (True)."""
    if any(_undecided(w) for w in run.approvals.values()):
        return False
    run.pending_events.extend(w.event for w in run.approvals.values())
    run.done = False
    return True


def decide(run: RunState | None, key: str, approval: ToolApproval) -> bool:
    """Apply ``approval`` to the parked ``run`` of the key with text ``key``; True when
    the run goes on now. `ApprovalNotPendingError` (and ``run`` unchanged) when it
    decides no undecided call of the run."""
    call_id = approval.call_id
    if approval.key is not None and encode_key(approval.key) != key:
        raise ApprovalNotPendingError(key, call_id, "it names another key")
    if run is None or not is_parked(run):
        raise ApprovalNotPendingError(key, call_id, "no run of this key waits for a decision")
    if encode_key(run.key) != key:  # pragma: no cover - the scheduler keeps runs per key
        raise ApprovalNotPendingError(key, call_id, "the parked run is another key's")
    for wait in run.approvals.values():
        if any(r.call_id == call_id for r in wait.requests):
            if call_id in wait.decisions:
                raise ApprovalNotPendingError(key, call_id, "the call was decided already")
            wait.decisions[call_id] = ApprovalDecision(
                approved=approval.approved, reason=approval.reason, decided_at_ms=clock_ms()
            )
            return _resume_if_decided(run)
    raise ApprovalNotPendingError(key, call_id, "the parked run of this key has no such call")


def time_out(run: RunState, now_ms: int) -> tuple[int, bool]:
    """Deny the undecided calls whose deadline passed: (how many, whether the run goes on)."""
    timed_out = 0
    for wait in run.approvals.values():
        if wait.deadline_ms is None or wait.deadline_ms > now_ms:
            continue
        for request in _undecided(wait):
            wait.decisions[request.call_id] = ApprovalDecision(
                approved=False, reason=TIMED_OUT, decided_at_ms=now_ms, timed_out=True
            )
            timed_out += 1
    return timed_out, bool(timed_out) and _resume_if_decided(run)


def decisions_for(run: RunState, event_id: UUID) -> dict[str, ApprovalDecision] | None:
    """The decisions of the wait of tool request ``event_id``, once all are made (None:
    the request never waited, or still does)."""
    wait = run.approvals.get(str(event_id))
    if wait is None or _undecided(wait):
        return None
    return wait.decisions


def settle(run: RunState, event_id: UUID) -> ApprovalWait | None:
    """The decided wait of ``event_id`` leaves the run (its event was processed again)."""
    wait = run.approvals.get(str(event_id))
    if wait is None or _undecided(wait):
        return None
    del run.approvals[str(event_id)]
    return wait


def denial_message(tool: str, decision: ApprovalDecision) -> str:
    """The error result the model reads for a call that was not approved."""
    why = TIMED_OUT if decision.timed_out else DECLINED
    reason = decision.reason if decision.reason and not decision.timed_out else None
    tail = f"; reason: {reason}" if reason else ""
    return f"tool {tool!r} was not run: {why}{tail}"
