"""Exactly once through Kafka: the fault matrix with a Kafka source and a transactional sink.

Each case writes `KEYS * INPUTS` records (`{"key", "n"}`, the Kafka record key is the key) to
a topic of two partitions, runs `FaultAgent` (`e2e_tests.fault_agent`: two actions, a chat
round trip with a tool call per input) between a `KafkaSource` and a `KafkaSink` with
`DeliveryGuarantee.EXACTLY_ONCE` as a checkpointed job with a fixed-delay restart strategy,
injects one failure, and reads the output topic with `isolation.level=read_committed`:

- every input has exactly one answer, nothing lost, and each key's answers come in input
  order;
- the key's memory matches the answers (answer `n` saw exactly inputs 0..n of its key);
- with a durable store (SQLite), no model or tool call was made twice unless it was in flight
  when the failure happened (as in `test_fault_matrix.py`).

Axes: failure point (an action, a tool, a model call) x parallelism (1, 2) x store (none,
SQLite). The core cells (`CORE`) run with the README's test command; the others are marked
`slow` and run with `FLINK_AGENTS_TEST_KAFKA_MATRIX=full` (each cell is a job of ~15 s).

`test_bad_records_go_to_the_error_stream`: records that are not valid for the agent (not
JSON, wrong schema) become failure records on the error stream under `input-failure.policy`
`skip`, written to a dead-letter topic exactly once, and every other record is answered.

`test_a_bounded_job_drains_into_create_time_topics`: a bounded job whose runs all still wait
on the model when the input ends answers every record into a topic of the default
`CreateTime` (the answers of the drain used to carry Flink's end-of-input timestamp, which
the broker refuses; issue 34).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.agents import SlowModelAgent
from e2e_tests.fault_agent import FaultAgent, write_control
from e2e_tests.kafka import (
    agent_between_topics,
    connector_jars,
    create_topics,
    produce,
    read_committed,
    read_committed_stamped,
)
from e2e_tests.test_fault_matrix import IN_FLIGHT_MARGIN_S, _calls

pytestmark = pytest.mark.flink

KEYS, INPUTS = 4, 5
POINTS = ("action_before_model", "tool", "model")
STORES = ("no_store", "sqlite")
CORE = {
    ("action_before_model", 2, "no_store"),
    ("tool", 1, "sqlite"),
    ("model", 2, "sqlite"),
}
FULL = os.environ.get("FLINK_AGENTS_TEST_KAFKA_MATRIX") == "full"


def _cases() -> list[Any]:
    cases = []
    for point, parallelism, store in itertools.product(POINTS, (1, 2), STORES):
        cell = (point, parallelism, store)
        marks = [] if cell in CORE else [pytest.mark.slow]
        if cell not in CORE and not FULL:
            marks.append(
                pytest.mark.skip(
                    reason="beyond the core cells: FLINK_AGENTS_TEST_KAFKA_MATRIX=full"
                )
            )
        cases.append(pytest.param(*cell, marks=marks, id=f"{point}-p{parallelism}-{store}"))
    return cases


def _parse(value: str) -> Any:
    return json.loads(value)


def _key_of(record: Any) -> str:
    return record["key"] if isinstance(record, dict) else "invalid"


def _kafka_job(
    stream_env: Callable[..., Any],
    bootstrap: str,
    topics: dict[str, str],
    parallelism: int,
    agent: Any,
    configure: Callable[[Any], None],
    *,
    parse: Callable[[str], Any] = _parse,
) -> None:
    """KafkaSource (bounded: what the topic holds) -> agent -> KafkaSink (exactly once);
    the error stream to a dead-letter topic, exactly once too."""
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(
        parallelism=parallelism,
        **{
            "execution.checkpointing.interval": "200 ms",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "2",
            "restart-strategy.fixed-delay.delay": "200 ms",
        },
    )
    env.add_jars(*connector_jars())
    agents_env = FlinkAgentsExecutionEnvironment(env)
    configure(agents_env.get_config())
    agent_between_topics(
        env,
        agents_env,
        agent,
        bootstrap=bootstrap,
        topics=topics,
        key_selector=_key_of,
        parse=parse,
    )
    env.execute(f"kafka-{topics['in']}")


@pytest.mark.parametrize(("point", "parallelism", "store"), _cases())
def test_every_input_answered_exactly_once_through_kafka(
    stream_env: Callable[..., Any],
    kafka_bootstrap: str,
    tmp_path: Path,
    point: str,
    parallelism: int,
    store: str,
) -> None:
    trace = tmp_path / "trace"
    trace.mkdir()
    control = tmp_path / "control.json"
    write_control(control, point=point, target="k1/2", trace_dir=trace)
    topics = create_topics(kafka_bootstrap, 2)
    produce(
        kafka_bootstrap,
        topics["in"],
        [
            (f"k{i % KEYS}", json.dumps({"key": f"k{i % KEYS}", "n": i // KEYS}))
            for i in range(KEYS * INPUTS)
        ],
    )

    def configure(config: Any) -> None:
        config.set("e2e.control", str(control))
        config.set("error-handling-strategy", "fail")  # a failed model call fails the run
        if store == "sqlite":
            config.set("durable-execution.store", str(tmp_path / "durable.db"))

    _kafka_job(
        stream_env, kafka_bootstrap, topics, parallelism, FaultAgent(str(control)), configure
    )

    failed_at = float((trace / "failed").read_text())  # it did fail
    outputs = [
        json.loads(value)
        for _, value in read_committed(kafka_bootstrap, topics["out"], expected=KEYS * INPUTS)
    ]
    pairs = [(o["key"], o["n"]) for o in outputs]
    expected = {(f"k{k}", n) for k in range(KEYS) for n in range(INPUTS)}
    missing = sorted(expected - set(pairs))
    repeated = sorted({p for p in pairs if pairs.count(p) > 1})
    assert not missing and not repeated, f"missing {missing}, repeated {repeated}"
    per_key: dict[str, list[int]] = defaultdict(list)
    for o in outputs:  # one partition's records come in order; a key is in one partition
        per_key[o["key"]].append(o["n"])
        assert o["seen"] == list(range(o["n"] + 1)), o
        assert o["answer"] == f"answer {o['key']}/{o['n']}: found {o['key']}/{o['n']}", o
    assert all(ns == list(range(INPUTS)) for ns in per_key.values()), dict(per_key)
    assert read_committed(kafka_bootstrap, topics["errors"], expected=0, settle_s=0.5) == []

    if store == "no_store":
        return
    again = [
        f"{what} {target} turn {turn}"
        for (what, target, turn), runs in _calls(trace).items()
        for run in runs[:-1]
        if not run["failed"]
        and run["end"] is not None
        and run["end"] <= failed_at - IN_FLIGHT_MARGIN_S
    ]
    assert not again, f"recorded calls made again: {again}"


# ---------------------------------------------------------------- the drain


def test_a_bounded_job_drains_into_create_time_topics(
    stream_env: Callable[..., Any], kafka_bootstrap: str
) -> None:
    topics = create_topics(kafka_bootstrap, 1)
    records = [{"key": f"k{i % KEYS}", "n": i // KEYS} for i in range(KEYS * INPUTS)]
    produce(kafka_bootstrap, topics["in"], [(r["key"], json.dumps(r)) for r in records])
    started_ms = time.time() * 1000

    # The source is read in a moment; each key's runs then take 0.5 s one after the other,
    # so almost every answer leaves from the end-of-input drain.
    _kafka_job(stream_env, kafka_bootstrap, topics, 1, SlowModelAgent(0.5), lambda _: None)

    stamped = read_committed_stamped(kafka_bootstrap, topics["out"], expected=len(records))
    answers = sorted(json.loads(value)["answer"] for _, value, _ in stamped)
    assert answers == sorted(f"echo {r['key']}/{r['n']}" for r in records)
    # The producer's clock stamped them (no timestamp from Flink), not the end of time.
    assert all(started_ms - 60_000 < ts < time.time() * 1000 + 60_000 for _, _, ts in stamped)


# ---------------------------------------------------------------- bad records


def _parse_or_keep(value: str) -> Any:
    """The record's JSON, or the text itself when it is not JSON (the agent refuses it)."""
    try:
        return json.loads(value)
    except ValueError:
        return value


async def _echo(event: Any, ctx: Any) -> None:
    from flink_agents.api.events.event import OutputEvent

    record = event.attributes["input"]
    if not isinstance(record, dict) or not isinstance(record.get("n"), int):
        raise ValueError(f"not a record for this agent: {str(record)[:40]!r}")
    ctx.send_event(OutputEvent(output={"key": record["key"], "n": record["n"]}))


def test_bad_records_go_to_the_error_stream(
    stream_env: Callable[..., Any], kafka_bootstrap: str
) -> None:
    from flink_agents.api.agents.agent import Agent
    from flink_agents.api.events.event import InputEvent

    agent = Agent()
    agent.add_action("echo", [InputEvent], _echo)
    topics = create_topics(kafka_bootstrap, 2)
    good = [(f"k{i % 3}", json.dumps({"key": f"k{i % 3}", "n": i})) for i in range(9)]
    bad = [("k1", "{not json"), ("k2", json.dumps({"key": "k2", "n": "seven"}))]
    produce(kafka_bootstrap, topics["in"], [*good[:4], bad[0], *good[4:7], bad[1], *good[7:]])

    _kafka_job(
        stream_env,
        kafka_bootstrap,
        topics,
        2,
        agent,
        lambda config: config.set("input-failure.policy", "skip"),
        parse=_parse_or_keep,
    )

    outputs = [json.loads(v) for _, v in read_committed(kafka_bootstrap, topics["out"], expected=9)]
    assert sorted(o["n"] for o in outputs) == list(range(9))
    failures = [
        json.loads(v) for _, v in read_committed(kafka_bootstrap, topics["errors"], expected=2)
    ]
    assert sorted((f["key"], f["error_type"]) for f in failures) == [
        ("invalid", "ValueError"),
        ("k2", "ValueError"),
    ]
    assert any(f["input"] == "{not json" for f in failures)
