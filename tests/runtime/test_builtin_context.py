"""The built-in actions use upstream's `RunnerContext` and the `ActionContext`'s part for
built-in actions, nothing else of the context, the run or the engine."""

from __future__ import annotations

import ast
from pathlib import Path

from flink_agents.api import ChatMessage, FunctionChatModelConnection
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.runtime.action_context import ActionContext
from flink_agents.runtime.agent_engine import AgentEngine
from tests.runtime.chat_agents import MODEL, chat_agent

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"
BUILTIN_MODULES = ("builtin_actions.py", "context_retrieval.py", "approvals.py")
BUILTIN_PART = {
    "send_own_event",
    "chat_loops",
    "records_calls",
    "next_call_index",
    "forget_durable_calls",
    "approval_decisions",
    "park",
    "tracing",
    "tool_threads",
    "tool_metadata",
    "reports_executions",
    "report_execution_reused",
}
"""What `ActionContext` offers the built-in actions beyond `RunnerContext` (its module
doc lists the same)."""


def context_uses(source: str) -> tuple[set[str], list[str]]:
    """The attributes read of a name ``ctx`` in ``source``, and its reaches past them:
    ``getattr(ctx, ...)`` and ``isinstance(ctx, ...)`` (a cast down to a class)."""
    attributes: set[str] = set()
    reaches: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "ctx":
            attributes.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) in ("getattr", "isinstance")
            and node.args
            and getattr(node.args[0], "id", None) == "ctx"
        ):
            reaches.append(f"{ast.unparse(node)} (line {node.lineno})")
    return attributes, reaches


def test_the_check_sees_private_reads_and_casts() -> None:
    attributes, reaches = context_uses(
        "def f(ctx):\n"
        "    ctx.send_own_event(e)\n"
        "    engine = getattr(ctx, '_engine', None) if isinstance(ctx, A) else None\n"
        "    return ctx._run.key\n"
    )
    assert attributes == {"send_own_event", "_run"}
    assert len(reaches) == 2


def test_builtin_actions_use_only_the_runner_context_and_the_builtin_part() -> None:
    public = {name for name in dir(RunnerContext) if not name.startswith("_")}
    for module in BUILTIN_MODULES:
        attributes, reaches = context_uses((RUNTIME / module).read_text())
        assert reaches == [], module
        assert attributes - public - BUILTIN_PART == set(), module
    assert {name for name in dir(ActionContext) if not name.startswith("_")} >= BUILTIN_PART


def test_tool_metadata_is_looked_up_once_per_engine_and_dropped_with_its_resources() -> None:
    def lookup(ticket: str) -> str:
        """Look a ticket up."""
        return ticket

    def answer(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage:
        raise AssertionError("not called")

    agent = chat_agent(FunctionChatModelConnection(function=answer), tools={"lookup": lookup})
    engine = AgentEngine(agent)
    first = engine.tool_metadata(MODEL)
    assert [t.name for t in first] == ["lookup"]
    assert all(isinstance(t, ToolMetadata) for t in first)
    assert engine.tool_metadata(MODEL) is first  # kept
    engine.close()  # the resources go, and what was read of them
    again = engine.tool_metadata(MODEL)
    assert again is not first and again == first
    engine.close()
