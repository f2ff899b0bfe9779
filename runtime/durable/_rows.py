"""How records map onto the columns both SQL stores share."""

from __future__ import annotations

import json
import re

from flink_agents.runtime.durable.cipher import PayloadCipher, check_not_sealed
from flink_agents.runtime.durable.records import CallOutcome, CallRecord, DurableCallKey
from flink_agents.runtime.errors import DurableStoreError

__all__ = [
    "COLUMNS",
    "KEY_COLUMNS",
    "STORED_COLUMNS",
    "Row",
    "check_table_name",
    "key_params",
    "later_params",
    "outcome_to_columns",
    "record_from_row",
]

COLUMNS = "agent_key, seq, step, action, call_index, digest, status, payload"
"""Column order of :data:`Row` (what is read; every read is scoped to one pipeline)."""

STORED_COLUMNS = "pipeline, " + COLUMNS
"""Column order of a written row: the pipeline id, then :data:`COLUMNS`."""

KEY_COLUMNS = "pipeline, agent_key, seq, step, action, call_index"
"""The primary key."""

Row = tuple[str, int, int, str, int, str, str, "str | None"]

_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def check_table_name(table: str) -> str:
    """The table name if it is a plain SQL identifier, else :class:`ValueError`."""
    if not _TABLE_NAME.match(table):
        raise ValueError(f"table name must be a plain identifier (letters, digits, _): {table!r}")
    return table


def key_params(pipeline: str, key: DurableCallKey) -> tuple[str, str, int, int, str, int]:
    """The primary-key columns of the record at ``key`` of ``pipeline``, in order."""
    return (pipeline, key.agent_key, key.seq, key.step, key.action, key.call_index)


def later_params(pipeline: str, key: DurableCallKey) -> tuple[str, str, int, int, int, str, int]:
    """Parameters of the "this record and the later ones of its run" condition."""
    return (pipeline, key.agent_key, key.seq, key.step, key.step, key.action, key.call_index)


def outcome_to_columns(outcome: CallOutcome, cipher: PayloadCipher | None) -> tuple[str, str]:
    """``(status, payload)`` of an outcome, the payload sealed when ``cipher`` is given."""
    if outcome.status == "value":
        status, payload = "value", outcome.value_json or "null"
    else:
        status = "error"
        payload = json.dumps({"type": outcome.error_type, "message": outcome.error_message})
    return status, (payload if cipher is None else cipher.seal(payload))


def record_from_row(row: Row, cipher: PayloadCipher | None) -> CallRecord:
    """The record a stored row holds (its payload opened with ``cipher`` when sealed)."""
    agent_key, seq, step, action, call_index, digest, status, payload = row
    key = DurableCallKey(
        agent_key=agent_key, seq=seq, step=step, action=action, call_index=call_index
    )
    if status == "pending":
        return CallRecord(key=key, digest=digest)
    if payload is not None:
        where = str(key)
        if cipher is None:
            payload = check_not_sealed(payload, where)
        else:
            payload = cipher.open(payload, where)
    if status == "value":
        outcome = CallOutcome(status="value", value_json=payload)
    elif status == "error":
        try:
            error = json.loads(payload or "")
            outcome = CallOutcome(
                status="error", error_type=error["type"], error_message=error["message"]
            )
        except (ValueError, KeyError, TypeError):
            raise DurableStoreError(f"stored error outcome at {key} is malformed") from None
    else:
        raise DurableStoreError(f"stored record at {key} has unknown status {status!r}")
    return CallRecord(key=key, digest=digest, outcome=outcome)
