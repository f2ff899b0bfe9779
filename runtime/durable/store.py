"""The action-state store: where durable-call records live, outside Flink's checkpoints."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from flink_agents.runtime.durable.records import CallOutcome, CallRecord, DurableCallKey

__all__ = ["ActionStateStore", "ClientStore"]


class ActionStateStore(ABC):
    """Records of durable calls, keyed by :class:`DurableCallKey`.

    Implementations are safe to use from several threads at once, make every write durable
    before returning, and raise :class:`~flink_agents.runtime.errors.DurableStoreError`
    (never a driver exception) when the store cannot be reached: its subclass
    :class:`~flink_agents.runtime.errors.DurableStoreUnavailableError` when it may be reached
    again soon (read-only, locked, full, connection lost), so the caller retries. They open
    their connection lazily and pickle without it, so a configured store can be shipped to
    Flink workers.

    A store instance serves one pipeline (its ``pipeline`` id): every operation reads, writes,
    drops or prunes that pipeline's records only, so pipelines sharing a table never see each
    other's records (see :mod:`flink_agents.runtime.durable.pipeline`). ``agent_key`` is the
    run key's typed text (:func:`flink_agents.runtime.keys.encode_key`).

    "Later" within a run means: a later step, or the same step and action with a call index at
    or after the given one (see :meth:`drop_from`).
    """

    @abstractmethod
    def get(self, key: DurableCallKey) -> CallRecord | None:
        """The record at ``key``, or ``None``."""

    @abstractmethod
    def begin(self, key: DurableCallKey, digest: str) -> None:
        """Record that the call at ``key`` is about to run, with no outcome yet.

        In the same transaction, drops the record at ``key`` and every later record of the run
        (they belong to a code path that no longer happens).
        """

    @abstractmethod
    def begin_again(self, key: DurableCallKey, digest: str) -> None:
        """Record that the begun call at ``key`` is about to run again, with no outcome yet.

        Writes the record at ``key`` (begun, ``digest``) whatever it holds, inserting it if it
        is gone; unlike :meth:`begin` it keeps every other record of the run (calls that ran
        beside this one, e.g. in ``asyncio.gather``, replay). Its point is the write: a call
        found begun runs again only once a store that can be written says so.
        """

    @abstractmethod
    def record_outcome(self, key: DurableCallKey, digest: str, outcome: CallOutcome) -> None:
        """Store the outcome of the call at ``key`` (inserting the record if it is gone)."""

    @abstractmethod
    def load_run(self, agent_key: str, seq: int) -> list[CallRecord]:
        """Every record of one run, ordered by step, action and call index."""

    @abstractmethod
    def drop_from(self, key: DurableCallKey) -> int:
        """Delete the record at ``key`` and every later record of its run; return how many.

        Deleted: records of the same run with ``step > key.step``, and records with the same
        step and action and ``call_index >= key.call_index``. Other actions of the same step
        keep their records.
        """

    @abstractmethod
    def prune(self, agent_key: str, up_to_seq: int) -> int:
        """Delete every record of the runs of ``agent_key`` with ``seq <= up_to_seq``."""

    def prune_many(self, up_to_seq_by_key: Mapping[str, int]) -> int:
        """:meth:`prune` for many keys; stores override it to use one transaction."""
        return sum(self.prune(agent_key, seq) for agent_key, seq in up_to_seq_by_key.items())

    @abstractmethod
    def close(self) -> None:
        """Release the connection; a later call opens a new one."""


class ClientStore(ActionStateStore):
    """A store reached through clients made lazily (a database pool, Kafka clients): it
    pickles its configuration (the attributes ``_CONFIG`` names) and never its clients,
    which `_init_runtime_state` sets up empty again after unpickling."""

    _CONFIG: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def _init_runtime_state(self) -> None:
        """No clients yet: the state of a store before its first operation."""

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._CONFIG}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._init_runtime_state()
