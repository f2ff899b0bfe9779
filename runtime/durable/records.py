"""The data of the durable-call record: call keys, outcomes and stored records."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CallOutcome", "CallRecord", "DurableCallKey"]


class DurableCallKey(BaseModel):
    """Where a call sits in an agent run; the same position on replay finds its record."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_key: str
    """The run's key as its typed text (``flink_agents.runtime.keys.encode_key``: canonical
    JSON, so the keys ``1`` and ``"1"`` are ``1`` and ``"1"`` and never share records)."""
    seq: int = Field(ge=0)
    """Input sequence number of the run within its key."""
    step: int = Field(ge=0)
    """Action executions the run had completed when the calling action started."""
    action: str
    """Name of the calling action."""
    call_index: int = Field(ge=0)
    """0 for the action's first durable call, 1 for its second, ..."""

    def __str__(self) -> str:
        return (
            f"key={self.agent_key!r} seq={self.seq} step={self.step} "
            f"action={self.action!r} call={self.call_index}"
        )


class CallOutcome(BaseModel):
    """What a finished call produced: a value (as tagged JSON) or an exception."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["value", "error"]
    """``value`` when the call returned, ``error`` when it raised."""
    value_json: str | None = None
    """The returned value as the text of its tagged JSON (see
    :func:`flink_agents.runtime.durable.outcome.value_outcome`)."""
    error_type: str | None = None
    """``module:qualname`` of the raised exception's class."""
    error_message: str | None = None
    """``str()`` of the raised exception."""


class CallRecord(BaseModel):
    """One stored call: its key, the digest it was made with, and its outcome once known."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: DurableCallKey
    digest: str
    """Digest of the function identity and arguments (see ``digest.call_digest``)."""
    outcome: CallOutcome | None = None
    """``None`` while the call is begun but its outcome is not recorded (in flight or lost)."""

    @property
    def pending(self) -> bool:
        """True when the call was begun and has no recorded outcome."""
        return self.outcome is None
