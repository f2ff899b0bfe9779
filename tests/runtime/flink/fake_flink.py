"""In-memory keyed state and timers shaped like Flink's, to drive `KeyedRuns` in tests.

Tests control time with gates, not sleeps: a `StandInEngine` run with ``"gate": name``
waits until the test calls `FakeSubtask.open_gate(name)`. Waits for something the loop
thread does (`wait_until`, `FakeSubtask.fire_polls_while`) are bounded by `BOUND`, a safety
net that raises when reached, never the time a test expects to take.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from flink_agents.runtime.flink.keyed_runs import KeyedRuns
from flink_agents.runtime.flink.loop_thread import LoopThread
from flink_agents.runtime.keys import decode_key, encode_key
from flink_agents.runtime.run_engine import RunEngine
from flink_agents.runtime.scheduler import RunScheduler

BOUND = 10.0
"""Seconds a test waits at most for the loop thread (a safety net that fails the test)."""


def wait_until(condition: Callable[[], bool], timeout: float = BOUND) -> None:
    """Block until `condition` holds (it reads what the loop thread changes); TimeoutError
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not met within {timeout} s")
        time.sleep(0.001)


class ManualClock:
    """Time that moves only when the test moves it: `now` in milliseconds for the timers,
    `monotonic` in seconds (patch it in as a module's ``time``)."""

    def __init__(self, start_ms: int = 1_000_000) -> None:
        self.ms = start_ms

    def now(self) -> int:
        return self.ms

    def monotonic(self) -> float:
        return self.ms / 1000.0

    def advance(self, ms: int) -> None:
        self.ms += ms


@dataclass
class KeySlice:
    record: str | None = None
    inputs: dict[int, str] = field(default_factory=dict)
    run: str | None = None


class FakeKeyState:
    """`KeyedState` over one key's slice."""

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


class FakeOtherKeys:
    """`OtherKeys`: the slice and timers of another key, noted in the backend's
    `switches` (as the operator makes that key Flink's current one)."""

    def __init__(self, backend: FakeBackend) -> None:
        self._backend = backend

    @contextlib.contextmanager
    def at(self, key: str) -> Iterator[tuple[FakeKeyState, FakeTimers]]:
        agent_key = decode_key(key)
        self._backend.switches.append(agent_key)
        yield FakeKeyState(self._backend, agent_key), FakeTimers(self._backend, agent_key)


@dataclass
class FakeBackend:
    """Keyed state and timers of one subtask; `checkpoint` copies both."""

    slices: dict[str, KeySlice] = field(default_factory=dict)
    polls: set[tuple[int, str]] = field(default_factory=set)
    end_timers: set[str] = field(default_factory=set)
    clock: Callable[[], int] | None = None
    """Processing time in ms (None: the wall clock)."""
    switches: list[Any] = field(default_factory=list)
    """The keys a callback acted for besides its own (`FakeOtherKeys`), in order."""

    def now(self) -> int:
        return self.clock() if self.clock is not None else int(time.time() * 1000)

    def checkpoint(self) -> FakeBackend:
        return FakeBackend(
            copy.deepcopy(self.slices), set(self.polls), set(self.end_timers), self.clock
        )


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
        self.engine = engine
        self.loop_thread = LoopThread(inline=inline)
        self.loop_thread.start()
        self.loop = self._the_loop()
        self.wait_for_idle_loop()
        self.scheduler = RunScheduler(
            engine,
            max_in_flight=max_in_flight,
            max_buffered=max_buffered,
            snapshot_after_s=snapshot_after,
            launch=self.loop_thread.launch,
        )
        self.runs = KeyedRuns(engine, self.scheduler, max_cached_keys=max_cached_keys)
        self.emitted: list[Any] = []

    def _the_loop(self) -> asyncio.AbstractEventLoop:
        found: list[asyncio.AbstractEventLoop] = []
        ready = threading.Event()

        def grab() -> None:
            found.append(asyncio.get_running_loop())
            ready.set()

        self.loop_thread.launch(grab)
        if not ready.wait(BOUND):
            raise TimeoutError("the loop thread did not start")
        return found[0]

    def wait_for_idle_loop(self) -> None:
        """Block until the loop thread waits for I/O, having given up the loop: the next
        `launch` (an input's run) then runs inline on this thread, not posted. (Reads
        `LoopThread`'s ownership lock: a test knob, not something the operator needs.)"""
        owner: threading.Lock = self.loop_thread._owner
        if not owner.acquire(timeout=BOUND):
            raise TimeoutError("the loop thread never went idle")
        owner.release()

    def open_gate(self, name: str) -> None:
        """Let the engine's runs waiting at gate `name` go on, as a model's answer would:
        on the loop thread (an asyncio event is set on its loop)."""
        gate = self.engine.gate  # a StandInEngine
        self.loop.call_soon_threadsafe(lambda: gate(name).set())

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
        # Keys of different types (1, "1") do not compare: in time order, then by repr.
        due = sorted((t for t in b.polls if t[0] <= now), key=lambda t: (t[0], repr(t[1])))
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
        timeout: float = BOUND,
    ) -> int:
        """Fire due polls while `condition` holds (default: while polls are registered),
        calling `after_each` after every round; the polls fired. TimeoutError if it still
        holds after `timeout` seconds."""
        keep_going = condition or (lambda: bool(self.backend.polls))
        deadline = time.monotonic() + timeout
        fired = 0
        while keep_going():
            if time.monotonic() > deadline:
                raise TimeoutError(f"still going after {timeout} s")
            fired += self.fire_due_polls()
            if after_each is not None:
                after_each()
            time.sleep(0.001)
        return fired

    def fire_polls_until(self, condition: Callable[[], bool], timeout: float = BOUND) -> int:
        """Fire due polls until `condition` holds; TimeoutError after `timeout` seconds."""
        return self.fire_polls_while(lambda: not condition(), timeout=timeout)

    def run_until_idle(self, timeout: float = BOUND) -> None:
        deadline = time.monotonic() + timeout
        while self.backend.polls:
            if time.monotonic() > deadline:
                raise TimeoutError("keys still busy")
            if not self.fire_due_polls():
                time.sleep(0.001)

    def end_of_input(self) -> None:
        b = self.backend
        for key in sorted(b.end_timers, key=repr):
            self.end_of_input_for(key)
        b.end_timers.clear()

    def end_of_input_for(self, key: str) -> None:
        """The final watermark reaches `key` (it waits for the key's runs: after `BOUND`
        seconds they are cancelled, and the key's work left over fails the test)."""
        watchdog = threading.Timer(
            BOUND, lambda: self.loop.call_soon_threadsafe(self.scheduler.cancel)
        )
        watchdog.start()
        try:
            for outputs in self.drain(key):
                self.emitted += outputs
        finally:
            watchdog.cancel()

    def drain(self, key: str) -> Iterator[list[Any]]:
        """The end-of-input callback of `key` as `KeyedRuns` yields it (each key's outputs
        as its runs finish); the caller consumes it (no watchdog)."""
        b = self.backend
        return self.runs.on_end_of_input(
            encode_key(key), FakeKeyState(b, key), FakeTimers(b, key), FakeOtherKeys(b)
        )
