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
from tests.fakes.values import nested_lists

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


BAD_KEYS: dict[int, Any] = {
    3: "k\udfff",  # accepted once, then a UnicodeDecodeError in Flink naming no key
    9: None,
    14: float("nan"),
    18: float("inf"),
    22: (),
    27: {},
    33: 10**5000,
}
"""Inputs (by n) whose key has no text, with that key."""

BAD_VALUES: dict[int, Any] = {
    5: "\ud800",
    11: 10**5000,
    24: nested_lists(10_000),  # cannot even be pickled
    37: b"\xff\xfe",
}
"""Inputs (by n) whose value agent state cannot keep, with that value."""


def _door_record(i: int) -> dict[str, Any]:
    if i in BAD_KEYS:
        return {"key": BAD_KEYS[i], "n": i}
    record: dict[str, Any] = {"key": f"k{i % KEYS}", "n": i}
    if i in BAD_VALUES:
        record["bad"] = BAD_VALUES[i]
    return record


async def _echo_n(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output={"key": ctx.key, "n": event.attributes["input"]["n"]}))


class EchoAgent(Agent):
    def __init__(self) -> None:
        super().__init__()
        self.add_action("echo", [InputEvent], _echo_n)


def test_bad_keys_and_values_under_skip_are_failure_records_and_the_job_goes_on(
    stream_env: Callable[..., Any],
) -> None:
    """Keys and values that cannot be kept, between good inputs: each is one failure record
    naming its key (checked before anything reaches Java), every good input is answered
    once, and the job ends normally."""
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=2, **{"restart-strategy.type": "none"})
    agents_env = FlinkAgentsExecutionEnvironment(env)
    agents_env.get_config().set("input-failure.policy", "skip")
    numbers = env.from_source(
        NumberSequenceSource(0, KEYS * INPUTS - 1), WatermarkStrategy.no_watermarks(), "numbers"
    ).set_parallelism(1)
    # Built in the Python operator the key-by map is chained to, as a user's map would be.
    records = numbers.map(_door_record, output_type=Types.PICKLED_BYTE_ARRAY())
    agent = agents_env.from_datastream(records, key_selector=lambda r: r["key"]).apply(EchoAgent())
    tagged = Types.PICKLED_BYTE_ARRAY()
    outputs = agent.to_datastream().map(lambda o: ("output", o), output_type=tagged)
    errors = agent.to_error_datastream().map(lambda r: ("error", r), output_type=tagged)
    with outputs.union(errors).execute_and_collect("door-skip") as results:
        got = list(results)
    answered = Counter(o["n"] for kind, o in got if kind == "output")
    good = set(range(KEYS * INPUTS)) - set(BAD_KEYS) - set(BAD_VALUES)
    assert set(answered) == good and max(answered.values()) == 1
    records_by_key: dict[Any, list[dict[str, Any]]] = {}
    for kind, record in got:
        if kind == "error":
            records_by_key.setdefault(record["key"], []).append(record)
    named = {
        "'k\\udfff'": "TypeError",
        "None": "TypeError",
        "nan": "TypeError",
        "inf": "TypeError",
        "()": "TypeError",
        "{}": "TypeError",
    }
    for name, error_type in named.items():
        [record] = records_by_key.pop(name)
        assert (record["error_type"], record["attempts"], record["action"]) == (
            error_type,
            0,
            None,
        )
    [big_key] = [k for k in records_by_key if k.startswith("<unprintable key of type int")]
    assert len(records_by_key.pop(big_key)) == 1
    # The bad values' keys (k0, k1, k4, k2) have one record each.
    by_n = {n: records_by_key.pop(f"k{n % KEYS}") for n in BAD_VALUES}
    assert records_by_key == {}
    assert {n: [r["error_type"] for r in rs] for n, rs in by_n.items()} == {
        5: ["PydanticSerializationError"],
        11: ["ValueError"],
        24: ["PicklingError"],
        37: ["TypeError"],
    }
    assert by_n[24][0]["input"] == "<unprintable input of type dict>"
    assert "\\ud800" in by_n[5][0]["input"]
