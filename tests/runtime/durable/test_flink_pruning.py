"""Durable execution on Flink: opening the subtask's store and the pruning decision.

`flink_agents.runtime.flink.durability` (no Flink job: a fake checkpoint source, real stores).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.core_options import AgentConfigOptions, AgentConfiguration
from flink_agents.runtime.durable import (
    ActionStateStore,
    DurableCallKey,
    DurableCallLog,
    DurableStoreError,
    DurableStoreUnavailableError,
    SqliteActionStateStore,
)
from flink_agents.runtime.flink import durability
from flink_agents.runtime.flink.durability import (
    CheckpointPruner,
    FinishedRuns,
    RestCheckpointSource,
    open_subtask_durability,
    rest_address_of,
)
from flink_agents.runtime.flink.operator import SubtaskContext
from flink_agents.runtime.metrics import InMemoryMetricGroup

# ------------------------------------------------------------------ the decision


def test_only_runs_acknowledged_before_the_trigger_minus_skew_are_covered() -> None:
    runs = FinishedRuns(clock_skew_ms=100)
    runs.add("a", 0, now_ms=1_000)
    runs.add("b", 0, now_ms=1_050)
    runs.seal()
    runs.add("a", 1, now_ms=2_000)
    runs.seal()
    # Checkpoint triggered at 1_100: the first batch ended at 1_050, not before 1_000.
    assert runs.covered_by(1_100) == {}
    # Triggered at 1_200: the first batch (ended 1_050 < 1_100) is covered, not the second.
    assert runs.covered_by(1_200) == {"a": 0, "b": 0}
    assert runs.covered_by(1_200) == {}  # taken once
    assert len(runs) == 1
    assert runs.covered_by(2_101) == {"a": 1}
    assert len(runs) == 0


def test_a_batch_is_covered_only_when_its_latest_run_is() -> None:
    runs = FinishedRuns(clock_skew_ms=0)
    runs.add("a", 3, now_ms=100)
    runs.add("a", 4, now_ms=500)  # same batch, later
    assert runs.covered_by(400) == {}  # seq 3 alone would be, but the batch is held whole
    assert runs.covered_by(501) == {"a": 4}  # newest seq per key (earlier seqs included)


def test_the_open_batch_counts_and_seq_never_goes_back() -> None:
    runs = FinishedRuns(clock_skew_ms=0)
    runs.add("a", 5, now_ms=10)
    runs.add("a", 2, now_ms=11)  # an older seq reported late does not lower the bound
    assert runs.covered_by(12) == {"a": 5}


def test_merging_old_batches_never_makes_a_run_prunable_earlier() -> None:
    runs = FinishedRuns(clock_skew_ms=0, max_batches=2)
    for i in range(5):
        runs.add(f"k{i}", i, now_ms=100 * (i + 1))
        runs.seal()
    # Batches were merged: no trigger before the latest merged run covers any of them.
    covered_early = runs.covered_by(150)
    for key, seq in covered_early.items():
        assert 100 * (seq + 1) < 150, (key, seq)
    rest = runs.covered_by(10_000)
    assert {**covered_early, **rest} == {f"k{i}": i for i in range(5)}


def test_given_back_runs_are_offered_again() -> None:
    runs = FinishedRuns(clock_skew_ms=0)
    runs.add("a", 1, now_ms=10)
    taken = runs.covered_by(20)
    runs.give_back(taken)
    assert runs.covered_by(20) == {"a": 1}


def test_invalid_settings() -> None:
    with pytest.raises(ValueError, match="clock_skew_ms must be >= 0"):
        FinishedRuns(clock_skew_ms=-1)
    with pytest.raises(ValueError, match="max_batches >= 2"):
        FinishedRuns(max_batches=1)


# ------------------------------------------------------------------ the pruner


class FakeCheckpoints:
    def __init__(self) -> None:
        self.trigger_ms: int | None = None
        self.error: Exception | None = None

    def latest_completed_trigger_ms(self) -> int | None:
        if self.error is not None:
            raise self.error
        return self.trigger_ms


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _record_run(log: DurableCallLog, key: str, seq: int) -> None:
    call = DurableCallKey(agent_key=key, seq=seq, step=0, action="chat", call_index=0)
    log.execute_sync(call, str.upper, (f"{key}/{seq}",), {})


def _seqs(store: ActionStateStore, key: str, seqs: range) -> list[int]:
    return [s for s in seqs if store.load_run(key, s)]


def test_pruner_deletes_covered_runs_and_keeps_the_rest(tmp_path: Path) -> None:
    store = SqliteActionStateStore(tmp_path / "d.sqlite")
    log = DurableCallLog(store)
    checkpoints, clock = FakeCheckpoints(), Clock()
    pruner = CheckpointPruner(log, checkpoints, clock_skew_ms=2000, clock=clock)
    for seq in range(3):
        _record_run(log, "a", seq)
        pruner.run_acknowledged("a", seq)  # acknowledged at t = 1000 s
    assert pruner.prune_once() == 0  # no completed checkpoint yet
    clock.now = 1_010.0
    _record_run(log, "a", 3)
    pruner.run_acknowledged("a", 3)  # acknowledged at t = 1010 s
    _record_run(log, "a", 4)  # still running: never acknowledged
    checkpoints.trigger_ms = 1_005_000  # triggered between the two acknowledgments
    assert pruner.prune_once() == 1
    assert _seqs(store, "a", range(5)) == [3, 4]
    checkpoints.trigger_ms = 1_011_000  # 1010 s is within the clock skew (2 s) of 1011 s
    assert pruner.prune_once() == 0
    checkpoints.trigger_ms = 1_012_500
    assert pruner.prune_once() == 1
    assert _seqs(store, "a", range(5)) == [4]
    assert pruner.pruned_runs == 2
    log.close()


def test_pruner_without_checkpoint_information_keeps_everything(tmp_path: Path) -> None:
    store = SqliteActionStateStore(tmp_path / "d.sqlite")
    log = DurableCallLog(store)
    checkpoints, clock = FakeCheckpoints(), Clock()
    pruner = CheckpointPruner(log, checkpoints, clock_skew_ms=0, clock=clock)
    _record_run(log, "a", 0)
    pruner.run_acknowledged("a", 0)
    checkpoints.error = OSError("connection refused")
    assert pruner.prune_once() == 0
    assert _seqs(store, "a", range(1)) == [0]
    checkpoints.error = None
    checkpoints.trigger_ms = 2_000_000  # the JobManager answers again: pruned then
    assert pruner.prune_once() == 1
    assert _seqs(store, "a", range(1)) == []
    log.close()


class FailingPrune(SqliteActionStateStore):
    fail = True

    def prune_many(self, up_to_seq_by_key: Any) -> int:
        if self.fail:
            raise DurableStoreError("store down")
        return super().prune_many(up_to_seq_by_key)


def test_a_failed_prune_is_retried(tmp_path: Path) -> None:
    store = FailingPrune(tmp_path / "d.sqlite")
    log = DurableCallLog(store)
    checkpoints, clock = FakeCheckpoints(), Clock()
    pruner = CheckpointPruner(log, checkpoints, clock_skew_ms=0, clock=clock)
    _record_run(log, "a", 0)
    pruner.run_acknowledged("a", 0)
    checkpoints.trigger_ms = 2_000_000
    assert pruner.prune_once() == 0
    assert _seqs(store, "a", range(1)) == [0]
    store.fail = False
    assert pruner.prune_once() == 1
    assert _seqs(store, "a", range(1)) == []
    log.close()


def test_pruner_thread_starts_and_stops(tmp_path: Path) -> None:
    log = DurableCallLog(SqliteActionStateStore(tmp_path / "d.sqlite"))
    checkpoints = FakeCheckpoints()
    checkpoints.trigger_ms = 10**15
    pruner = CheckpointPruner(log, checkpoints, interval_s=0.01, clock_skew_ms=0)
    _record_run(log, "a", 0)
    pruner.run_acknowledged("a", 0)
    pruner.start()
    import time

    deadline = time.monotonic() + 5
    while pruner.pruned_runs == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    pruner.stop()
    assert pruner.pruned_runs == 1
    log.close()


# ------------------------------------------------------------------ checkpoint source


def test_rest_source_reads_the_latest_completed_checkpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers: dict[str, Any] = {
        "http://jm:8081/jobs/j1/checkpoints": {
            "latest": {"completed": {"id": 7, "trigger_timestamp": 1234}, "failed": None}
        },
        "http://jm:8081/jobs/j2/checkpoints": {"latest": {"completed": None}},
    }
    monkeypatch.setattr(durability, "_get_json", lambda url, timeout: answers[url])
    assert RestCheckpointSource("http://jm:8081/", "j1").latest_completed_trigger_ms() == 1234
    assert RestCheckpointSource("http://jm:8081", "j2").latest_completed_trigger_ms() is None


def test_job_id_found_by_task_name(monkeypatch: pytest.MonkeyPatch) -> None:
    answers: dict[str, Any] = {
        "http://jm/jobs/overview": {
            "jobs": [
                {"jid": "old", "state": "FINISHED"},
                {"jid": "j1", "state": "RUNNING"},
                {"jid": "j2", "state": "RUNNING"},
            ]
        },
        "http://jm/jobs/j1": {"vertices": [{"name": "Source"}, {"name": "agent -> Map"}]},
        "http://jm/jobs/j2": {"vertices": [{"name": "other"}]},
    }
    monkeypatch.setattr(durability, "_get_json", lambda url, timeout: answers[url])
    assert durability.find_job_id("http://jm", "agent -> Map") == "j1"
    assert durability.find_job_id("http://jm", "nothing") is None


def test_rest_address_from_flink_configuration() -> None:
    assert rest_address_of({"rest.address": "jm", "rest.port": "8081"}) == "http://jm:8081"
    assert rest_address_of({"rest.address": "0.0.0.0", "rest.bind-port": "9000"}) == (
        "http://127.0.0.1:9000"
    )
    assert rest_address_of({"rest.address": "localhost", "rest.bind-port": "0"}) is None
    assert rest_address_of({"rest.address": "localhost", "rest.bind-port": "8081-8090"}) is None
    assert rest_address_of({}) is None


# ------------------------------------------------------------------ opening the store


def _context() -> SubtaskContext:
    return SubtaskContext(
        task_name="agent", subtask_index=0, parallelism=1, attempt=0, metrics=InMemoryMetricGroup()
    )


def test_no_store_configured_means_no_durable_execution() -> None:
    assert open_subtask_durability(AgentConfiguration(), "agent", 0) is None


def test_sqlite_store_from_the_option_without_rest_does_not_prune(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = AgentConfiguration(
        {AgentConfigOptions.DURABLE_EXECUTION_STORE.key: f"sqlite:///{tmp_path}/d.db"}
    )
    subtask = open_subtask_durability(config, "agent", 0)
    assert subtask is not None
    assert subtask.pruner is None
    assert isinstance(subtask.call_log.store, SqliteActionStateStore)
    assert (tmp_path / "d.db").exists()  # reached at once
    assert "NOT pruned" in caplog.text
    subtask.close()


def test_the_subtask_store_belongs_to_the_agents_pipeline(tmp_path: Path) -> None:
    from flink_agents.api.agents.agent import Agent

    config = AgentConfiguration(
        {AgentConfigOptions.DURABLE_EXECUTION_STORE.key: f"sqlite:///{tmp_path}/d.db"}
    )
    subtask = open_subtask_durability(config, "agent", 0, agent=Agent(), operator_name="triage")
    assert subtask is not None and isinstance(subtask.call_log.store, SqliteActionStateStore)
    assert subtask.call_log.store.pipeline == "flink_agents.api.agents.agent:Agent/triage"
    subtask.close()
    config.set(AgentConfigOptions.DURABLE_EXECUTION_PIPELINE_ID, "orders")
    subtask = open_subtask_durability(config, "agent", 0, agent=Agent(), operator_name="triage")
    assert subtask is not None and isinstance(subtask.call_log.store, SqliteActionStateStore)
    assert subtask.call_log.store.pipeline == "orders"
    subtask.close()
    config.set(AgentConfigOptions.DURABLE_EXECUTION_PIPELINE_ID, None)
    subtask = open_subtask_durability(config, "agent", 0)  # no agent given: "default"
    assert subtask is not None and isinstance(subtask.call_log.store, SqliteActionStateStore)
    assert subtask.call_log.store.pipeline == "default"
    subtask.close()


def test_rest_address_option_and_job_id_start_a_pruner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class JavaContext:
        def getJobInfo(self) -> Any:
            class Info:
                def getJobId(self) -> Any:
                    class JobId:
                        def toHexString(self) -> str:
                            return "abc"

                    return JobId()

            return Info()

    class RuntimeContext:
        _runtime_context = JavaContext()

    config = AgentConfiguration(
        {
            "durable-execution.store": str(tmp_path / "d.db"),
            "durable-execution.prune.rest-address": "http://jm:1",
            "durable-execution.prune.interval-s": "60",
        }
    )
    subtask = open_subtask_durability(config, "agent", 0, RuntimeContext())
    assert subtask is not None and subtask.pruner is not None
    source = subtask.pruner.source
    assert isinstance(source, RestCheckpointSource)
    assert (source.rest_address, source.job_id) == ("http://jm:1", "abc")
    subtask.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_store_fails_at_open() -> None:
    url = f"postgresql://u:secret@127.0.0.1:{_closed_port()}/db?connect_timeout=2"
    config = AgentConfiguration(
        {"durable-execution.store": url, "durable-execution.store.retry-timeout-s": 0}
    )
    with pytest.raises(DurableStoreUnavailableError) as info:
        open_subtask_durability(config, "agent", 0)
    assert "secret" not in str(info.value)


def test_engine_factory_gives_the_runner_the_configured_log(tmp_path: Path) -> None:
    from flink_agents.api.agents.agent import Agent
    from flink_agents.runtime.flink.engine_factory import AgentEngineFactory

    config = {"durable-execution.store": f"sqlite:///{tmp_path}/d.db"}
    engine = AgentEngineFactory(Agent(), config)(_context())
    try:
        assert isinstance(engine.call_log, DurableCallLog)
        assert (
            engine.acknowledgments is not None and engine.acknowledgments.pruner is None
        )  # no REST
    finally:
        engine.close()
    engine = AgentEngineFactory(Agent())(_context())
    assert engine.call_log is None
    engine.close()
