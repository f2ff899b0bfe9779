"""A poison record on the mini-cluster, under each `input-failure.policy`.

`fail`: the job fails (after its restart strategy gave up) with the original exception's
type and message, the key and the input's sequence number in the error. `skip`: every other
input is answered exactly once, and the poison input becomes one failure record on the error
stream.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext

pytestmark = pytest.mark.flink

KEYS, INPUTS, POISON, CRASH = 5, 8, 13, 31


class Crash(BaseException):
    """The task dies (not an input failure: no policy skips it)."""


async def _answer(event: Event, ctx: RunnerContext) -> None:
    n = event.attributes["input"]["n"]
    await asyncio.sleep(0.01 * (n % 3))
    if n == POISON:
        raise ValueError(f"poison record {n}")
    marker = ctx.config.get("e2e.crash-marker")
    if n == CRASH and marker:
        try:
            open(str(marker), "x").close()  # once
        except FileExistsError:
            pass
        else:
            raise Crash("the task dies once")
    ctx.send_event(OutputEvent(output={"key": ctx.key, "n": n}))


class PoisonAgent(Agent):
    """Answers `{"key", "n"}` with itself, except input `POISON`, which raises."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("answer", [InputEvent], _answer)


def _job(stream_env: Callable[..., Any], policy: str, crash_marker: Path | None = None) -> Any:
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(
        parallelism=2,
        **{
            "execution.checkpointing.interval": "200 ms",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "2",
            "restart-strategy.fixed-delay.delay": "100 ms",
        },
    )
    agents_env = FlinkAgentsExecutionEnvironment(env)
    agents_env.get_config().set("input-failure.policy", policy)
    if crash_marker is not None:
        agents_env.get_config().set("e2e.crash-marker", str(crash_marker))
    numbers = env.from_source(
        NumberSequenceSource(0, KEYS * INPUTS - 1), WatermarkStrategy.no_watermarks(), "numbers"
    ).set_parallelism(1)
    records = numbers.map(
        lambda i: {"key": f"k{i % KEYS}", "n": i}, output_type=Types.PICKLED_BYTE_ARRAY()
    ).set_parallelism(1)
    agent = agents_env.from_datastream(records, key_selector=lambda r: r["key"]).apply(
        PoisonAgent()
    )
    tagged = Types.PICKLED_BYTE_ARRAY()
    outputs = agent.to_datastream().map(lambda o: ("output", o), output_type=tagged)
    errors = agent.to_error_datastream().map(lambda r: ("error", r), output_type=tagged)
    return outputs.union(errors)


def test_a_poison_record_under_fail_ends_the_job_with_the_original_exception(
    stream_env: Callable[..., Any],
) -> None:
    both = _job(stream_env, "fail")
    with pytest.raises(Exception) as failed, both.execute_and_collect("poison-fail") as results:
        list(results)
    text = str(failed.value)
    assert "Recovery is suppressed" in text  # the restart strategy gave up
    assert "ValueError: poison record 13" in text
    assert "key 'k3', seq 2" in text


@pytest.mark.parametrize("restore", [False, True], ids=["no_restore", "restore"])
def test_a_poison_record_under_skip_is_one_error_record(
    stream_env: Callable[..., Any], tmp_path: Path, restore: bool
) -> None:
    """With `restore`, the task also dies once later (a restore from a checkpoint): the
    error record stays exactly once, like the outputs."""
    marker = tmp_path / "crashed" if restore else None
    both = _job(stream_env, "skip", marker)
    with both.execute_and_collect("poison-skip") as results:
        got = list(results)
    if marker is not None:
        assert marker.exists()
    outputs = [o for kind, o in got if kind == "output"]
    errors = [r for kind, r in got if kind == "error"]
    counts = Counter(o["n"] for o in outputs)
    assert set(counts) == set(range(KEYS * INPUTS)) - {POISON}
    assert max(counts.values()) == 1
    assert len(errors) == 1
    record = dict(errors[0])
    assert record.pop("failed_at")
    assert record == {
        "key": "k3",
        "input": {"key": "k3", "n": POISON},
        "action": "answer",
        "event_type": "_input_event",
        "error_type": "ValueError",
        "message": "poison record 13",
        "attempts": 1,
    }
