"""The standalone-cluster job of `test_upgrades_cluster.py` (agents and wiring; no tests).

`python e2e_tests/upgrade_job.py --output DIR --agent NAME [...]`, submitted with
`flink run` (and `flink run -s SAVEPOINT` for the changed job), runs one of these agents
over a trickling, checkpointed source into a checkpointed FileSink of JSON lines:

- `memory`: `MemoryAgent`, one action that keeps the key's inputs seen in keyed memory.
- `chat`: `ToolChatAgent` of `durable_job.py` (two model turns and a tool call per input,
  through the real `OpenAIChatModelConnection` against `--base-url`), `--store` the
  durable-execution store.
- `two-step` / `ask-only`: `TwoStepAgent` (its second, slow action handles the custom
  event `finish_me`) and the same agent after that action was removed.

Every operator with state or a changed graph has a uid ("numbers", "records", the agent's
"the-agent", "sink"); `--added-operator` puts a pass-through map (uid "added") upstream of
the agent. Failure records (`to_error_datastream()`) go to the same sink as
`{"failure": record}` lines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext

__all__ = ["AskOnlyAgent", "MemoryAgent", "TwoStepAgent"]


class ToInput:
    def __init__(self, keys: int, interval: float) -> None:
        self.keys = keys
        self.interval = interval

    def __call__(self, i: int) -> dict[str, Any]:
        time.sleep(self.interval)
        return {"key": f"k{i % self.keys}", "n": i // self.keys}


def pass_through(record: Any) -> Any:
    return record


def key_of(record: dict[str, Any]) -> str:
    return str(record["key"])


def to_line(output: dict[str, Any]) -> str:
    fields = ("key", "n", "answer", "seen")
    return json.dumps({name: output[name] for name in fields if name in output})


def failure_line(record: Any) -> str:
    return json.dumps({"failure": record}, default=str)


# ---------------------------------------------------------------- agents


async def _remember(event: Event, ctx: RunnerContext) -> None:
    await asyncio.sleep(0.03)
    record = event.attributes["input"]
    seen = [*ctx.short_term_memory.get("seen", []), record["n"]]
    ctx.short_term_memory["seen"] = seen
    ctx.send_event(OutputEvent(output={"key": record["key"], "n": record["n"], "seen": seen}))


class MemoryAgent(Agent):
    """One action per input: the key's inputs so far, kept in keyed memory."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("remember", [InputEvent], _remember)


async def _ask(event: Event, ctx: RunnerContext) -> None:
    await asyncio.sleep(0.02)  # long enough that the run's state is saved after this step
    record = event.attributes["input"]
    ctx.short_term_memory["seen"] = [*ctx.short_term_memory.get("seen", []), record["n"]]
    ctx.send_event(Event("finish_me", {"record": record}))


async def _finish(event: Event, ctx: RunnerContext) -> None:
    await asyncio.sleep(0.3)  # runs wait here when the job stops
    record = event.attributes["record"]
    seen = ctx.short_term_memory["seen"]
    ctx.send_event(OutputEvent(output={"key": record["key"], "n": record["n"], "seen": seen}))


class TwoStepAgent(Agent):
    def __init__(self) -> None:
        super().__init__()
        self.add_action("ask", [InputEvent], _ask)
        self.add_action("finish", ["finish_me"], _finish)


class AskOnlyAgent(Agent):
    """`TwoStepAgent` after `finish` was removed."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("ask", [InputEvent], _ask)


# ---------------------------------------------------------------- the job


def main() -> None:
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from e2e_tests import upgrade_job as job
    from e2e_tests.standalone_job import committed_line_sink
    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument(
        "--agent", required=True, choices=["memory", "chat", "two-step", "ask-only"]
    )
    parser.add_argument("--added-operator", action="store_true")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--store", default=None)
    parser.add_argument("--stop-grace-s", default=None)
    parser.add_argument("--policy", default=None)
    parser.add_argument("--records", type=int, default=60)
    parser.add_argument("--keys", type=int, default=4)
    parser.add_argument("--interval", type=float, default=0.05)
    args = parser.parse_args()

    env = create_stream_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(300)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    config = agents_env.get_config()
    if args.store:
        config.set("durable-execution.store", args.store)
    if args.stop_grace_s is not None:
        config.set("durable-execution.stop-grace-s", float(args.stop_grace_s))
    if args.policy:
        config.set("input-failure.policy", args.policy)

    agent: Agent
    if args.agent == "memory":
        agent = job.MemoryAgent()
    elif args.agent == "chat":
        from e2e_tests.durable_job import ToolChatAgent

        agent = ToolChatAgent(args.base_url)
    elif args.agent == "two-step":
        agent = job.TwoStepAgent()
    else:
        agent = job.AskOnlyAgent()

    numbers = env.from_source(
        NumberSequenceSource(0, args.records - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    records = (
        numbers.uid("numbers")
        .set_parallelism(1)
        .map(job.ToInput(args.keys, args.interval), output_type=Types.PICKLED_BYTE_ARRAY())
        .uid("records")
        .set_parallelism(1)
    )
    if args.added_operator:
        records = (
            records.map(job.pass_through, output_type=Types.PICKLED_BYTE_ARRAY())
            .uid("added")
            .set_parallelism(1)
        )
    stream = agents_env.from_datastream(records, key_selector=job.key_of).apply(
        agent, uid="the-agent"
    )
    outputs = stream.to_datastream().map(job.to_line, output_type=Types.STRING())
    errors = stream.to_error_datastream().map(job.failure_line, output_type=Types.STRING())
    sink = committed_line_sink(args.output)
    outputs.union(errors).sink_to(sink).uid("sink").set_parallelism(1)
    agents_env.execute(f"upgrade-{args.agent}")


if __name__ == "__main__":
    main()
