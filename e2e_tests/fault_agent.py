"""The agent the fault-injection matrix runs, and what it writes down.

Each input `{"key", "n"}` takes two actions and a chat round trip with a tool call:

    ask (InputEvent) -> model turn 0 -> tool `lookup` -> model turn 1 -> answer (ChatResponseEvent)

`answer` appends `n` to the key's short-term memory and outputs `{"key", "n", "seen"}`.

A JSON control file (its path is the agent option `e2e.control`, and an argument of the model
function and the tool) names one failure point and the input it hits, once:

| point | what fails |
|---|---|
| `action_before_model` | `ask` raises before it sends its chat request |
| `action_after_model` | `answer` raises after the model answered |
| `tool` | the tool dies in the middle of its call (a `BaseException`: not an error result) |
| `model` | the model call fails (a 503); under error strategy `fail` the chat action fails |
| `drain` | `answer` of the last input raises 0.5 s after the input ended (during the drain) |

Store outages (`OUTAGE_POINTS`, nothing raises; the store is out for `STORE_OUTAGE_S` from the
middle of the tool call on, so the tool's own outcome waits for it):

| point | what fails |
|---|---|
| `store_read_only` | the SQLite store's files are made immutable (`chattr +i`): reads work, writes fail |
| `store_killed` | the PostgreSQL server goes away: the control's `store_control` port (a proxy in the test) drops every connection and refuses new ones |

Every model and tool call writes a `start` line, then `end` (or `fail`), with a token of its
own, to `calls-<pid>.log` in the trace folder: a test counts the calls made more than once.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.chat_models.function_model import FunctionChatModelConnection
from flink_agents.api.content_blocks import ToolCallBlock
from flink_agents.api.errors import ChatModelError
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext

__all__ = [
    "FAILURE_POINTS",
    "OUTAGE_POINTS",
    "STORE_OUTAGE_S",
    "FaultAgent",
    "InjectedCrash",
    "InjectedFailure",
    "set_immutable",
    "write_control",
]

FAILURE_POINTS = ("action_before_model", "action_after_model", "tool", "model", "drain")
OUTAGE_POINTS = ("store_read_only", "store_killed")
STORE_OUTAGE_S = 2.0

MODEL_LATENCY_S = 0.05
TOOL_LATENCY_S = 0.02


class InjectedFailure(RuntimeError):
    """The failure a test asked for."""


class InjectedCrash(BaseException):
    """A tool dying mid-call (not an exception the tool action turns into an error result)."""


def write_control(path: Path, *, point: str, target: str, trace_dir: Path, **extra: Any) -> None:
    control = {"point": point, "target": target, "trace": str(trace_dir), **extra}
    path.write_text(json.dumps(control))


def set_immutable(paths: list[str], immutable: bool) -> None:
    """``chattr +i`` (or ``-i``) the files that exist: even root cannot write them."""
    existing = [p for p in paths if os.path.exists(p)]
    if existing:
        subprocess.run(["chattr", "+i" if immutable else "-i", *existing], check=True)


def _store_out(control: dict[str, Any]) -> None:
    """Start the outage the control names; it ends by itself after STORE_OUTAGE_S."""
    if control["point"] == "store_read_only":
        files = [control["store"] + suffix for suffix in ("", "-wal")]
        set_immutable(files, True)
        threading.Timer(STORE_OUTAGE_S, set_immutable, (files, False)).start()
    else:  # store_killed: the proxy cuts and restores by itself
        socket.create_connection(("127.0.0.1", int(control["store_control"]))).close()


def _control(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def _fail_once(control: dict[str, Any], point: str, target: str) -> bool:
    """Whether this call should fail: the control's point and target, the first time (a
    marker file `failed` holds when)."""
    if control["point"] != point or control["target"] != target:
        return False
    try:
        with open(Path(control["trace"]) / "failed", "x") as f:  # atomic: one failure
            f.write(f"{time.time():.6f}")
    except FileExistsError:
        return False
    return True


def _log_call(
    control: dict[str, Any], what: str, target: str, turn: int, status: str, token: str
) -> None:
    line = f"{time.time():.6f} {what} {target} {turn} {status} {token}\n"
    with open(Path(control["trace"]) / f"calls-{os.getpid()}.log", "a") as f:
        f.write(line)


def _target(record: dict[str, Any]) -> str:
    return f"{record['key']}/{record['n']}"


# ---------------------------------------------------------------- the model and the tool


async def fault_model(messages: list[ChatMessage], tools: Any, *, control: str) -> Any:
    """Turn 0: call `lookup`; turn 1: answer with what it returned."""
    c = _control(control)
    target = messages[0].text
    turn = sum(1 for m in messages if m.role is MessageRole.ASSISTANT)
    token = uuid.uuid4().hex
    _log_call(c, "model", target, turn, "start", token)
    await asyncio.sleep(MODEL_LATENCY_S)
    if turn == 0 and _fail_once(c, "model", target):
        _log_call(c, "model", target, turn, "fail", token)
        raise ChatModelError("injected outage", status_code=503, retryable=True, kind="server")
    _log_call(c, "model", target, turn, "end", token)
    if turn == 0:
        call = ToolCallBlock(
            id=f"call-{target}", name="lookup", input={"item": target, "control": control}
        )
        return ChatMessage.assistant("", tool_calls=[call])
    result = messages[-1].tool_result_block
    return f"answer {target}: {result.text if result is not None else None}"


async def lookup(item: str, control: str) -> str:
    """Look an item up.

    Args:
        item: What to look up.
        control: The test's control file.
    """
    c = _control(control)
    token = uuid.uuid4().hex
    _log_call(c, "tool", item, 0, "start", token)
    await asyncio.sleep(TOOL_LATENCY_S)
    if _fail_once(c, "tool", item):
        _log_call(c, "tool", item, 0, "fail", token)
        raise InjectedCrash(f"tool died on {item}")
    if c["point"] in OUTAGE_POINTS and _fail_once(c, c["point"], item):
        _store_out(c)
    _log_call(c, "tool", item, 0, "end", token)
    return f"found {item}"


# ---------------------------------------------------------------- actions


async def _ask(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    c = _control(str(ctx.config.get("e2e.control")))
    if _fail_once(c, "action_before_model", _target(record)):
        raise InjectedFailure(f"ask failed on {_target(record)}")
    ctx.sensory_memory["record"] = record
    ctx.send_event(
        ChatRequestEvent(model="fault_model", messages=[ChatMessage.user(_target(record))])
    )


async def _answer(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ChatResponseEvent)
    record = ctx.sensory_memory["record"]
    target = _target(record)
    c = _control(str(ctx.config.get("e2e.control")))
    if c["point"] == "drain" and c["target"] == target:
        await asyncio.sleep(0.5)  # the input has ended by now: the operator drains
        if _fail_once(c, "drain", target):
            raise InjectedFailure(f"answer failed during the drain on {target}")
    if _fail_once(c, "action_after_model", target):
        raise InjectedFailure(f"answer failed on {target}")
    seen = [*ctx.short_term_memory.get("seen", []), record["n"]]
    ctx.short_term_memory["seen"] = seen
    answer = event.response.text if event.response is not None else None
    ctx.send_event(
        OutputEvent(output={"key": record["key"], "n": record["n"], "seen": seen, "answer": answer})
    )


class FaultAgent(Agent):
    """See the module doc; `control` is the control file's path."""

    def __init__(self, control: str) -> None:
        super().__init__()
        self.add_action("ask", [InputEvent], _ask)
        self.add_action("answer", [ChatResponseEvent], _answer)
        self.add_resource(
            "fault_connection",
            ResourceType.CHAT_MODEL_CONNECTION,
            ResourceDescriptor(
                clazz=FunctionChatModelConnection,
                function=partial(fault_model, control=control),
                record_calls=False,
            ),
        )
        self.add_resource(
            "fault_model",
            ResourceType.CHAT_MODEL,
            ResourceDescriptor(
                clazz=BaseChatModelSetup, connection="fault_connection", tools=["lookup"]
            ),
        )
        self.add_resource("lookup", ResourceType.TOOL, lookup)
