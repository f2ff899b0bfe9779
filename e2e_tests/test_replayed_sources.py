"""`apply()` warns when a checkpointed job reads from `env.from_collection`, a legacy source
read again from the start after a restore (every restore would repeat outputs). The jobs
are built, not run: the warning reads the Java job graph."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext

pytestmark = pytest.mark.flink

_LOGGER = "flink_agents.runtime.flink.replayed_sources"


async def _echo(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=event.attributes["input"]))


def _apply(env: Any, source: str) -> None:
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    agents_env = FlinkAgentsExecutionEnvironment(env)
    numbers = env.from_source(
        NumberSequenceSource(0, 9), WatermarkStrategy.no_watermarks(), "numbers"
    ).map(lambda n: {"n": n}, output_type=Types.PICKLED_BYTE_ARRAY())
    if source == "from_source":
        records = numbers
    else:
        listed = env.from_collection([{"n": n} for n in range(10)])
        records = listed if source == "from_collection" else numbers.union(listed)
    records = records.map(lambda r: r, output_type=Types.PICKLED_BYTE_ARRAY())
    agent = Agent().add_action("echo", InputEvent, _echo)
    agents_env.from_datastream(records, key_selector=lambda r: r["n"] % 2).apply(agent, name="echo")


@pytest.mark.parametrize(
    ("source", "checkpointed", "warned"),
    [
        ("from_collection", True, True),
        ("union", True, True),  # found behind a union and a map
        ("from_collection", False, False),  # no restore from a checkpoint: nothing repeats
        ("from_source", True, False),  # a FLIP-27 source keeps its position
    ],
)
def test_a_checkpointed_job_on_from_collection_is_warned_at_apply(
    stream_env: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
    source: str,
    checkpointed: bool,
    warned: bool,
) -> None:
    options = {"execution.checkpointing.interval": "1 s"} if checkpointed else {}
    env = stream_env(parallelism=1, **options)
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        _apply(env, source)
    warnings = [r.getMessage() for r in caplog.records if r.name == _LOGGER]
    if not warned:
        assert warnings == []
        return
    [message] = warnings
    assert "the input of agent 'echo' reads from env.from_collection ('Collection Source')" in (
        message
    )
    assert "env.from_source(NumberSequenceSource(" in message and "FileSource" in message
