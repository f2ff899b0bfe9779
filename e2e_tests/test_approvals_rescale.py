"""Runs parked for approval move with their keys when the job is rescaled: a job of 2
agent subtasks parks a run per key and is stopped with a savepoint; the job restored from
it with 3 subtasks receives the decisions: each request was committed once, each approved
refund made once, each declined one never, and no question asked again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.approval_agent import (
    ApprovalAgent,
    QuestionsThenDecisions,
    key_of,
    output_line,
    present,
    request_line,
)
from e2e_tests.exactly_once import check_approvals_once
from e2e_tests.test_upgrades import _committed, _stop_with_savepoint_after

pytestmark = pytest.mark.flink

KEYS = 6
FILLERS = 150
"""Records between the questions and the decisions (~3 s): the first job is stopped with
a savepoint among them."""
RECORDS = QuestionsThenDecisions(KEYS, FILLERS)


def _job(
    stream_env: Callable[..., Any],
    output: Path,
    trace: Path,
    parallelism: int,
    restore_from: str | None = None,
) -> Any:
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from e2e_tests.standalone_job import committed_line_sink
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    options = {"execution.checkpointing.interval": "300 ms", "restart-strategy.type": "none"}
    if restore_from is not None:
        options["execution.state-recovery.path"] = restore_from
    env = stream_env(parallelism=parallelism, **options)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    agents_env.get_config().set("e2e.trace-dir", str(trace))
    pickled = Types.PICKLED_BYTE_ARRAY()
    records = (
        env.from_source(
            NumberSequenceSource(0, RECORDS.count - 1),
            WatermarkStrategy.no_watermarks(),
            "records",
        )
        .uid("numbers")
        .set_parallelism(1)
        .map(RECORDS, output_type=pickled)
        .uid("records")
        .set_parallelism(1)
        .filter(present)
        .uid("present")
        .set_parallelism(1)
    )
    applied = agents_env.from_datastream(records, key_selector=key_of).apply(
        ApprovalAgent(), uid="the-agent"
    )
    lines = (
        applied.to_datastream()
        .map(output_line, output_type=Types.STRING())
        .union(applied.to_approval_request_datastream().map(request_line, Types.STRING()))
    )
    lines.sink_to(committed_line_sink(str(output))).uid("sink").set_parallelism(1)
    return env


def test_parked_runs_move_with_their_keys_at_a_rescaled_restore(
    stream_env: Callable[..., Any], tmp_path: Path
) -> None:
    trace = tmp_path / "trace"
    trace.mkdir()
    folders = [tmp_path / "out-1", tmp_path / "out-2"]
    env = _job(stream_env, folders[0], trace, parallelism=2)
    savepoint = _stop_with_savepoint_after(env, folders, tmp_path / "sp", KEYS, "approvals-1")
    first = _committed(*folders)
    assert all("request" in line for line in first)  # parked: no answer before the restore

    _job(stream_env, folders[1], trace, parallelism=3, restore_from=savepoint).execute(
        "approvals-2"
    )
    lines = _committed(*folders)
    check_approvals_once(lines, trace, KEYS)  # restored parked: no question asked again
