"""The path of a sync tool call through the built-in actions: on a tool thread, events the
runtime builds sent without a second check or copy, no request fingerprint where no
durable call log would read it."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api import (
    Agent,
    ChatMessage,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    OutputEvent,
    RunnerContext,
    ToolCallBlock,
    ToolMetadata,
    ToolRequestEvent,
    ToolResponseEvent,
)
from flink_agents.runtime import builtin_actions
from flink_agents.runtime.action_context import ActionContext, event_id_for
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.builtin_actions import CHAT_ACTION, TOOL_ACTION
from flink_agents.runtime.durable import DurableCallLog, SqliteActionStateStore
from flink_agents.runtime.run_state import KeyState
from tests.runtime.chat_agents import chat_agent, only_response, run_local


def where(ticket: str) -> str:
    """The thread this call runs on.

    Args:
        ticket: The ticket id.
    """
    return f"{ticket} on {threading.current_thread().name}"


def ask_once(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    """Calls the tool once, then answers with what it said."""
    result = messages[-1].tool_result_block
    if result is not None:
        return result.text
    return ChatMessage.assistant(
        tool_calls=[ToolCallBlock(id="c1", name="where", input={"ticket": "T1"})]
    )


def test_a_sync_tool_runs_on_a_tool_thread_and_the_model_reads_its_output() -> None:
    model = FunctionChatModelConnection(function=ask_once)
    for _ in range(3):  # the first call and those of a tool known to be fast
        outputs, _ = run_local(
            chat_agent(model, tools={"where": where}), [{"key": "k", "value": "go"}]
        )
        response = only_response(outputs)
        assert response.ok and response.response is not None
        assert response.response.text.startswith("T1 on agent-tool-")


def test_the_chat_loop_sends_its_events_with_their_lineage() -> None:
    seen: list[Event] = []

    async def watch(event: Event, ctx: RunnerContext) -> None:
        seen.append(event)

    agent = chat_agent(FunctionChatModelConnection(function=ask_once), tools={"where": where})
    agent.add_action("watch", [ToolRequestEvent, ToolResponseEvent], watch)
    outputs, _ = run_local(agent, [{"key": "k", "value": "go"}])
    assert only_response(outputs).ok
    request, response = seen
    assert isinstance(request, ToolRequestEvent) and isinstance(response, ToolResponseEvent)
    # Steps: 0 start (input), 1 chat action (request), 2 tool action and watch (tool
    # request); each sent event is the first its action made.
    assert request.id == event_id_for("k", 0, 1, 0)
    assert request.upstream_action_name == CHAT_ACTION
    assert [c.id for c in request.tool_calls] == ["c1"]
    assert response.id == event_id_for("k", 0, 2, 0)
    assert response.upstream_action_name == TOOL_ACTION
    assert response.upstream_event_id == request.id and response.request_id == request.id
    assert [r.call_id for r in response.responses] == ["c1"]


def test_an_event_sent_as_the_runtimes_own_is_the_object_the_run_keeps() -> None:
    built = OutputEvent(output="made by the runtime")

    async def send(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(ctx, ActionContext)
        ctx.send_own_event(built)

    engine = AgentEngine(Agent().add_action("send", [InputEvent], send))
    key_state = KeyState()
    run = engine.start_run("k", "x", key_state)
    asyncio.run(engine.step(run, key_state))
    assert run.outputs == ["made by the runtime"]
    assert built.id == event_id_for("k", 0, 0, 0)
    assert built.upstream_event_id == event_id_for("k", 0, "input")
    assert built.upstream_action_name == "send"
    engine.close()


def test_no_request_fingerprint_is_made_without_a_durable_call_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    fingerprint = builtin_actions.model_request_fingerprint

    def counted(**request: Any) -> str:
        made.append(len(request["messages"]))
        return fingerprint(**request)

    monkeypatch.setattr(builtin_actions, "model_request_fingerprint", counted)
    model = FunctionChatModelConnection(function=lambda messages, tools: "hi")
    outputs, _ = run_local(chat_agent(model), [{"key": "k", "value": "go"}])
    assert only_response(outputs).ok
    assert made == []  # nothing would have read it

    log = DurableCallLog(SqliteActionStateStore(tmp_path / "calls.db"))
    engine = AgentEngine(chat_agent(model), call_log=log)
    key_state = KeyState()
    asyncio.run(engine.run(engine.start_run("k", "go", key_state), key_state))
    assert made == [1]  # it enters the recorded call's digest
    engine.close()
    log.close()
