"""`InternalBaseLongTermMemory`: what the runtime needs of a long-term memory backend
beyond what actions see (upstream's module).

Upstream's runner switches one backend object from key to key (`switch_context`) before
each action. Here actions of different keys run concurrently, so the runtime never
relies on that: it calls `scoped_call` with the key of the running input, and each
action gets its own view (`flink_agents.runtime.memory.long_term.ActionLongTermMemory`).
`switch_context` and `configure_observation` are kept for upstream's code and tests.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

from flink_agents.api.memory.long_term_memory import BaseLongTermMemory

__all__ = ["InternalBaseLongTermMemory", "LongTermOp"]

LongTermOp = Literal["add", "get", "search", "delete", "delete_set"]
"""The operations `scoped_call` makes."""


class InternalBaseLongTermMemory(BaseLongTermMemory, ABC):
    """A long-term memory backend as the runtime drives it."""

    @abstractmethod
    def configure_observation(
        self,
        *,
        update_observation_enabled: bool,
        get_observation_enabled: bool,
        search_observation_enabled: bool,
    ) -> None:
        """Which operations the backend's own observation buffer records."""

    @abstractmethod
    def switch_context(
        self,
        key: str,
        *,
        observation_id: str,
        observation_suppressed: bool = False,
    ) -> None:
        """Make ``key`` the scope of the operations called through the public methods."""

    @abstractmethod
    def scoped_call(self, key: str, op: LongTermOp, memory_set: str, params: dict[str, Any]) -> Any:
        """One operation on the set ``memory_set`` of ``key``, JSON in and JSON out (so the
        runtime can record it as a durable call): ``add`` returns the changed entries
        (``{"id", "event", "memory"}``), ``get`` and ``search`` the entries found
        (``{"id", "memory", "score", "created_at", "updated_at", "metadata"}``), the
        deletes None."""
