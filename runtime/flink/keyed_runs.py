"""The keyed agent operator's logic, free of PyFlink: keyed state, timers, runs.

Per key, keyed state holds (all JSON, never pickles):

- the key record: `{"head", "tail", "end_timer", "emitted", "key_state"}`: the agent's
  `KeyState` for the key as of the last acknowledged progress, the positions of the inputs
  waiting in the input map, whether the end-of-input timer is registered, and how many
  outputs the run at `head` has had emitted while it was still going;
- the input map: position -> encoded input, for every accepted input whose run has not
  finished and been emitted (the first one may be in progress);
- the run: a JSON snapshot of the run of the input at `head`, if it had started.

Every callback runs on the operator thread for the current key. `on_input` stores the
input and hands it to the `RunScheduler` (`flink_agents.runtime.scheduler`, the same one
the local runner uses); `on_poll` (a processing-time timer, with an
interval growing with the time the key has been busy) writes what the loop published and
returns finished outputs. `on_end_of_input` is an event-time timer at the end of time,
fired by the final watermark of a bounded input. A source that ends early sends that
watermark long before the work ends, and no processing-time timer fires while a callback
waits: so the first end-of-input callback drains every key, not only its own. Until no run
of any key is left it waits for the next key whose runs send or finish, acknowledges it
with that key made current (`OtherKeys`: the operator switches Flink's current key, as the
timers of that key would) and yields its outputs, which the operator emits at once; the
end-of-input timers of the keys drained so find nothing left. Timers are keyed state too,
so after a restore they fire for exactly the keys that had work, which is then resumed
from keyed state.

What keyed state holds is mirrored in memory for recently used keys, so the common path
(an input for a known key) reads no state; evicted keys are read back on their next input.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, Field

from flink_agents.api.approvals import ToolApproval
from flink_agents.api.redaction import redact
from flink_agents.runtime.errors import (
    AgentRunFailedError,
    ApprovalNotPendingError,
    InputRefusedError,
)
from flink_agents.runtime.keys import decode_key, refused_key
from flink_agents.runtime.run_engine import RunEngine
from flink_agents.runtime.scheduler import KeyProgress, KeyQueue, RunScheduler, admit

__all__ = [
    "END_OF_INPUT_TIMER",
    "KeyTimers",
    "KeyedRuns",
    "KeyedState",
    "OtherKeys",
    "PollPolicy",
]

_LOG = logging.getLogger(__name__)

END_OF_INPUT_TIMER = 2**63 - 2
"""Event-time timer that only the final watermark of a bounded input (Long.MAX) reaches."""

_EVICT_SCAN = 64
"""Keys an input looks at, at most, for idle ones to forget beyond `max_cached_keys`."""


class KeyedState(Protocol):
    """The current key's keyed state (Flink's, per key): its key record, its input map
    and its run snapshot (see the module doc). Not the agent's `KeyState`, which the key
    record holds."""

    def read_record(self) -> str | None: ...

    def write_record(self, data: str) -> None: ...

    def get_input(self, position: int) -> str | None: ...

    def put_input(self, position: int, data: str) -> None: ...

    def remove_input(self, position: int) -> None: ...

    def read_run(self) -> str | None: ...

    def write_run(self, data: str | None) -> None: ...


class KeyTimers(Protocol):
    """The current key's timers."""

    def now(self) -> int:
        """Processing time in milliseconds."""
        ...

    def register_poll(self, timestamp: int) -> None: ...

    def delete_poll(self, timestamp: int) -> None: ...

    def register_end_of_input(self) -> None: ...


class OtherKeys(Protocol):
    """Acting for another key than the callback's (the end-of-input drain): Flink's
    keyed state and timers are those of the current key, which `at` switches to `key`
    (its text) for the `with` block, and back after it."""

    def at(self, key: str) -> AbstractContextManager[tuple[KeyedState, KeyTimers]]: ...


class PollPolicy(BaseModel):
    """When to look for progress of a busy key.

    Until the key has been busy for as long as runs that wait usually take (`expected_ms`,
    which the scheduler learns), the next look is at that moment; after it, every
    `factor` x the time past it, within bounds. A run that finishes when expected is seen
    after one or two looks; one that takes much longer is looked at less and less often.
    """

    min_interval_ms: int = Field(default=5, ge=1)
    max_interval_ms: int = Field(default=1000, ge=1)
    factor: float = Field(default=0.25, gt=0)

    def interval_ms(self, busy_ms: float, expected_ms: float = 0.0) -> int:
        if busy_ms < expected_ms:
            wait = expected_ms - busy_ms
        else:
            wait = (busy_ms - expected_ms) * self.factor
        return max(self.min_interval_ms, min(self.max_interval_ms, int(wait)))


@dataclass(eq=False)
class _KeyEntry:
    """Operator-thread view of a key in memory: what keyed state holds, and its timer."""

    queue: KeyQueue
    head: int
    tail: int
    end_timer: bool
    """The end-of-input timer is registered."""
    key_state_json: str | None
    run_written: bool
    busy_since: float
    poll_at: int | None = None
    emitted: int = 0
    """Outputs of the run at `head` emitted before it finished (a run that sends outputs
    while going on is looked at again soon, not when runs usually end)."""
    approval_timer: int | None = None
    """The processing-time timer registered for the parked run's approval deadline."""


def _record_json(entry: _KeyEntry) -> str:
    key_state = entry.key_state_json if entry.key_state_json is not None else "null"
    end_timer = "true" if entry.end_timer else "false"
    return (
        f'{{"head":{entry.head},"tail":{entry.tail},"end_timer":{end_timer},'
        f'"emitted":{entry.emitted},"key_state":{key_state}}}'
    )


class KeyedRuns:
    """Per-key bookkeeping of agent runs for the keyed operator (one per subtask).

    Keys stay in memory while idle (up to `max_cached_keys`, least recently used evicted),
    so a key's next input needs no state read.
    """

    def __init__(
        self,
        engine: RunEngine,
        scheduler: RunScheduler,
        poll: PollPolicy | None = None,
        *,
        max_cached_keys: int = 10000,
        on_acknowledged: Callable[[str, int], None] | None = None,
    ) -> None:
        self._engine = engine
        # Told (key, position of the last acknowledged input) after finished runs are
        # acknowledged; a key's input positions are its runs' sequence numbers (both count
        # the key's accepted inputs from 0). Durable execution prunes with it.
        self._on_acknowledged = on_acknowledged
        self._scheduler = scheduler
        self._poll = poll or PollPolicy()
        self._max_cached_keys = max_cached_keys
        self._entries: dict[str, _KeyEntry] = {}  # insertion order = least recently used first
        self._failure_logged = False
        self._draining = False
        """An end-of-input timer fired: the scheduler notes the keys that publish."""

    @property
    def busy_keys(self) -> int:
        """Keys with inputs queued or running."""
        return sum(1 for e in self._entries.values() if not self._scheduler.is_idle(e.queue))

    def raise_if_failed(self) -> None:
        """A run failed under `input-failure.policy: fail`: the task fails with it (logged
        once, redacted: the log has the story in thread mode too)."""
        failure = self._scheduler.failure
        if failure is None:
            return
        error = AgentRunFailedError(failure)
        if not self._failure_logged:
            self._failure_logged = True
            trace = redact("".join(traceback.format_exception(failure)))
            _LOG.error("%s\n%s", error, trace)
        raise error

    # ------------------------------------------------------------------ callbacks

    def on_input(self, key: str, value: Any, state: KeyedState, timers: KeyTimers) -> list[Any]:
        """Accept an input for `key`; returns outputs ready to emit."""
        scheduler = self._scheduler
        self.raise_if_failed()
        engine = self._engine
        refused = refused_key(key)  # the key selector found no key text
        try:  # refused at the door (no run, no state): its key or its value
            if refused is not None:
                raise InputRefusedError(refused.name, refused.cause_type, refused.cause_message)
            encoded, decoded = admit(engine, key, value)
        except InputRefusedError as exc:
            if engine.failure_retries is None:
                raise
            return [engine.refuse_input(refused.key if refused else decode_key(key), value, exc)]
        entry = self._entries.pop(key, None)
        if entry is None:
            entry = self._load(key, state, busy_only=False)
            assert entry is not None
        self._entries[key] = entry
        queue = entry.queue
        outputs: list[Any] = []
        if scheduler.has_news(queue):
            outputs = self._acknowledge(entry, state)
        if isinstance(decoded, ToolApproval):
            return outputs + self._on_approval(entry, key, value, decoded, state, timers)
        if scheduler.is_idle(queue):
            entry.busy_since = time.monotonic()
        waiting = entry.tail - entry.head
        # The run may finish inside `submit` (when it needs no real waiting).
        scheduler.submit(queue, decoded, len(encoded))
        if waiting == 0 and scheduler.is_idle(queue) and not queue.parked:
            # Accepted and finished within this callback: no checkpoint can fall in between,
            # so the input never needs to be in keyed state; only the key record changes.
            # (It still takes its position: positions are the key's run sequence numbers.)
            entry.tail += 1
            outputs.extend(self._acknowledge(entry, state, write_record=True, in_state=False))
        else:
            # Stored before looking for news: the run, going on as `is_idle` looked, may
            # have finished since on the loop thread (its acknowledgment removes it).
            self._store_input(entry, encoded, state, timers)
            if scheduler.has_news(queue):  # what the run sent before it had to wait
                outputs.extend(self._acknowledge(entry, state))
            state.write_record(_record_json(entry))
            if entry.poll_at is None:
                self._schedule_poll(entry, timers)
        self._watch_deadline(entry, timers)
        self._evict()
        if scheduler.wait_for_capacity():
            self.raise_if_failed()  # otherwise a failure surfaces in the next callback
        return outputs

    def _on_approval(
        self,
        entry: _KeyEntry,
        key: str,
        value: Any,
        approval: ToolApproval,
        state: KeyedState,
        timers: KeyTimers,
    ) -> list[Any]:
        """A `ToolApproval` input: applied to the key's parked run, its snapshot written in
        this callback (so a checkpoint holds the decision with the input that made it), or
        refused (`ApprovalNotPendingError`: a failure record under `skip`). It takes no
        input position: it is no run of its own."""
        scheduler = self._scheduler
        try:
            resumed = scheduler.decide(entry.queue, key, approval)
        except ApprovalNotPendingError as exc:
            engine = self._engine
            if engine.failure_retries is None:
                raise
            return [engine.refuse_input(decode_key(key), value, exc)]
        if resumed:
            entry.busy_since = time.monotonic()
        outputs = self._acknowledge(entry, state, write_record=True)
        if entry.poll_at is None and not scheduler.settled(entry.queue):
            self._schedule_poll(entry, timers)
        return outputs

    def _watch_deadline(self, entry: _KeyEntry, timers: KeyTimers) -> None:
        """A parked run with an approval timeout: a processing-time timer at its deadline
        (keyed state: after a restore it fires and finds the run in state)."""
        deadline = self._scheduler.approval_deadline_ms(entry.queue)
        if deadline is not None and deadline != entry.approval_timer:
            timers.register_poll(deadline)
            entry.approval_timer = deadline

    def _busy_entry(self, key: str, state: KeyedState) -> _KeyEntry | None:
        """The key's entry, loaded from keyed state (after a restore) when it has work."""
        entry = self._entries.get(key)
        if entry is None:
            entry = self._load(key, state, busy_only=True)
            if entry is not None:
                self._entries[key] = entry
        return entry

    def on_poll(self, key: str, timestamp: int, state: KeyedState, timers: KeyTimers) -> list[Any]:
        """A processing-time timer fired for `key`; returns outputs ready to emit."""
        self.raise_if_failed()
        entry = self._busy_entry(key, state)
        if entry is None:
            return []
        scheduler = self._scheduler
        if entry.queue.parked and scheduler.time_out(entry.queue, timers.now()):
            entry.busy_since = time.monotonic()
            entry.approval_timer = None
        outputs = self._acknowledge(entry, state, write_record=True)
        if scheduler.settled(entry.queue):
            entry.poll_at = None
        elif entry.poll_at is None or entry.poll_at <= timestamp:
            self._schedule_poll(entry, timers)
        self._watch_deadline(entry, timers)
        return outputs

    def on_end_of_input(
        self, key: str, state: KeyedState, timers: KeyTimers, other_keys: OtherKeys
    ) -> Iterator[list[Any]]:
        """The final watermark reached `key`: wait until no run of any key is left, and
        yield the outputs of every key's runs as they come (the drain).

        No poll timer fires while this callback waits (for as long as the slowest key's
        runs take, when a bounded source ended early), so the drain does their work: a
        key whose runs published something is acknowledged at once, its keyed state
        written with it as the current key (`other_keys`), and its outputs yielded for
        the operator to emit. Later end-of-input timers of keys drained so find nothing
        left to do.
        """
        scheduler = self._scheduler
        self.raise_if_failed()
        entry = self._busy_entry(key, state)  # after a restore: loaded, its runs resumed
        if not self._draining:
            # From the first end-of-input timer on, the scheduler notes the keys that
            # publish; the keys with news from before are found once, here.
            self._draining = True
            scheduler.watch_news()
            news = [e.queue for e in self._entries.values() if scheduler.has_news(e.queue)]
        else:
            news = []
        while True:
            for queue in news:
                outputs = self._drain_key(queue, key, state, timers, other_keys)
                if outputs:
                    yield outputs
            self.raise_if_failed()
            news = scheduler.wait_for_news()
            if not news:
                break
        self.raise_if_failed()
        if entry is None:
            return
        scheduler.wait_idle(entry.queue)
        self.raise_if_failed()
        outputs = self._acknowledge(entry, state, write_record=True)
        if entry.queue.parked:
            _LOG.warning(
                "key %s: the input ended while its run waits for approval of a tool call; "
                "the run ends with the job (docs/approvals.md)",
                key,
            )
        if not scheduler.settled(entry.queue):
            raise RuntimeError(f"key {key}: work left after the end of input")
        if entry.poll_at is not None:
            timers.delete_poll(entry.poll_at)
            entry.poll_at = None
        if outputs:
            yield outputs

    def _drain_key(
        self,
        queue: KeyQueue,
        current: str,
        state: KeyedState,
        timers: KeyTimers,
        other_keys: OtherKeys,
    ) -> list[Any]:
        """During the drain: what `queue`'s key published, acknowledged in its keyed state
        (as `on_poll` does); its outputs. A snapshot alone waits: no checkpoint falls
        inside the callback, so writing it now would only cost the time of the writes
        (the run's end, or its next output, is news again)."""
        entry = self._entries.get(queue.key)
        if entry is None or entry.queue is not queue or not self._scheduler.has_outputs(queue):
            return []
        if queue.key == current:
            return self._acknowledge_polled(entry, state, timers)
        with other_keys.at(queue.key) as (key_state, key_timers):
            return self._acknowledge_polled(entry, key_state, key_timers)

    def _acknowledge_polled(
        self, entry: _KeyEntry, state: KeyedState, timers: KeyTimers
    ) -> list[Any]:
        """Acknowledge what the key's runs published; its poll timer goes once it is
        settled (the drain looks for the rest)."""
        outputs = self._acknowledge(entry, state, write_record=True)
        if entry.poll_at is not None and self._scheduler.settled(entry.queue):
            timers.delete_poll(entry.poll_at)
            entry.poll_at = None
        self._watch_deadline(entry, timers)
        return outputs

    # ------------------------------------------------------------------ internals

    def _store_input(
        self, entry: _KeyEntry, encoded: str, state: KeyedState, timers: KeyTimers
    ) -> None:
        """Keep an accepted input in keyed state until its run is acknowledged (the caller
        writes the key record)."""
        state.put_input(entry.tail, encoded)
        entry.tail += 1
        if not entry.end_timer:
            timers.register_end_of_input()
            entry.end_timer = True

    def _load(self, key: str, state: KeyedState, *, busy_only: bool) -> _KeyEntry | None:
        """`key` from keyed state (a new key, an evicted idle key, or after a restore)."""
        raw = state.read_record()
        head = tail = emitted = 0
        end_timer = False
        key_state_json: str | None = None
        run_json: str | None = None
        inputs: list[tuple[Any, int]] = []
        if raw is not None:
            record = json.loads(raw)
            head, tail = int(record["head"]), int(record["tail"])
            end_timer = bool(record["end_timer"])
            emitted = int(record.get("emitted", 0))
            if record.get("key_state") is not None:
                key_state_json = json.dumps(record["key_state"], separators=(",", ":"))
        if head == tail and busy_only:
            return None
        if head < tail:
            decode = self._engine.decode_input
            for position in range(head, tail):
                data = state.get_input(position)
                if data is None:
                    raise RuntimeError(f"key {key}: input {position} missing from state")
                inputs.append((decode(data), len(data)))
            run_json = state.read_run()
        queue = self._scheduler.create(
            key,
            decode_key(key),
            key_state_json=key_state_json,
            run_json=run_json,
            inputs=inputs,
            taken=emitted if run_json is not None else 0,
        )
        return _KeyEntry(
            queue=queue,
            head=head,
            tail=tail,
            end_timer=end_timer,
            key_state_json=key_state_json,
            run_written=run_json is not None,
            busy_since=time.monotonic(),
            emitted=emitted,
        )

    def _acknowledge(
        self,
        entry: _KeyEntry,
        state: KeyedState,
        *,
        write_record: bool = False,
        in_state: bool = True,
    ) -> list[Any]:
        """Write what the scheduler published for this key; return the outputs to emit:
        those of finished runs not emitted yet, then those the run in progress has sent.

        The key record is written here when `write_record`, else by the caller (it holds
        how many outputs of the run in progress were emitted). Without `in_state`, the
        finished inputs were never written to the input map.
        """
        progress: KeyProgress = self._scheduler.take(entry.queue)
        finished = len(progress.finished)
        if finished == 0 and not progress.snapshot_changed and not progress.sent:
            return []
        outputs: list[Any] = []
        for outputs_of_run in progress.finished:
            outputs += outputs_of_run
        if progress.sent:
            # Emitted with the snapshot that holds them (written below): after a restore
            # the resumed run has them, and the record says they went out.
            outputs += progress.sent
            entry.busy_since = time.monotonic()
        elif progress.snapshot_changed and progress.published_at > entry.busy_since:
            # The run went on to its next step (a tool round trip's second model call, say):
            # that wait is timed from its start, so the next look is when such waits usually
            # end, not every few milliseconds as if the first wait had run long.
            entry.busy_since = progress.published_at
        entry.emitted = progress.taken
        if in_state:
            for position in range(entry.head, entry.head + finished):
                state.remove_input(position)
        entry.head += finished
        if finished and self._on_acknowledged is not None:
            self._on_acknowledged(entry.queue.key, entry.head - 1)
        if progress.run_json is not None:
            if progress.snapshot_changed or not entry.run_written:
                state.write_run(progress.run_json)
                entry.run_written = True
        elif entry.run_written:
            state.write_run(None)
            entry.run_written = False
        entry.key_state_json = progress.key_state_json
        if write_record:
            state.write_record(_record_json(entry))
        if finished:
            entry.busy_since = time.monotonic()
        return outputs

    def _evict(self) -> None:
        """Forget the least recently used idle keys beyond `max_cached_keys`."""
        excess = len(self._entries) - self._max_cached_keys
        if excess <= 0:
            return
        scheduler = self._scheduler
        entries = self._entries
        # A bounded scan per input: with many busy keys beyond the cache, a scan as long as
        # the excess made each input slower than the last.
        for key in list(itertools.islice(entries, min(2 * excess + 16, _EVICT_SCAN))):
            entry = entries[key]
            del entries[key]
            if entry.poll_at is None and scheduler.release(entry.queue):
                excess -= 1
                if excess == 0:
                    return
            else:  # busy: it cannot go now; to the back, so the next scan starts past it
                entries[key] = entry

    def _schedule_poll(self, entry: _KeyEntry, timers: KeyTimers) -> None:
        busy_ms = (time.monotonic() - entry.busy_since) * 1000.0
        expected_ms = 0.0 if entry.emitted else self._scheduler.typical_wait_s * 1000.0
        at = timers.now() + self._poll.interval_ms(busy_ms, expected_ms)
        timers.register_poll(at)
        entry.poll_at = at
