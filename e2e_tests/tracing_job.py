"""Mini-cluster jobs with `tracing.enabled`, run by `test_tracing_e2e.py` in a fresh
interpreter whose environment holds the ``OTEL_*`` variables: the worker (thread mode:
Python inside the job's JVM, not the test's process) sets up the OpenTelemetry SDK from
them and exports over OTLP/HTTP to the test's receiver.

    python -m e2e_tests.tracing_job chat --output out.json
    python -m e2e_tests.tracing_job resume --output out.json --marker failed-once

``chat``: `ChartAgent` (a model that calls a tool returning an image) for four keys, with
``tracing.record-content``. ``resume``: `ResumeAgent` on a checkpointed, trickling input;
the ``target`` run pauses between its steps (a checkpoint holds it there), then fails once,
and the job restarts from that checkpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any, ClassVar

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext

__all__ = ["RESUME_KEY", "ResumeAgent", "main", "resume_record"]

RESUME_KEY = "target"
"""The key whose run is checkpointed between steps and fails once."""
RESUME_RECORDS = 16
TRICKLE_S = 0.25
"""Per record: the input goes on for about 4 s, so checkpoints complete meanwhile."""


class _Slow(Event):
    EVENT_TYPE: ClassVar[str] = "e2e_trace_slow"


class _Finish(Event):
    EVENT_TYPE: ClassVar[str] = "e2e_trace_finish"


async def _prepare(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(_Slow(attributes={"record": event.attributes["input"]}))


async def _slow(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["record"]
    if record["key"] == RESUME_KEY:
        await asyncio.sleep(0.6)  # then the run's snapshot is published and polled
    ctx.send_event(_Finish(attributes={"record": record}))


async def _finish(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["record"]
    marker = Path(str(ctx.config.get("e2e.marker")))
    if record["key"] == RESUME_KEY and not marker.exists():
        await asyncio.sleep(2.0)  # checkpoints complete with the run between steps
        marker.write_text(f"{time.time():.6f}")
        raise RuntimeError("injected failure after a checkpoint")
    ctx.send_event(OutputEvent(output={"key": record["key"], "n": record["n"]}))


class ResumeAgent(Agent):
    """Three steps per input (prepare, slow, finish); see the module doc."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("prepare", [InputEvent], _prepare)
        self.add_action("slow", [_Slow], _slow)
        self.add_action("finish", [_Finish], _finish)


def resume_record(i: int) -> dict[str, Any]:
    """Input ``i`` of the ``resume`` job, a moment after the previous one."""
    time.sleep(TRICKLE_S)
    return {"key": RESUME_KEY if i == 0 else f"k{i}", "n": i}


def _chat(output: Path) -> None:
    from e2e_tests.agents import ChartAgent
    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    env = create_stream_execution_environment()
    env.set_parallelism(2)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    config = agents_env.get_config()
    config.set("tracing.enabled", True)
    config.set("tracing.record-content", True)
    source = env.from_collection([{"key": f"c{i}", "title": f"chart{i}"} for i in range(4)])
    outputs = (
        agents_env.from_datastream(source, key_selector=lambda r: r["key"])
        .apply(ChartAgent(), name="chart")
        .to_datastream()
    )
    with outputs.execute_and_collect("e2e-tracing-chat") as results:
        output.write_text(json.dumps(list(results)))


def _resume(output: Path, marker: Path) -> None:
    from pyflink.common import WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    # By module name, not __main__: the workers import them from there.
    from e2e_tests.tracing_job import ResumeAgent, resume_record
    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    env = create_stream_execution_environment(
        {
            "execution.checkpointing.interval": "100 ms",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "3",
            "restart-strategy.fixed-delay.delay": "200 ms",
        }
    )
    env.set_parallelism(1)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    config = agents_env.get_config()
    config.set("tracing.enabled", True)
    config.set("e2e.marker", str(marker))
    numbers = env.from_source(
        NumberSequenceSource(0, RESUME_RECORDS - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    source = numbers.map(resume_record)
    outputs = (
        agents_env.from_datastream(source, key_selector=lambda r: r["key"])
        .apply(ResumeAgent(), name="resume")
        .to_datastream()
    )
    with outputs.execute_and_collect("e2e-tracing-resume") as results:
        output.write_text(json.dumps(list(results)))


def main() -> None:
    from flink_agents.runtime.flink.environment import prepare_flink_environment

    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=("chat", "resume"))
    parser.add_argument("--output", required=True)
    parser.add_argument("--marker")
    args = parser.parse_args()
    prepare_flink_environment()
    if args.scenario == "chat":
        _chat(Path(args.output))
    else:
        _resume(Path(args.output), Path(args.marker))


if __name__ == "__main__":
    main()
