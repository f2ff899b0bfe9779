"""Benchmark of the PyFlink runtime on a local mini-cluster (thread mode, parallelism 1).

(a) Overhead. The same job shape for each line: a source of `--records` inputs over `--keys`
    keys, `key_by`, then one keyed process function, then a map that stamps the time.
    Throughput is records over the time between the first and the last stamped output;
    each line's ratio to the first is printed. The functions:
    - a trivial KeyedProcessFunction (one ValueState read and one write per record);
    - the keyed agent operator around a pass-through engine (no agent: what the operator
      itself costs: keyed state, scheduling, the run loop);
    - the agent operator with a one-action agent (input -> output);
    - the agent operator with a 0 ms model (input -> chat request -> model -> chat
      response -> output): the target line (at least 0.5 of the trivial function);
    - the same with a sync tool: half of the inputs make the model call a plain ``def``
      tool once (two model calls and a tool call), as most agents' tools are written
      (target, issue 14: at least 0.3 of the trivial function);
    - that one with plain ``def`` actions, as upstream's agents are written.
    The first job in a JVM runs cold: every line runs `--runs` times (default 2), the
    lines taking turns, and each line's best run counts.

(b) Latency. `--keys-b` keys, a model that takes `--latency-ms`, inputs arriving at
    `--rate` per second (round-robin over the keys, `--inputs-per-key` each). Ideal: every
    input is answered exactly `latency` after it arrives, so results per second follow the
    input rate: ideal time = input span + latency. Printed: results/s, the ratio to the
    ideal (target: at least 0.6), and the added latency per input, output time - arrival
    time - model latency, at p50 and p99 (target: p50 under 50 ms).

    python tools/bench/flink_runtime.py
    python tools/bench/flink_runtime.py --part a --lines trivial,sync-tool --runs 3
    python tools/bench/flink_runtime.py --part b --rate 2000 --max-in-flight 1000
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import statistics
import time
from collections.abc import Iterator
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.chat_models.function_model import FunctionChatModelConnection
from flink_agents.api.content_blocks import ToolCallBlock
from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.runtime.flink import (
    AgentOperatorOptions,
    FlinkAgentsExecutionEnvironment,
    create_stream_execution_environment,
)
from flink_agents.runtime.flink.environment import keyed_agent_stream
from flink_agents.runtime.flink.operator import SubtaskContext
from flink_agents.runtime.flink.python_workers import ExecutionMode

BUFFER_TIMEOUT_MS = 5
"""Network buffers are flushed after this long (Flink's default, 100 ms, would add up to
100 ms between the source and the keyed operator to every latency measured here)."""

# ------------------------------------------------------------------ the agent


def echo_model(messages: list[ChatMessage], tools: Any) -> str:
    return messages[-1].text


async def ask(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    ctx.sensory_memory["record"] = record
    message = ChatMessage.user(f"{record['key']}/{record['n']}")
    ctx.send_event(ChatRequestEvent(model="bench_model", messages=[message]))


def answer_def(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ChatResponseEvent)
    record = dict(ctx.sensory_memory["record"])
    record["answer"] = event.response.text if event.response is not None else None
    ctx.send_event(OutputEvent(output=record))


async def answer(event: Event, ctx: RunnerContext) -> None:
    answer_def(event, ctx)


def tool_model(messages: list[ChatMessage], tools: Any) -> ChatMessage | str:
    """Asks for the lookup tool once when the question says so, else echoes it."""
    last = messages[-1]
    if last.role is MessageRole.USER and last.text.startswith("tool:"):
        call = ToolCallBlock(id="call_1", name="lookup", input={"ticket": last.text[5:]})
        return ChatMessage.assistant("Looking it up.", tool_calls=[call])
    if last.role is MessageRole.TOOL:
        block = last.tool_result_block
        return f"Found: {block.text if block else ''}"
    return last.text


def lookup(ticket: str) -> str:
    """Look a ticket up.

    Args:
        ticket: The ticket id.
    """
    return f"ticket {ticket} is open"


def ask_half_with_tool_def(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    ctx.sensory_memory["record"] = record
    text = f"{record['key']}/{record['n']}"
    if (int(record["key"][1:]) + record["n"]) % 2 == 0:  # half of the inputs
        text = f"tool:{text}"
    ctx.send_event(ChatRequestEvent(model="bench_model", messages=[ChatMessage.user(text)]))


async def ask_half_with_tool(event: Event, ctx: RunnerContext) -> None:
    ask_half_with_tool_def(event, ctx)


async def echo_output(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=event.attributes["input"]))


def one_action_agent() -> Agent:
    """An agent without a model: its one action sends the input back as the output."""
    return Agent().add_action("echo", [InputEvent], echo_output)


class PassThroughEngine:
    """A `RunEngine` with no agent: every run is done as soon as it starts, its output the
    input (what the keyed operator costs by itself)."""

    def new_key_state(self) -> list[int]:
        return [0]

    def load_key_state(self, data: str) -> list[int]:
        return json.loads(data)

    def dump_key_state(self, key_state: list[int]) -> str:
        return json.dumps(key_state)

    def encode_input(self, value: Any) -> str:
        return json.dumps(value)

    def decode_input(self, data: str) -> Any:
        return json.loads(data)

    def start_run(self, key: str, value: Any, key_state: list[int]) -> list[Any]:
        key_state[0] += 1
        return [value]

    async def step(self, run: list[Any], key_state: list[int]) -> bool:
        raise AssertionError("a pass-through run has no steps")

    def is_done(self, run: list[Any]) -> bool:
        return True

    def outputs(self, run: list[Any]) -> list[Any]:
        return run

    def dump_run(self, run: list[Any]) -> str:
        return json.dumps(run)

    def load_run(self, data: str) -> list[Any]:
        return json.loads(data)

    def is_parked(self, run: list[Any]) -> bool:
        return False  # no tool calls wait for approval

    def pending_approvals(self, run: list[Any]) -> list[Any]:
        return []

    def decide(self, run: list[Any] | None, key: str, approval: Any) -> bool:
        raise AssertionError("a pass-through run never waits for approval")

    def time_out(self, run: list[Any], now_ms: int) -> bool:
        return False

    def approval_deadline_ms(self, run: list[Any]) -> int | None:
        return None

    failure_retries: int | None = None  # a failure fails the task

    def finish_calls(self) -> int:
        return 0  # no external calls

    def run_acknowledged(self, key: str, seq: int) -> None:
        pass  # nothing recorded

    def close(self) -> None:
        pass

    def refuse_input(self, key: str, value: Any, error: BaseException) -> Any:
        raise error

    def retry_run(self, run: list[Any], key_state: list[int]) -> list[Any]:
        raise AssertionError("a pass-through run does not fail")

    def abandon_run(
        self, run: list[Any], key_state: list[int], error: BaseException, attempts: int
    ) -> Any:
        raise AssertionError("a pass-through run does not fail")


def pass_through_engine(context: SubtaskContext) -> PassThroughEngine:
    return PassThroughEngine()


def chat_agent(
    ask: Any, answer: Any, model: Any, *, tools: tuple[Any, ...] = (), **connection: Any
) -> Agent:
    """An agent whose action `ask` sends a chat request to a `FunctionChatModelConnection`
    answering with `model`, and whose action `answer` takes the response; `tools` (plain
    functions) are the setup's, by their names; `connection`: the connection's other
    fields (``latency``, ``adaptive_limit``...). The benches' agents, built in one place."""
    agent = Agent()
    agent.add_action("ask", [InputEvent], ask)
    agent.add_action("answer", [ChatResponseEvent], answer)
    agent.add_resource(
        "bench_connection",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(
            clazz=FunctionChatModelConnection, function=model, record_calls=False, **connection
        ),
    )
    agent.add_resource(
        "bench_model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(
            clazz=BaseChatModelSetup,
            connection="bench_connection",
            tools=[tool.__name__ for tool in tools],
        ),
    )
    for tool in tools:
        agent.add_resource(tool.__name__, ResourceType.TOOL, tool)
    return agent


def bench_agent(latency_s: float) -> Agent:
    return chat_agent(ask, answer, echo_model, latency=latency_s)


def sync_tool_agent(*, def_actions: bool = False) -> Agent:
    """`bench_agent` at 0 ms whose model calls a plain ``def`` tool for half the inputs; with
    ``def_actions`` its two actions are plain ``def`` ones too (upstream's shape)."""
    if def_actions:
        return chat_agent(ask_half_with_tool_def, answer_def, tool_model, tools=(lookup,))
    return chat_agent(ask_half_with_tool, answer, tool_model, tools=(lookup,))


@contextlib.contextmanager
def flink_lock(path: str | None) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (None: no lock) while Flink runs: benches that
    share a machine take turns."""
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ------------------------------------------------------------------ job pieces


class Paced:
    """Turns number i into input i, arriving at `rate` per second (0: as fast as possible)."""

    def __init__(self, keys: int, rate: float) -> None:
        self.keys = keys
        self.rate = rate
        self.start: float | None = None

    def __call__(self, i: int) -> dict[str, Any]:
        if self.rate > 0:
            now = time.time()
            if self.start is None:
                self.start = now
            due = self.start + i / self.rate
            if due > now:
                time.sleep(due - now)
        return {"key": f"k{i % self.keys}", "n": i // self.keys, "arrived": time.time()}


def stamp(record: dict[str, Any]) -> dict[str, Any]:
    record["out"] = time.time()
    return record


def trivial_function() -> Any:
    from pyflink.common import Types
    from pyflink.datastream import KeyedProcessFunction, RuntimeContext
    from pyflink.datastream.state import ValueStateDescriptor

    class CountPerKey(KeyedProcessFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, value: dict[str, Any], ctx: Any) -> Any:
            count = (self.count.value() or 0) + 1
            self.count.update(count)
            value["count"] = count
            yield value

    return CountPerKey()


def source(env: Any, records: int, keys: int, rate: float) -> Any:
    from pyflink.common import WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    numbers = env.from_source(
        NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    return numbers.map(Paced(keys, rate))


def run_trivial(records: int, keys: int, mode: ExecutionMode = "thread") -> list[dict[str, Any]]:
    from pyflink.common import Types

    env = create_stream_execution_environment()
    env.set_parallelism(1)
    env.set_buffer_timeout(BUFFER_TIMEOUT_MS)
    FlinkAgentsExecutionEnvironment(env, execution_mode=mode)  # same worker options
    keyed = source(env, records, keys, 0).key_by(lambda r: r["key"], key_type=Types.STRING())
    out: Any = keyed.process(trivial_function()).map(stamp)
    with out.execute_and_collect("bench-trivial") as results:
        return list(results)


def run_operator(records: int, keys: int, mode: ExecutionMode) -> list[dict[str, Any]]:
    """The keyed agent operator around `PassThroughEngine`, keyed and fed as `apply` does
    (`keyed_agent_stream`: the key's text, the input pickled)."""
    env = create_stream_execution_environment()
    env.set_parallelism(1)
    env.set_buffer_timeout(BUFFER_TIMEOUT_MS)
    FlinkAgentsExecutionEnvironment(env, execution_mode=mode)  # same worker options
    stream = source(env, records, keys, 0)
    agents: Any = keyed_agent_stream(
        stream, lambda r: r["key"], pass_through_engine, execution_mode=mode
    )
    out: Any = agents.map(stamp)
    with out.execute_and_collect("bench-operator") as results:
        return list(results)


def run_agent(
    records: int,
    keys: int,
    rate: float,
    latency_s: float,
    max_in_flight: int,
    mode: ExecutionMode = "thread",
    agent: Agent | None = None,
    inline_runs: bool = True,
) -> list[dict[str, Any]]:
    env = create_stream_execution_environment()
    env.set_parallelism(1)
    env.set_buffer_timeout(BUFFER_TIMEOUT_MS)
    agents_env = FlinkAgentsExecutionEnvironment(
        env,
        execution_mode=mode,
        operator_options=AgentOperatorOptions(max_in_flight=max_in_flight, inline_runs=inline_runs),
    )
    agents_env.get_config().set(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS, max_in_flight)
    inputs = source(env, records, keys, rate)
    out: Any = (
        agents_env.from_datastream(inputs, key_selector=lambda r: r["key"])
        .apply(agent or bench_agent(latency_s), name="bench-agent")
        .to_datastream()
        .map(stamp)
    )
    with out.execute_and_collect("bench-agent") as results:
        return list(results)


# ------------------------------------------------------------------ measurements


def throughput(outputs: list[dict[str, Any]]) -> float:
    stamps = sorted(o["out"] for o in outputs)
    return (len(stamps) - 1) / (stamps[-1] - stamps[0])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


PART_A_LINES = ("trivial", "operator", "one-action", "chat", "sync-tool", "def-actions")
"""Part (a)'s lines, by the names `--lines` takes."""


def part_a(
    records: int,
    keys: int,
    mode: ExecutionMode,
    inline_off: bool = False,
    runs: int = 2,
    names: tuple[str, ...] = PART_A_LINES,
) -> None:
    every = {
        "trivial": ("trivial keyed function", lambda: run_trivial(records, keys, mode)),
        "operator": ("operator, pass-through engine", lambda: run_operator(records, keys, mode)),
        "one-action": (
            "agent, one action",
            lambda: run_agent(records, keys, 0, 0.0, 1000, mode, one_action_agent()),
        ),
        "chat": (
            "agent, 0 ms model (target)",
            lambda: run_agent(records, keys, 0, 0.0, 1000, mode),
        ),
        "sync-tool": (
            "agent, 0 ms model, sync tool",
            lambda: run_agent(records, keys, 0, 0.0, 1000, mode, sync_tool_agent()),
        ),
        "def-actions": (
            "the same, def actions",
            lambda: run_agent(records, keys, 0, 0.0, 1000, mode, sync_tool_agent(def_actions=True)),
        ),
    }
    lines = [every[name] for name in ("trivial", *names) if name in every]
    lines = list(dict.fromkeys(lines))  # the trivial function first, once
    if inline_off:
        # What starting runs on the operator thread (`LoopThread`'s inline path) is worth.
        lines.append(
            (
                "agent, 0 ms model, not inline",
                lambda: run_agent(records, keys, 0, 0.0, 1000, mode, inline_runs=False),
            )
        )
    print(
        f"(a) {records} records, {keys} keys, {mode} mode, parallelism 1; "
        f"{runs} runs per line, taking turns, best kept"
    )
    rates: dict[str, list[float]] = {name: [] for name, _ in lines}
    for _ in range(runs):
        for name, run in lines:
            outputs = run()
            assert len(outputs) == records, (name, len(outputs))
            rates[name].append(throughput(outputs))
    base = max(rates[lines[0][0]])
    for name, _ in lines:
        rate = max(rates[name])
        each = " / ".join(f"{r:.0f}" for r in rates[name])
        print(
            f"    {name:31s} {rate:8.0f} records/s  {1e6 / rate:6.1f} us/record  "
            f"ratio {rate / base:.2f}  (runs: {each})"
        )
    print("    targets: the 0 ms model line at least 0.5; with a sync tool at least 0.3")


def part_b(
    keys: int, inputs_per_key: int, rate: float, latency_ms: float, max_in_flight: int
) -> None:
    records = keys * inputs_per_key
    latency_s = latency_ms / 1000
    outputs = run_agent(records, keys, rate, latency_s, max_in_flight)
    assert len(outputs) == records, len(outputs)
    first_in = min(o["arrived"] for o in outputs)
    last_in = max(o["arrived"] for o in outputs)
    last_out = max(o["out"] for o in outputs)
    actual = last_out - first_in
    ideal = (last_in - first_in) + latency_s
    added = [(o["out"] - o["arrived"] - latency_s) * 1000 for o in outputs]
    print(
        f"(b) {keys} keys x {inputs_per_key} inputs at {rate:.0f}/s, model {latency_ms:.0f} ms, "
        f"max in flight {max_in_flight}"
    )
    print(f"    results/s: {records / actual:8.0f}   ideal: {records / ideal:8.0f}")
    print(f"    ratio to ideal: {ideal / actual:.2f} (target >= 0.6)")
    print(
        f"    added latency ms: p50 {percentile(added, 0.5):.1f}  p99 "
        f"{percentile(added, 0.99):.1f}  mean {statistics.fmean(added):.1f} "
        f"(target p50 < 50)"
    )
    print("    deciles:", [round(percentile(added, q / 10), 1) for q in range(1, 10)])
    # At the end of a bounded input the runs still in flight are awaited key by key in
    # end-of-input timers, so the last `latency` worth of inputs wait longer; without them:
    steady = [a for a, o in zip(added, outputs, strict=True) if o["arrived"] < last_in - latency_s]
    print(
        f"    before the end of input: p50 {percentile(steady, 0.5):.1f}  p99 "
        f"{percentile(steady, 0.99):.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark of the PyFlink runtime.")
    parser.add_argument("--part", choices=["a", "b", "both"], default="both")
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--keys-b", type=int, default=2000)
    parser.add_argument("--inputs-per-key", type=int, default=2)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--max-in-flight", type=int, default=1000)
    parser.add_argument(
        "--mode", choices=["thread", "process"], default="thread", help="Python execution mode"
    )
    parser.add_argument("--runs", type=int, default=2, help="(a) runs per line; best kept")
    parser.add_argument(
        "--lines",
        default=",".join(PART_A_LINES),
        help=f"(a) lines to run, of {','.join(PART_A_LINES)} (the trivial one always runs)",
    )
    parser.add_argument(
        "--inline-off",
        action="store_true",
        help="(a) also: the 0 ms model line with every run handed to the loop thread",
    )
    args = parser.parse_args()
    if args.part in ("a", "both"):
        names = tuple(name for name in args.lines.split(",") if name)
        unknown = set(names) - set(PART_A_LINES)
        if unknown:
            parser.error(f"unknown lines: {sorted(unknown)}")
        part_a(args.records, args.keys, args.mode, args.inline_off, args.runs, names)
    if args.part in ("b", "both"):
        part_b(args.keys_b, args.inputs_per_key, args.rate, args.latency_ms, args.max_in_flight)


if __name__ == "__main__":
    main()
