"""In-memory keyed state and timers shaped like Flink's, to drive `KeyedRuns` in tests."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flink_agents.runtime.flink.keyed_runs import KeyedRuns
from flink_agents.runtime.flink.loop_thread import LoopThread
from flink_agents.runtime.keys import encode_key
from flink_agents.runtime.run_engine import RunEngine
from flink_agents.runtime.scheduler import RunScheduler


@dataclass
class KeySlice:
    record: str | None = None
    inputs: dict[int, str] = field(default_factory=dict)
    run: str | None = None


class FakeKeyState:
    """`KeyedAgentState` over one key's slice."""

    def __init__(self, backend: FakeBackend, key: str) -> None:
        self._slice = backend.slices.setdefault(key, KeySlice())

    def read_record(self) -> str | None:
        return self._slice.record

    def write_record(self, data: str) -> None:
        assert isinstance(data, str)
        self._slice.record = data

    def get_input(self, position: int) -> str | None:
        return self._slice.inputs.get(position)

    def put_input(self, position: int, data: str) -> None:
        assert isinstance(data, str)
        self._slice.inputs[position] = data

    def remove_input(self, position: int) -> None:
        del self._slice.inputs[position]

    def read_run(self) -> str | None:
        return self._slice.run

    def write_run(self, data: str | None) -> None:
        self._slice.run = data


class FakeTimers:
    """`KeyTimers` for one key over the backend's timer sets."""

    def __init__(self, backend: FakeBackend, key: str) -> None:
        self._backend = backend
        self._key = key

    def now(self) -> int:
        return self._backend.now()

    def register_poll(self, timestamp: int) -> None:
        self._backend.polls.add((timestamp, self._key))

    def delete_poll(self, timestamp: int) -> None:
        self._backend.polls.discard((timestamp, self._key))

    def register_end_of_input(self) -> None:
        self._backend.end_timers.add(self._key)


@dataclass
class FakeBackend:
    """Keyed state and timers of one subtask; `checkpoint` copies both."""

    slices: dict[str, KeySlice] = field(default_factory=dict)
    polls: set[tuple[int, str]] = field(default_factory=set)
    end_timers: set[str] = field(default_factory=set)

    def now(self) -> int:
        return int(time.time() * 1000)

    def checkpoint(self) -> FakeBackend:
        return copy.deepcopy(self)


class FakeSubtask:
    """One subtask: `KeyedRuns` plus a backend, driven like Flink's mailbox thread. Keys
    are agent keys: `KeyedRuns` gets their text, as the operator gets Flink's key; the
    backend's slices and timers are by the key itself, for readable tests."""

    def __init__(
        self,
        engine: RunEngine,
        backend: FakeBackend | None = None,
        *,
        max_in_flight: int = 100,
        max_buffered: int = 10000,
        snapshot_after: float = 0.0,
        max_cached_keys: int = 10000,
        inline: bool = True,
    ) -> None:
        self.backend = backend or FakeBackend()
        self.loop_thread = LoopThread(inline=inline)
        self.loop_thread.start()
        self.scheduler = RunScheduler(
            engine,
            max_in_flight=max_in_flight,
            max_buffered=max_buffered,
            snapshot_after_s=snapshot_after,
            launch=self.loop_thread.launch,
        )
        self.runs = KeyedRuns(engine, self.scheduler, max_cached_keys=max_cached_keys)
        self.emitted: list[Any] = []

    def close(self) -> None:
        self.loop_thread.close(before_stop=self.scheduler.cancel)

    def input(self, key: str, value: Any) -> None:
        b = self.backend
        self.emitted += self.runs.on_input(
            encode_key(key), value, FakeKeyState(b, key), FakeTimers(b, key)
        )

    def fire_due_polls(self) -> int:
        b = self.backend
        now = b.now()
        due = sorted(t for t in b.polls if t[0] <= now)
        for timestamp, key in due:
            b.polls.discard((timestamp, key))
            self.emitted += self.runs.on_poll(
                encode_key(key), timestamp, FakeKeyState(b, key), FakeTimers(b, key)
            )
        return len(due)

    def fire_polls_while(
        self,
        condition: Callable[[], bool] | None = None,
        *,
        after_each: Callable[[], None] | None = None,
        timeout: float = 10.0,
    ) -> int:
        """Fire due polls while `condition` holds (default: while polls are registered), at
        most `timeout` seconds, calling `after_each` after every round; the polls fired."""
        keep_going = condition or (lambda: bool(self.backend.polls))
        deadline = time.monotonic() + timeout
        fired = 0
        while keep_going() and time.monotonic() < deadline:
            fired += self.fire_due_polls()
            if after_each is not None:
                after_each()
            time.sleep(0.001)
        return fired

    def run_until_idle(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while self.backend.polls:
            if time.monotonic() > deadline:
                raise TimeoutError("keys still busy")
            if not self.fire_due_polls():
                time.sleep(0.001)

    def end_of_input(self) -> None:
        b = self.backend
        for key in sorted(b.end_timers):
            self.end_of_input_for(key)
        b.end_timers.clear()

    def end_of_input_for(self, key: str) -> None:
        """The final watermark reaches `key`."""
        b = self.backend
        self.emitted += self.runs.on_end_of_input(
            encode_key(key), FakeKeyState(b, key), FakeTimers(b, key)
        )
