"""Agents and the standalone-cluster job of the durable-execution tests (no tests here).

The model is the OpenAI-compatible mock server the test runs on 127.0.0.1
(`examples/mock_model_server.py`), reached through the real `OpenAIChatModelConnection`.

- `ToolChatAgent`: per input one chat request through the built-in chat and tool actions:
  turn 0 asks, the model calls the `lookup` tool, turn 1 answers with the tool's result.
  `lookup` appends a line to the file `E2E_TOOL_LOG` names (so a test counts tool calls).
- `FailOnceAgent`: one action that makes one durable model call, then fails once for one
  chosen input (after the call's outcome was recorded).

`python e2e_tests/durable_job.py --output DIR --base-url URL --store URL ...` (submitted
with `flink run` by `test_durable_cluster.py`) runs `ToolChatAgent` over a trickling,
checkpointed source into a checkpointed FileSink of JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.message import ChatMessage
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
)

__all__ = ["FailOnceAgent", "ToolChatAgent", "ask_provider", "lookup"]

TOOL_LOG_ENV = "E2E_TOOL_LOG"


def _connection(base_url: str, **settings: Any) -> ResourceDescriptor:
    return ResourceDescriptor(
        clazz=OpenAIChatModelConnection,
        base_url=base_url,
        api_key="test-key",
        timeout=30.0,
        **settings,
    )


# ---------------------------------------------------------------- chat with a tool


async def lookup(query: str) -> str:
    """Look a ticket up.

    Args:
        query: What to look up.
    """
    path = os.environ.get(TOOL_LOG_ENV)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"query": query, "at": time.time()}) + "\n")
    return f"found {query}"


async def _ask(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    ctx.sensory_memory["record"] = record
    message = ChatMessage.user(f"{record['key']}/{record['n']}")
    ctx.send_event(ChatRequestEvent(model="chat", messages=[message]))


async def _answer(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ChatResponseEvent)
    record = ctx.sensory_memory["record"]
    text = event.response.text if event.response is not None else None
    seen = [*ctx.short_term_memory.get("seen", []), record["n"]]  # the key's inputs so far
    ctx.short_term_memory["seen"] = seen
    ctx.send_event(
        OutputEvent(output={"key": record["key"], "n": record["n"], "answer": text, "seen": seen})
    )


class ToolChatAgent(Agent):
    """Two model turns and one tool call per input, all through the built-in actions."""

    def __init__(self, base_url: str, **connection: Any) -> None:
        """``connection``: more settings of the OpenAI connection."""
        super().__init__()
        self.add_action("ask", [InputEvent], _ask)
        self.add_action("answer", [ChatResponseEvent], _answer)
        self.add_resource(
            "provider", ResourceType.CHAT_MODEL_CONNECTION, _connection(base_url, **connection)
        )
        self.add_resource(
            "chat",
            ResourceType.CHAT_MODEL,
            ResourceDescriptor(
                clazz=BaseChatModelSetup, connection="provider", model="mock", tools=["lookup"]
            ),
        )
        self.add_resource("lookup", ResourceType.TOOL, lookup)


# ---------------------------------------------------------------- fail once after a call

_CONNECTIONS: dict[str, OpenAIChatModelConnection] = {}


async def ask_provider(base_url: str, prompt: str) -> str:
    """One model call (the durable call of `FailOnceAgent`)."""
    connection = _CONNECTIONS.get(base_url)
    if connection is None:
        connection = _CONNECTIONS[base_url] = OpenAIChatModelConnection(
            base_url=base_url, api_key="test-key", timeout=30.0
        )
    result = await connection.achat([ChatMessage.user(prompt)], model="mock")
    return result.message.text


async def _call_then_fail_once(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    prompt = f"{record['key']}/{record['n']}"
    trace_dir = Path(str(ctx.config.get("e2e.trace-dir")))
    answer = await ctx.durable_execute_async(ask_provider, str(ctx.config.get("e2e.url")), prompt)
    with open(trace_dir / f"trace-{os.getpid()}.log", "a") as f:
        f.write(f"{time.time():.6f} {prompt}\n")
    marker = trace_dir / "failed-once"
    if prompt == ctx.config.get("e2e.fail-on") and not marker.exists():
        marker.write_text(f"{time.time():.6f}")
        raise RuntimeError(f"injected failure after the model call of {prompt}")
    ctx.send_event(OutputEvent(output={"key": record["key"], "n": record["n"], "answer": answer}))


class FailOnceAgent(Agent):
    """One durable model call per input; the `e2e.fail-on` input then fails once."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("call", [InputEvent], _call_then_fail_once)


# ---------------------------------------------------------------- the standalone job


def to_line(output: dict[str, Any]) -> str:
    fields = ("key", "n", "answer", "seen")
    return json.dumps({name: output[name] for name in fields if name in output})


def main() -> None:
    from e2e_tests.durable_job import ToolChatAgent as Agent_
    from e2e_tests.durable_job import to_line as to_line_
    from e2e_tests.standalone_job import run_keyed_file_job
    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--table", default=None)
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--keys", type=int, default=30)
    parser.add_argument("--interval", type=float, default=0.02)
    args = parser.parse_args()

    env = create_stream_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(500)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    config = agents_env.get_config()
    config.set("durable-execution.store", args.store)
    if args.table:
        config.set("durable-execution.store.table", args.table)
    config.set("durable-execution.prune.interval-s", "0.5")
    config.set("durable-execution.prune.clock-skew-s", "0.5")

    run_keyed_file_job(
        env, agents_env, Agent_(args.base_url), args, agent_name="durable-agent", to_line=to_line_
    )
    agents_env.execute("durable-agent-job")


if __name__ == "__main__":
    main()
