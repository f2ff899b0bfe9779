"""Agents the end-to-end jobs run (importable by the Flink workers: the repo root is on
their PYTHONPATH). Model calls go to `FunctionChatModelConnection`s: no network."""

from __future__ import annotations

import asyncio
import base64
import os
import time
import zlib
from pathlib import Path
from typing import Any, ClassVar

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.chat_models.function_model import FunctionChatModelConnection
from flink_agents.api.content_blocks import ImageBlock, ToolCallBlock
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext

__all__ = [
    "PNG_B64",
    "ChartAgent",
    "CheckpointedAgent",
    "OrderAgent",
    "PacedModelAgent",
    "SlowModelAgent",
    "UpperAgent",
    "chart_reply",
]

PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(200))).decode()
"""The image the chart tool returns."""


# ---------------------------------------------------------------- DataStream / Table echo


async def _upper(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    ctx.send_event(OutputEvent(output={"id": record["id"], "reply": str(record["text"]).upper()}))


class UpperAgent(Agent):
    """Answers `{"id", "text"}` with `{"id", "reply": TEXT}`."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("upper", [InputEvent], _upper)


# ---------------------------------------------------------------- many keys, order per key


async def _remember(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    # Different keys take different, overlapping times.
    await asyncio.sleep((zlib.crc32(f"{record['key']}/{record['n']}".encode()) % 20) / 1000)
    seen = list(ctx.short_term_memory.get("seen", []))
    seen.append(record["n"])
    ctx.short_term_memory["seen"] = seen
    ctx.send_event(OutputEvent(output={"key": record["key"], "n": record["n"], "seen": seen}))


class OrderAgent(Agent):
    """Appends each input's `n` to the key's short-term memory and outputs the list."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("remember", [InputEvent], _remember)


# ---------------------------------------------------------------- tool round trip, media


def chart_reply(messages: list[ChatMessage], tools: Any) -> ChatMessage | str:
    """First turn: call `render_chart`; second: describe the image the tool returned."""
    last = messages[-1]
    if last.role is MessageRole.USER:
        call = ToolCallBlock(id="call_1", name="render_chart", input={"title": last.text})
        return ChatMessage.assistant("Rendering.", tool_calls=[call])
    block = last.tool_result_block
    images = [b for b in (block.content if block else []) if isinstance(b, ImageBlock)]
    if not images:
        return "no image"
    image = images[0]
    return f"image {image.name} {image.mime_type} {len(base64.b64decode(image.data or ''))} bytes"


async def render_chart(title: str) -> ImageBlock:
    """Render a chart as PNG.

    Args:
        title: The chart title.
    """
    return ImageBlock(mime_type="image/png", data=PNG_B64, name=f"{title}.png")


async def _ask_chart(event: Event, ctx: RunnerContext) -> None:
    title = str(event.attributes["input"]["title"])
    ctx.send_event(ChatRequestEvent(model="chart_model", messages=[ChatMessage.user(title)]))


async def _answer(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ChatResponseEvent)
    text = event.response.text if event.response is not None else None
    ctx.send_event(OutputEvent(output={"key": ctx.key, "answer": text}))


class ChartAgent(Agent):
    """Asks a model that calls a tool returning an image, then reports what came back."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("ask", [InputEvent], _ask_chart)
        self.add_action("answer", [ChatResponseEvent], _answer)
        self.add_resource(
            "chart_connection",
            ResourceType.CHAT_MODEL_CONNECTION,
            ResourceDescriptor(clazz=FunctionChatModelConnection, function=chart_reply),
        )
        self.add_resource(
            "chart_model",
            ResourceType.CHAT_MODEL,
            ResourceDescriptor(
                clazz=BaseChatModelSetup, connection="chart_connection", tools=["render_chart"]
            ),
        )
        self.add_resource("render_chart", ResourceType.TOOL, render_chart)


# ---------------------------------------------------------------- a slow model


def _echo_reply(messages: list[ChatMessage], tools: Any) -> str:
    return f"echo {messages[-1].text}"


async def _ask_slow(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    ctx.sensory_memory["accepted_at"] = time.time()
    message = ChatMessage.user(f"{record['key']}/{record['n']}")
    ctx.send_event(ChatRequestEvent(model="slow_model", messages=[message]))


async def _answer_slow(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ChatResponseEvent)
    text = event.response.text if event.response is not None else None
    ctx.send_event(OutputEvent(output={"key": ctx.key, "answer": text, "done_at": time.time()}))


class SlowModelAgent(Agent):
    """One model call of `latency` seconds per input."""

    def __init__(self, latency: float) -> None:
        super().__init__()
        self.add_action("ask", [InputEvent], _ask_slow)
        self.add_action("answer", [ChatResponseEvent], _answer_slow)
        self.add_resource(
            "slow_connection",
            ResourceType.CHAT_MODEL_CONNECTION,
            ResourceDescriptor(
                clazz=FunctionChatModelConnection,
                function=_echo_reply,
                latency=latency,
                record_calls=False,
            ),
        )
        self.add_resource(
            "slow_model",
            ResourceType.CHAT_MODEL,
            ResourceDescriptor(clazz=BaseChatModelSetup, connection="slow_connection"),
        )


# ---------------------------------------------------------------- a paced model


async def _paced_reply(messages: list[ChatMessage], tools: Any) -> str:
    """Answers ``"<key>/<n>"`` after `PacedModelAgent.latency_s` of the key's number."""
    text = messages[-1].text or ""
    key = text.split("/")[0]
    await asyncio.sleep(PacedModelAgent.latency_s(int(key.lstrip("k"))))
    return f"echo {text}"


class PacedModelAgent(Agent):
    """One model call per input that takes a little longer for each key (key ``k<i>``:
    `latency_s(i)`): a key's answers come one after the other, the keys' spread out."""

    @staticmethod
    def latency_s(index: int) -> float:
        return 0.2 + 0.05 * index

    def __init__(self) -> None:
        super().__init__()
        self.add_action("ask", [InputEvent], _ask_slow)
        self.add_action("answer", [ChatResponseEvent], _answer_slow)
        self.add_resource(
            "slow_connection",
            ResourceType.CHAT_MODEL_CONNECTION,
            ResourceDescriptor(
                clazz=FunctionChatModelConnection, function=_paced_reply, record_calls=False
            ),
        )
        self.add_resource(
            "slow_model",
            ResourceType.CHAT_MODEL,
            ResourceDescriptor(clazz=BaseChatModelSetup, connection="slow_connection"),
        )


# ---------------------------------------------------------------- outputs mid-run


async def _early(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    ctx.send_event(OutputEvent(output={**record, "part": "early"}))
    ctx.send_event(Event("e2e_later", {"record": record}))


async def _late(event: Event, ctx: RunnerContext) -> None:
    await asyncio.sleep(TwoPartAgent.PAUSE_S)
    ctx.send_event(OutputEvent(output={**event.attributes["record"], "part": "late"}))


class TwoPartAgent(Agent):
    """Sends an output at once, then another `PAUSE_S` later in the same run."""

    PAUSE_S: ClassVar[float] = 0.6

    def __init__(self) -> None:
        super().__init__()
        self.add_action("early", [InputEvent], _early)
        self.add_action("late", ["e2e_later"], _late)


# ---------------------------------------------------------------- checkpoints, a failure


class WorkEvent(Event):
    """The second step of a `CheckpointedAgent` run."""

    EVENT_TYPE: ClassVar[str] = "e2e_work"


def _trace(ctx: RunnerContext, action: str, record: dict[str, Any]) -> None:
    """One line per action execution, so a test can count re-executions."""
    directory = ctx.config.get("e2e.trace-dir")
    if directory:
        line = f"{time.time():.6f} {action} {record['key']} {record['n']}\n"
        with open(Path(directory) / f"trace-{os.getpid()}.log", "a") as f:
            f.write(line)


async def _prepare(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    _trace(ctx, "prepare", record)
    ctx.sensory_memory["record"] = record
    ctx.send_event(WorkEvent(attributes={"record": record}))


async def _work(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["record"]
    _trace(ctx, "work", record)
    await asyncio.sleep(float(ctx.config.get("e2e.work-seconds", 0.05)))
    fail_on = ctx.config.get("e2e.fail-on")
    marker = Path(str(ctx.config.get("e2e.trace-dir", "."))) / "failed-once"
    if fail_on == f"{record['key']}/{record['n']}" and not marker.exists():
        marker.write_text(f"{time.time():.6f}")
        raise RuntimeError(f"injected failure on {fail_on}")
    seen = list(ctx.short_term_memory.get("seen", []))
    seen.append(record["n"])
    ctx.short_term_memory["seen"] = seen
    ctx.send_event(OutputEvent(output={"key": record["key"], "n": record["n"], "seen": seen}))


class CheckpointedAgent(Agent):
    """Two steps per input; the `e2e.fail-on` input raises in its second step once."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("prepare", [InputEvent], _prepare)
        self.add_action("work", [WorkEvent], _work)
