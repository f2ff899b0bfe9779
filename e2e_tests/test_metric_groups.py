"""Upstream's metric types on the mini-cluster (thread mode): an action marks a meter,
counts in a key/value group and updates a windowed histogram; the operator publishes them
through PyFlink's metric groups (a Flink meter, ``addGroup(key, value)``) while the job
runs and when its input ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext

pytestmark = pytest.mark.flink


async def record(event: Event, ctx: RunnerContext) -> None:
    """Records one of each kind of metric, then outputs the input's key."""
    value = event.attributes["input"]
    group = ctx.action_metric_group
    group.get_meter("inputs").mark()
    group.get_sub_group("tenant", value["tenant"]).get_counter("calls").inc()
    group.get_histogram("sizeBytes", window_size=5).update(len(value["key"]))
    ctx.send_event(OutputEvent(output=value["key"]))


def test_meters_and_key_value_groups_reach_flink(stream_env: Callable[..., Any]) -> None:
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=1)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    assert agents_env.execution_mode == "thread"
    inputs = [{"key": f"k{i}", "tenant": "acme" if i % 2 else "globex"} for i in range(6)]
    stream = agents_env.from_datastream(
        env.from_collection(inputs), key_selector=lambda r: r["key"]
    )
    agent = Agent()
    agent.add_action("record", [InputEvent], record)
    stream.apply(agent, name="metric-groups")
    with stream.to_datastream().execute_and_collect("e2e-metric-groups") as results:
        outputs = sorted(results)
    assert outputs == [f"k{i}" for i in range(6)]
