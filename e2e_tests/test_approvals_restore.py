"""Runs parked for approval survive a restore on the mini-cluster: questions park their
runs, a checkpoint takes them, the job fails and restarts from it, and the decisions that
come after resume them: every approval request out once, an approved refund made once, a
declined one never, one answer per question."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.approval_agent import ApprovalAgent, call_id_of
from flink_agents.api import ApprovalRequest, ToolApproval

pytestmark = pytest.mark.flink

KEYS = 6
FILLERS = 60
"""Records between the questions and the failure: ~1.2 s, for checkpoints to complete
with the runs parked."""
FAIL_AT = KEYS + FILLERS


class Records:
    """Record ``i`` of the source: a question per key, fillers (None), then the failure
    (once), then the decisions: even keys approved, odd ones declined."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __call__(self, i: int) -> Any:
        time.sleep(0.02)
        if i < KEYS:
            return {"key": f"k{i}"}
        if i < FAIL_AT:
            return None
        if i == FAIL_AT:
            try:
                Path(self.marker).touch(exist_ok=False)
            except FileExistsError:
                return None  # failed before: go on
            raise RuntimeError("injected failure while runs are parked")
        n = i - FAIL_AT - 1
        key = f"k{n}"
        return ToolApproval(call_id=call_id_of(key), approved=n % 2 == 0, reason="no", key=key)


def _present(record: Any) -> bool:
    return record is not None


def _key_of(record: Any) -> str:
    return record.key if isinstance(record, ToolApproval) else record["key"]


def _tagged_output(output: Any) -> tuple[str, str, str]:
    return ("output", output["key"], output["reply"])


def _tagged_request(request: Any) -> tuple[str, str, str]:
    assert isinstance(request, ApprovalRequest)
    return ("request", request.key, request.call_id)


def test_parked_runs_survive_a_restart_from_a_checkpoint(
    stream_env: Callable[..., Any], tmp_path: Path
) -> None:
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(
        parallelism=2,
        **{
            "execution.checkpointing.interval": "200 ms",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "3",
            "restart-strategy.fixed-delay.delay": "200 ms",
        },
    )
    agents_env = FlinkAgentsExecutionEnvironment(env)
    agents_env.get_config().set("e2e.trace-dir", str(tmp_path))
    marker = tmp_path / "failed-once"
    source = (
        env.from_source(
            NumberSequenceSource(0, FAIL_AT + KEYS), WatermarkStrategy.no_watermarks(), "records"
        )
        .set_parallelism(1)
        .map(Records(str(marker)), output_type=Types.PICKLED_BYTE_ARRAY())
        .set_parallelism(1)
        .filter(_present)
        .set_parallelism(1)
    )
    applied = agents_env.from_datastream(source, key_selector=_key_of).apply(ApprovalAgent())
    pickled = Types.PICKLED_BYTE_ARRAY()
    tagged = (
        applied.to_datastream()
        .map(_tagged_output, output_type=pickled)
        .union(applied.to_approval_request_datastream().map(_tagged_request, output_type=pickled))
    )
    with tagged.execute_and_collect("e2e-approvals-restore") as results:
        items = list(results)

    assert marker.exists()  # the job failed and restarted while the runs were parked
    # Restored parked from a checkpoint, not started again from a replayed question.
    asked = sorted(p.read_text() for p in tmp_path.glob("ask-*.log"))
    assert asked == sorted(f"k{n}" for n in range(KEYS))
    requests = sorted(i[1:] for i in items if i[0] == "request")
    assert requests == sorted((f"k{n}", call_id_of(f"k{n}")) for n in range(KEYS))  # once each
    outputs = dict(i[1:] for i in items if i[0] == "output")
    assert len([i for i in items if i[0] == "output"]) == KEYS
    for n in range(KEYS):
        reply = outputs[f"k{n}"]
        if n % 2 == 0:
            assert reply == f"done: refunded k{n}"
        else:
            assert reply.startswith("declined: tool 'refund' was not run: a person declined")
    refunds = sorted(p.read_text() for p in tmp_path.glob("refund-*.log"))
    assert refunds == [f"k{n}" for n in range(0, KEYS, 2)]  # approved: once; declined: never
