"""Module-level types and helpers for the durable tests (importable by name, as replay needs)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Mapping
from enum import Enum
from typing import Any

from pydantic import BaseModel

from flink_agents.runtime.durable import (
    ActionStateStore,
    CallOutcome,
    CallRecord,
    DurableCallKey,
    DurableStoreError,
)


class Ticket(BaseModel):
    """A pydantic result, as a tool that files tickets would return."""

    id: int
    title: str
    tags: list[str] = []


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class NeedsTwoArgs(Exception):
    """An exception that cannot be rebuilt from its message alone."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


class Counter:
    """A callable that counts its calls and returns something different each time."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            self.calls.append((args, kwargs))
            return {"call": len(self.calls), "args": list(args), "kwargs": kwargs}

    @property
    def count(self) -> int:
        return len(self.calls)


def key(
    call_index: int = 0,
    *,
    agent_key: str = "user-1",
    seq: int = 0,
    step: int = 0,
    action: str = "act",
) -> DurableCallKey:
    return DurableCallKey(
        agent_key=agent_key, seq=seq, step=step, action=action, call_index=call_index
    )


class FlakyStore(ActionStateStore):
    """Wraps a store; fails chosen operations with DurableStoreError and logs every one."""

    def __init__(self, inner: ActionStateStore, fail: set[str] | None = None) -> None:
        self.inner = inner
        self.fail = fail or set()
        self.operations: list[str] = []

    def _check(self, operation: str) -> None:
        self.operations.append(operation)
        if operation in self.fail:
            raise DurableStoreError(f"injected failure of {operation}")

    def get(self, key: DurableCallKey) -> CallRecord | None:
        self._check("get")
        return self.inner.get(key)

    def begin(self, key: DurableCallKey, digest: str) -> None:
        self._check("begin")
        self.inner.begin(key, digest)

    def begin_again(self, key: DurableCallKey, digest: str) -> None:
        self._check("begin_again")
        self.inner.begin_again(key, digest)

    def record_outcome(self, key: DurableCallKey, digest: str, outcome: CallOutcome) -> None:
        self._check("record_outcome")
        self.inner.record_outcome(key, digest, outcome)

    def load_run(self, agent_key: str, seq: int) -> list[CallRecord]:
        self._check("load_run")
        return self.inner.load_run(agent_key, seq)

    def drop_from(self, key: DurableCallKey) -> int:
        self._check("drop_from")
        return self.inner.drop_from(key)

    def prune(self, agent_key: str, up_to_seq: int) -> int:
        self._check("prune")
        return self.inner.prune(agent_key, up_to_seq)

    def prune_many(self, up_to_seq_by_key: Mapping[str, int]) -> int:
        self._check("prune_many")
        return self.inner.prune_many(up_to_seq_by_key)

    def close(self) -> None:
        self.inner.close()


SENT: list[str] = []
"""What :func:`send_email` sent in this process."""


def send_email(to: str) -> str:
    """A call with a side effect. With DURABLE_TEST_DIE_IN_CALL set, the process dies in it."""
    if os.environ.get("DURABLE_TEST_DIE_IN_CALL"):
        os.kill(os.getpid(), signal.SIGKILL)
    SENT.append(to)
    return f"sent to {to}"
