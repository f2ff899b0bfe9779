"""The peer workload on Apache Flink Agents 0.3.1's own local runner (not this project).

Run by `upstream_peer.py` with upstream's interpreter and package (see that script's doc);
it imports upstream's ``flink_agents``, not ours. The workload is ``local_runner.py``'s:
one input per key, half of the inputs make one tool round trip (two model calls and one
call of a plain ``def`` tool), the other half one model call. The model answers at once
(``LATENCY_S`` is slept in ``chat``, as a sync upstream connection would wait).

    python upstream_peer_agent.py KEYS LATENCY_S

Prints one JSON line: ``{"outputs": n, "elapsed_s": ..., "cpu_s": ...}`` for a timed run
after an untimed warm-up run of a tenth of the keys.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup
from flink_agents.api.decorators import action, chat_model_connection, chat_model_setup, tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext

LATENCY_S = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0


class PeerConnection(BaseChatModelConnection):
    """Asks for the lookup tool once when the question says so, else answers."""

    def chat(self, messages: Any, tools: Any = None, **kwargs: Any) -> ChatMessage:
        if LATENCY_S:
            time.sleep(LATENCY_S)
        last = messages[-1]
        if last.role == MessageRole.USER and last.content.startswith("tool:"):
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": {"ticket": last.content[5:]}},
            }
            return ChatMessage(
                role=MessageRole.ASSISTANT, content="Looking it up.", tool_calls=[call]
            )
        if last.role == MessageRole.TOOL:
            return ChatMessage(role=MessageRole.ASSISTANT, content=f"Found: {last.content}")
        return ChatMessage(role=MessageRole.ASSISTANT, content="Answered directly.")


class PeerSetup(BaseChatModelSetup):
    @property
    def model_kwargs(self) -> dict[str, Any]:
        return {}


class PeerAgent(Agent):
    @chat_model_connection
    @staticmethod
    def bench_connection() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=f"{__name__}.PeerConnection")

    @chat_model_setup
    @staticmethod
    def bench_model() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=f"{__name__}.PeerSetup",
            connection="bench_connection",
            model="bench",
            tools=["lookup"],
        )

    @tool
    @staticmethod
    def lookup(ticket: str) -> str:
        """Look a ticket up.

        Args:
            ticket: The ticket id.
        """
        return f"ticket {ticket} is open"

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def start(event: Event, ctx: RunnerContext) -> None:
        text = InputEvent.from_event(event).input
        ctx.send_event(
            ChatRequestEvent(
                model="bench_model",
                messages=[ChatMessage(role=MessageRole.USER, content=text)],
            )
        )

    @action(ChatResponseEvent.EVENT_TYPE)
    @staticmethod
    def finish(event: Event, ctx: RunnerContext) -> None:
        response = ChatResponseEvent.from_event(event)
        ctx.send_event(OutputEvent(output=response.response.content))


def run_once(keys: int) -> tuple[int, float, float]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    inputs = [
        {"key": f"k{i}", "value": f"tool:T{i}" if i % 2 == 0 else f"question {i}"}
        for i in range(keys)
    ]
    out = env.from_list(inputs).apply(PeerAgent()).to_list()
    started, cpu_started = time.perf_counter(), time.process_time()
    env.execute()
    return len(out), time.perf_counter() - started, time.process_time() - cpu_started


def main() -> None:
    logging.disable(logging.CRITICAL)  # upstream logs every action at INFO
    keys = int(sys.argv[1])
    run_once(max(1, keys // 10))
    produced, elapsed, cpu = run_once(keys)
    print(json.dumps({"outputs": produced, "elapsed_s": elapsed, "cpu_s": cpu}))


if __name__ == "__main__":
    main()
