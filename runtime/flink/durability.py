"""Durable execution on Flink: each subtask's action-state store, and pruning it.

`open_subtask_durability(config, context)` opens the store the agent option
`durable-execution.store` names (checked at once: an unreachable store fails the task with
`DurableStoreError`, so the job restarts instead of running calls unrecorded), wraps it in
a `DurableCallLog` for the subtask's `AgentEngine`, and starts a `CheckpointPruner` when it
can learn about completed checkpoints.

Pruning. PyFlink 2.3 has no checkpoint-complete hook, so the pruner watches the JobManager's
REST API instead. The rule: a run may be pruned once a *completed* checkpoint was *triggered*
after the operator acknowledged the run (removed its input from keyed state and emitted its
outputs). Every operator-thread callback before the trigger time happens before the
checkpoint's barrier reaches the operator, so that checkpoint's state holds the run as done
and its outputs are downstream of the barrier; Flink restores from the latest completed
checkpoint, so the run is never replayed. The keyed operator reports each acknowledged run
(`run_acknowledged(key, seq)`, stamped with the wall clock; `key` is the Flink key, i.e. the
user key's typed text `encode_key(key)`, which is also the `agent_key` of the run's records);
the pruner polls `/jobs/<id>/checkpoints` every `durable-execution.prune.interval-s` seconds and
prunes, per key, every run acknowledged more than `durable-execution.prune.clock-skew-s` seconds
before the latest completed checkpoint's `trigger_timestamp`. Without a REST address or job id
it does not prune (and says so in the log): keeping records is always safe.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from flink_agents.api.core_options import AgentConfigOptions, AgentConfiguration
from flink_agents.runtime.durable import DurableCallLog
from flink_agents.runtime.durable.store_url import open_durable_call_log
from flink_agents.runtime.errors import DurableStoreError
from flink_agents.runtime.flink.compat.pyflink import java_runtime_context

__all__ = [
    "CheckpointPruner",
    "CheckpointSource",
    "FinishedRuns",
    "RestCheckpointSource",
    "SubtaskDurability",
    "job_id_of",
    "open_subtask_durability",
    "rest_address_of",
]

_LOG = logging.getLogger(__name__)

# ---------------------------------------------------------------------------- the decision


@dataclass
class _Batch:
    """Runs acknowledged in one stretch of time: the newest seq per key, the latest time."""

    up_to_seq: dict[str, int] = field(default_factory=dict)
    last_ms: int = 0


class FinishedRuns:
    """Acknowledged runs waiting for a checkpoint to cover them (thread-safe).

    Runs are grouped in batches (one per `seal`, i.e. per watcher tick); a batch is pruned
    as a whole once its *latest* acknowledgment is older than a completed checkpoint's trigger
    time minus `clock_skew_ms`. Keeping at most `max_batches` batches (merging the oldest two:
    the merged batch only becomes prunable later, never earlier) bounds memory when no
    checkpoint completes.
    """

    def __init__(self, *, clock_skew_ms: int = 2000, max_batches: int = 1000) -> None:
        if clock_skew_ms < 0 or max_batches < 2:
            raise ValueError("clock_skew_ms must be >= 0 and max_batches >= 2")
        self.clock_skew_ms = clock_skew_ms
        self.max_batches = max_batches
        self._lock = threading.Lock()
        self._sealed: deque[_Batch] = deque()
        self._open = _Batch()

    def add(self, key: str, seq: int, now_ms: int) -> None:
        """The operator acknowledged run `(key, seq)` at wall-clock time `now_ms`."""
        with self._lock:
            batch = self._open
            if seq > batch.up_to_seq.get(key, -1):
                batch.up_to_seq[key] = seq
            if now_ms > batch.last_ms:
                batch.last_ms = now_ms

    def seal(self) -> None:
        """Close the open batch (later runs go to a new one)."""
        with self._lock:
            self._seal_locked()

    def _seal_locked(self) -> None:
        if not self._open.up_to_seq:
            return
        self._sealed.append(self._open)
        self._open = _Batch()
        while len(self._sealed) > self.max_batches:
            first, second = self._sealed.popleft(), self._sealed.popleft()
            for key, seq in first.up_to_seq.items():
                if seq > second.up_to_seq.get(key, -1):
                    second.up_to_seq[key] = seq
            second.last_ms = max(first.last_ms, second.last_ms)
            self._sealed.appendleft(second)

    def covered_by(self, checkpoint_trigger_ms: int) -> dict[str, int]:
        """Take the runs a completed checkpoint triggered at `checkpoint_trigger_ms` covers:
        per key, the newest such seq (every earlier seq of the key is covered too)."""
        limit = checkpoint_trigger_ms - self.clock_skew_ms
        covered: dict[str, int] = {}
        with self._lock:
            self._seal_locked()
            while self._sealed and self._sealed[0].last_ms < limit:
                for key, seq in self._sealed.popleft().up_to_seq.items():
                    if seq > covered.get(key, -1):
                        covered[key] = seq
        return covered

    def give_back(self, runs: dict[str, int]) -> None:
        """Runs whose pruning failed: keep them for the next attempt."""
        if not runs:
            return
        with self._lock:
            self._sealed.appendleft(_Batch(up_to_seq=dict(runs), last_ms=0))

    def __len__(self) -> int:
        with self._lock:
            return sum(len(b.up_to_seq) for b in self._sealed) + len(self._open.up_to_seq)


# ---------------------------------------------------------------------------- checkpoints


class CheckpointSource(Protocol):
    """Where the pruner learns about completed checkpoints."""

    def latest_completed_trigger_ms(self) -> int | None:
        """Trigger time (JobManager wall clock, ms) of the latest completed checkpoint."""
        ...


def _get_json(url: str, timeout: float) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


class RestCheckpointSource:
    """The JobManager REST API: `GET <rest_address>/jobs/<job_id>/checkpoints`."""

    def __init__(self, rest_address: str, job_id: str, *, timeout_s: float = 5.0) -> None:
        self.rest_address = rest_address.rstrip("/")
        self.job_id = job_id
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"RestCheckpointSource({self.rest_address!r}, {self.job_id!r})"

    def latest_completed_trigger_ms(self) -> int | None:
        answer = _get_json(f"{self.rest_address}/jobs/{self.job_id}/checkpoints", self.timeout_s)
        completed = ((answer or {}).get("latest") or {}).get("completed")
        if not completed or completed.get("trigger_timestamp") is None:
            return None
        return int(completed["trigger_timestamp"])


def find_job_id(rest_address: str, task_name: str, timeout_s: float = 5.0) -> str | None:
    """The one running job with a vertex named `task_name` (None if none or several)."""
    base = rest_address.rstrip("/")
    overview = _get_json(f"{base}/jobs/overview", timeout_s) or {}
    matches: list[str] = []
    for job in overview.get("jobs", []):
        if job.get("state") not in ("RUNNING", "CREATED", "INITIALIZING", "RESTARTING"):
            continue
        details = _get_json(f"{base}/jobs/{job['jid']}", timeout_s) or {}
        if any(v.get("name") == task_name for v in details.get("vertices", [])):
            matches.append(str(job["jid"]))
    return matches[0] if len(matches) == 1 else None


def rest_address_of(flink_config: dict[str, str]) -> str | None:
    """`http://<rest.address>:<port>` from a Flink configuration (None without a fixed port)."""
    host = flink_config.get("rest.address")
    port = flink_config.get("rest.port")
    if not port:
        bind_port = flink_config.get("rest.bind-port", "")
        port = bind_port if bind_port.isdigit() else None
    if not host or not port or port == "0":
        return None
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"http://{host}:{port}"


def _java_context(runtime_context: Any) -> Any:
    return java_runtime_context(runtime_context) if runtime_context is not None else None


def _flink_config_of(runtime_context: Any) -> dict[str, str]:
    """The TaskManager's Flink configuration (thread mode only; else empty)."""
    java = _java_context(runtime_context)
    if java is None:
        return {}
    try:
        conf = java.getTaskManagerRuntimeInfo().getConfiguration()
        return {str(k): str(v) for k, v in dict(conf.toMap()).items()}
    except Exception:
        return {}


def job_id_of(runtime_context: Any) -> str | None:
    """The Flink job id (hex) from a PyFlink RuntimeContext in thread mode; None elsewhere."""
    java = _java_context(runtime_context)
    if java is None:
        return None
    try:
        return str(java.getJobInfo().getJobId().toHexString())
    except Exception:
        return None


# ---------------------------------------------------------------------------- the pruner


class CheckpointPruner:
    """Prunes the records of runs that a completed checkpoint covers (background thread)."""

    def __init__(
        self,
        log: DurableCallLog,
        source: CheckpointSource,
        *,
        interval_s: float = 5.0,
        clock_skew_ms: int = 2000,
        name: str = "flink-agents-durable-pruner",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.log = log
        self.source = source
        self.interval_s = interval_s
        self.finished = FinishedRuns(clock_skew_ms=clock_skew_ms)
        self.pruned_runs = 0
        self._clock = clock
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_trigger_ms: int | None = None

    def run_acknowledged(self, key: str, seq: int) -> None:
        """Called on the operator thread when run `(key, seq)` was acknowledged.

        `key` is the key's typed text (`flink_agents.runtime.keys.encode_key`, the Flink key),
        as the run's records hold it in `DurableCallKey.agent_key`.
        """
        self.finished.add(key, seq, int(self._clock() * 1000))

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(self.interval_s + 10)

    def prune_once(self) -> int:
        """One look at the latest completed checkpoint; returns how many keys were pruned."""
        self.finished.seal()
        try:
            trigger_ms = self.source.latest_completed_trigger_ms()
        except (OSError, ValueError, urllib.error.URLError) as exc:
            _LOG.debug("durable pruning: no checkpoint information (%s)", exc)
            return 0
        if trigger_ms is None or trigger_ms == self._last_trigger_ms:
            return 0
        covered = self.finished.covered_by(trigger_ms)
        if not covered:
            self._last_trigger_ms = trigger_ms
            return 0
        try:
            self.log.prune_many(covered)
        except DurableStoreError as exc:
            # Keeping records is safe; try again at the next tick.
            _LOG.warning("durable pruning failed, retrying later: %s", exc)
            self.finished.give_back(covered)
            return 0
        self._last_trigger_ms = trigger_ms
        self.pruned_runs += len(covered)
        return len(covered)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.prune_once()
            except Exception:  # never let pruning take the task down
                _LOG.exception("durable pruning failed")


# ---------------------------------------------------------------------------- per subtask


class SubtaskDurability:
    """A subtask's durable call log and, when it can prune, its pruner."""

    def __init__(self, call_log: DurableCallLog, pruner: CheckpointPruner | None) -> None:
        self.call_log = call_log
        self.pruner = pruner

    def run_acknowledged(self, key: str, seq: int) -> None:
        """Run `(key, seq)` was acknowledged (`key`: the `encode_key` text, see the pruner)."""
        if self.pruner is not None:
            self.pruner.run_acknowledged(key, seq)

    def close(self) -> None:
        if self.pruner is not None:
            self.pruner.stop()
        self.call_log.close()


def open_subtask_durability(
    config: AgentConfiguration,
    task_name: str,
    subtask_index: int,
    runtime_context: Any = None,
    *,
    agent: Any = None,
    operator_name: str | None = None,
) -> SubtaskDurability | None:
    """The subtask's durable call log from the agent options (None when no store is set).

    Its records belong to the pipeline `durable-execution.pipeline-id` names; unset, to the
    `module:qualname` of `agent`'s class plus `/operator_name` when given (the agent
    operator's name), or to `default` when no agent is given. The store is reached once
    here: when it cannot be, or its table holds another pipeline's records (and
    `durable-execution.store.shared` is not set), `DurableStoreError` fails the task (the
    job restarts) rather than letting runs make unrecorded calls.
    """
    log = open_durable_call_log(config, agent=agent, operator_name=operator_name)
    if log is None:
        return None
    rest_address = config.get(
        AgentConfigOptions.DURABLE_EXECUTION_PRUNE_REST_ADDRESS
    ) or rest_address_of(_flink_config_of(runtime_context))
    job_id = job_id_of(runtime_context)
    if rest_address is not None and job_id is None:
        try:
            job_id = find_job_id(rest_address, task_name)
        except (OSError, ValueError):
            job_id = None
    if rest_address is None or job_id is None:
        _LOG.warning(
            "durable execution on %r (subtask %d): no JobManager REST address or job id "
            "(set durable-execution.prune.rest-address), so completed checkpoints cannot "
            "be seen and records are NOT pruned; the store grows with every run",
            log.store,
            subtask_index,
        )
        return SubtaskDurability(log, None)
    pruner = CheckpointPruner(
        log,
        RestCheckpointSource(rest_address, job_id),
        interval_s=config.get(AgentConfigOptions.DURABLE_EXECUTION_PRUNE_INTERVAL),
        clock_skew_ms=int(config.get(AgentConfigOptions.DURABLE_EXECUTION_PRUNE_CLOCK_SKEW) * 1000),
        name=f"flink-agents-durable-pruner-{subtask_index}",
    )
    pruner.start()
    _LOG.info(
        "durable execution on %r (subtask %d): pruning runs covered by completed checkpoints "
        "of job %s (%s)",
        log.store,
        subtask_index,
        job_id,
        rest_address,
    )
    return SubtaskDurability(log, pruner)
