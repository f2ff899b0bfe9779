"""The agent of the approval restore test: each question asks the model, whose one tool
call (``refund``, ``requires_approval=True``) waits for a `ToolApproval`; the tool notes
each call it makes in a file of ``e2e.trace-dir`` (so the test counts them)."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.approvals import ApprovalRequest, ToolApproval
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.chat_models.function_model import FunctionChatModelConnection
from flink_agents.api.content_blocks import ToolCallBlock
from flink_agents.api.decorators import tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.tool import Tool
from flink_agents.api.tools.tool_parameter_injection import InjectedArg

__all__ = [
    "ApprovalAgent",
    "QuestionsThenDecisions",
    "call_id_of",
    "key_of",
    "output_line",
    "present",
    "request_line",
]


def call_id_of(key: str) -> str:
    """The id the model gives the refund call of ``key``'s question."""
    return f"refund-{key}"


@tool(requires_approval=True)
def refund(customer: str, trace_dir: str) -> str:
    """Refund the customer's order.

    Args:
        customer: The customer.
        trace_dir: Where calls are noted (injected).
    """
    name = f"refund-{os.getpid()}-{uuid.uuid4().hex}.log"
    (Path(trace_dir) / name).write_text(customer)
    return f"refunded {customer}"


def _model(messages: list[ChatMessage], tools: Any) -> ChatMessage | str:
    results = [m.tool_result_block for m in messages if m.tool_result_block is not None]
    if results:
        result = results[-1]
        return f"declined: {result.text}" if result.is_error else f"done: {result.text}"
    customer = next(m.text for m in messages if m.role is MessageRole.USER)
    call = ToolCallBlock(id=call_id_of(customer), name="refund", input={"customer": customer})
    return ChatMessage.assistant(tool_calls=[call])


async def _ask(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    # Each run's start noted: a run restored parked from a checkpoint does not start again.
    trace_dir = Path(str(ctx.config.get("e2e.trace-dir")))
    (trace_dir / f"ask-{os.getpid()}-{uuid.uuid4().hex}.log").write_text(record["key"])
    ctx.send_event(ChatRequestEvent(model="model", messages=[ChatMessage.user(record["key"])]))


async def _answer(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ChatResponseEvent) and event.response is not None
    ctx.send_event(OutputEvent(output={"key": str(ctx.key), "reply": event.response.text}))


class ApprovalAgent(Agent):
    """One refund call per question, each waiting for approval."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("ask", [InputEvent], _ask)
        self.add_action("answer", [ChatResponseEvent], _answer)
        self.add_resource(
            "refund",
            ResourceType.TOOL,
            Tool.from_callable(
                refund, injected_args={"trace_dir": InjectedArg.from_config("e2e.trace-dir")}
            ),
        )
        self.add_resource(
            "connection",
            ResourceType.CHAT_MODEL_CONNECTION,
            FunctionChatModelConnection(function=_model),
        )
        self.add_resource(
            "model",
            ResourceType.CHAT_MODEL,
            ResourceDescriptor(clazz=BaseChatModelSetup, connection="connection", tools=["refund"]),
        )


# ---------------------------------------------------------------- the jobs' records


class QuestionsThenDecisions:
    """Record ``i`` of a job's source, ``interval`` s apart: a question per key, ``fillers``
    Nones (dropped by `present`: time for a checkpoint, a savepoint or a kill while the runs
    are parked), then a decision per key: even keys approved, odd ones declined."""

    def __init__(self, keys: int, fillers: int, interval: float = 0.02) -> None:
        self.keys = keys
        self.fillers = fillers
        self.interval = interval

    @property
    def count(self) -> int:
        return 2 * self.keys + self.fillers

    def __call__(self, i: int) -> Any:
        time.sleep(self.interval)
        if i < self.keys:
            return {"key": f"k{i}"}
        if i < self.keys + self.fillers:
            return None
        n = i - self.keys - self.fillers
        key = f"k{n}"
        return ToolApproval(call_id=call_id_of(key), approved=n % 2 == 0, reason="no", key=key)


def present(record: Any) -> bool:
    return record is not None


def key_of(record: Any) -> str:
    """One key selector for questions and decisions."""
    return record.key if isinstance(record, ToolApproval) else record["key"]


def output_line(output: Any) -> str:
    return json.dumps({"output": output["key"], "reply": output["reply"]})


def request_line(request: Any) -> str:
    assert isinstance(request, ApprovalRequest)
    return json.dumps({"request": request.key, "call_id": request.call_id})
