"""The event types and statuses of execution lifecycle records (reserved: the framework's
own, never an agent's events)."""

from __future__ import annotations

from types import MappingProxyType
from typing import ClassVar

__all__ = ["ExecutionLifecycleEvents"]


class ExecutionLifecycleEvents:
    """The four lifecycle event types, and the status each record of one carries."""

    EXECUTION_STARTED_EVENT_TYPE = "_execution_started_event"
    EXECUTION_FINISHED_EVENT_TYPE = "_execution_finished_event"
    EXECUTION_FAILED_EVENT_TYPE = "_execution_failed_event"
    EXECUTION_REUSED_EVENT_TYPE = "_execution_reused_event"
    """An execution whose recorded outcome was used instead of executing it again."""

    STATUS_STARTED = "started"
    STATUS_SUCCESS = "success"
    STATUS_FAILED = "failed"
    STATUS_REUSED = "reused"

    STATUS_BY_EVENT_TYPE: ClassVar[MappingProxyType[str, str]] = MappingProxyType(
        {
            EXECUTION_STARTED_EVENT_TYPE: STATUS_STARTED,
            EXECUTION_FINISHED_EVENT_TYPE: STATUS_SUCCESS,
            EXECUTION_FAILED_EVENT_TYPE: STATUS_FAILED,
            EXECUTION_REUSED_EVENT_TYPE: STATUS_REUSED,
        }
    )
    EVENT_TYPES: ClassVar[frozenset[str]] = frozenset(STATUS_BY_EVENT_TYPE)

    @classmethod
    def expected_status(cls, event_type: object) -> str | None:
        """The status a record of ``event_type`` carries; None for any other type."""
        return cls.STATUS_BY_EVENT_TYPE.get(event_type) if isinstance(event_type, str) else None
