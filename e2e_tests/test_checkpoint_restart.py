"""Checkpointing on, an action fails once: the job restarts from the last checkpoint and
every input has exactly one output, in order per key, with keyed memory consistent."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.agents import CheckpointedAgent

pytestmark = pytest.mark.flink

KEYS, INPUTS = 10, 8
FAIL_ON = "k3/6"


def _record(i: int) -> dict[str, Any]:
    time.sleep(0.015)
    return {"key": f"k{i % KEYS}", "n": i // KEYS}  # key-major: k0/0, k1/0, ..., k0/1


def test_restart_from_checkpoint_after_a_failing_action(
    stream_env: Callable[..., Any], tmp_path: Path
) -> None:
    from pyflink.common import WatermarkStrategy
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
    config = agents_env.get_config()
    config.set("e2e.trace-dir", str(tmp_path))
    config.set("e2e.fail-on", FAIL_ON)
    config.set("e2e.work-seconds", "0.1")
    # The input trickles in (about 1.2 s) from a checkpointed source, so checkpoints are
    # taken while runs progress (once a bounded input has ended, the operator thread waits
    # for the last runs and no checkpoint completes until they are done).
    # One source subtask and one map subtask keep each key's inputs in order.
    numbers = env.from_source(
        NumberSequenceSource(0, KEYS * INPUTS - 1), WatermarkStrategy.no_watermarks(), "numbers"
    ).set_parallelism(1)
    source = numbers.map(_record).set_parallelism(1)
    out = (
        agents_env.from_datastream(source, key_selector=lambda r: r["key"])
        .apply(CheckpointedAgent())
        .to_datastream()
    )
    with out.execute_and_collect("e2e-checkpoint-restart") as results:
        outputs = list(results)

    failed_at = float((tmp_path / "failed-once").read_text())  # the failure happened
    pairs = [(o["key"], o["n"]) for o in outputs]
    assert len(pairs) == len(set(pairs)) == KEYS * INPUTS  # each input exactly once
    per_key: dict[str, list[int]] = defaultdict(list)
    for o in outputs:
        per_key[o["key"]].append(o["n"])
        assert o["seen"] == list(range(o["n"] + 1))  # restored memory matches the outputs
    assert all(ns == list(range(INPUTS)) for ns in per_key.values())

    # The restart resumed from a checkpoint: inputs finished before it were not run again.
    traces = [
        line.split() for f in tmp_path.glob("trace-*.log") for line in f.read_text().splitlines()
    ]
    prepares = [t for t in traces if t[1] == "prepare"]
    before = sum(1 for t in prepares if float(t[0]) <= failed_at)
    after = len(prepares) - before
    assert after < KEYS * INPUTS, (before, after)
    failing = [t for t in traces if t[1] == "work" and f"{t[2]}/{t[3]}" == FAIL_ON]
    assert len(failing) >= 2  # failed once, then succeeded
