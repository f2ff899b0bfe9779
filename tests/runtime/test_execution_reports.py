"""Execution reports: the action contexts report, the built-in chat and tool actions report
their model, tool and parser calls, and ``event-log.trace.enabled`` writes them as
upstream's lifecycle records in upstream's file event log."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.api import (
    Agent,
    ChatMessage,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    MessageRole,
    OutputEvent,
    RunnerContext,
    ToolCallBlock,
)
from flink_agents.api.redaction import clear_registered_secrets, register_secret
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.api.trace import (
    ExecutionEntityTypes,
    ExecutionLifecycleEvents,
    ExecutionReporter,
    ExecutionReporters,
)
from flink_agents.cli.trace_tree import build_trace_forest, read_event_records
from flink_agents.runtime import builtin_actions
from flink_agents.runtime.local_runner import LocalExecutionEnvironment
from tests.runtime.chat_agents import chat_agent

SECRET = "sk-live-7f3a9b2c4d5e6f708192a3b4c5d6e7f8"


def lookup(city: str) -> str:
    """Look a city up."""
    if city == "nowhere":
        raise LookupError(f"no such city; key {SECRET}")
    return f"{city}: sunny"


def model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    if messages[-1].role is MessageRole.USER:
        city = messages[-1].text
        return ChatMessage.assistant(
            tool_calls=[ToolCallBlock(id="c1", name="lookup", input={"city": city})]
        )
    return "done"


def run(directory: Path, question: str = "Paris", **options: Any) -> list[dict[str, Any]]:
    """The chat agent with one tool call, on the local runner; the records it wrote."""
    env = LocalExecutionEnvironment(
        {
            "baseLogDir": str(directory),
            "eventLoggerType": "file",
            "event-log.trace.enabled": True,
            **options,
        }
    )
    agent = chat_agent(FunctionChatModelConnection(function=model), tools={"lookup": lookup})
    env.from_list([{"key": "user-1", "value": question}]).apply(agent)
    env.execute()
    records = []
    for path in sorted(directory.iterdir(), key=lambda p: p.stat().st_mtime_ns):
        records.extend(json.loads(line) for line in path.read_text().splitlines())
    return records


def lifecycle(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["eventType"] in ExecutionLifecycleEvents.EVENT_TYPES]


def summary(records: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(r["entityType"], r["entityName"], r["status"]) for r in lifecycle(records)]


def test_actions_model_and_tool_calls_are_upstreams_lifecycle_records(tmp_path: Path) -> None:
    records = run(tmp_path)
    assert summary(records) == [
        ("action", "start", "started"),
        ("action", "start", "success"),
        ("action", "_chat_model_action", "started"),
        ("llm", "model", "started"),
        ("llm", "model", "success"),
        ("action", "_chat_model_action", "success"),
        ("action", "_tool_call_action", "started"),
        ("tool", "lookup", "started"),
        ("tool", "lookup", "success"),
        ("action", "_tool_call_action", "success"),
        ("action", "_chat_model_action", "started"),
        ("llm", "model", "started"),
        ("llm", "model", "success"),
        ("action", "_chat_model_action", "success"),
        ("action", "finish", "started"),
        ("action", "finish", "success"),
    ]
    steps = lifecycle(records)
    # Upstream's record: its fields in its order.
    assert list(steps[3]) == [
        "timestamp",
        "logLevel",
        "inputRunId",
        "businessKey",
        "executionId",
        "parentExecutionId",
        "entityType",
        "entityName",
        "entityMetadata",
        "eventId",
        "eventType",
        "status",
        "eventAttributes",
    ]
    assert {r["inputRunId"] for r in steps} == {steps[0]["inputRunId"]}
    assert {r["businessKey"] for r in steps} == {"user-1"}
    chat, llm_started, llm_done = steps[2], steps[3], steps[4]
    assert "parentExecutionId" not in chat
    assert llm_started["parentExecutionId"] == chat["executionId"]
    # One execution: its start and its end share an id, a new one per execution.
    assert llm_started["executionId"] == llm_done["executionId"] != steps[11]["executionId"]
    assert llm_started["entityMetadata"] == {"model": "test-model"}
    assert llm_started["eventType"] == "_execution_started_event"
    assert llm_done["eventType"] == "_execution_finished_event"
    tool_request = next(r for r in records if r["eventType"] == "_tool_request_event")
    assert steps[7]["entityMetadata"] == {
        "toolRequestEventId": tool_request["eventId"],
        "toolCallId": "c1",
        "toolType": "function",
    }
    assert steps[7]["parentExecutionId"] == steps[6]["executionId"]


def test_without_trace_enabled_there_are_no_lifecycle_records(tmp_path: Path) -> None:
    records = run(tmp_path, **{"event-log.trace.enabled": False})
    assert len(records) == 6 and not lifecycle(records)


def test_without_trace_enabled_nothing_is_built_for_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The off path is every call's: no report objects or metadata, no wrapped callers.
    built: list[str] = []

    class Counted(builtin_actions.MadeCalls):
        def __init__(self, *args: Any) -> None:
            built.append("calls")
            super().__init__(*args)

    def metadata(*args: Any) -> dict[str, Any]:
        built.append("metadata")
        return {}

    monkeypatch.setattr(builtin_actions, "MadeCalls", Counted)
    monkeypatch.setattr(builtin_actions, "_tool_metadata", metadata)
    monkeypatch.setattr(builtin_actions, "_llm_metadata", metadata)
    assert not lifecycle(run(tmp_path / "off", **{"event-log.trace.enabled": False}))
    assert built == []
    assert lifecycle(run(tmp_path / "on"))  # the same agent with trace on builds them
    assert "calls" in built and "metadata" in built


def test_calls_recorded_without_trace_are_reused_with_it(tmp_path: Path) -> None:
    # The reporting caller keeps the durable call log's identity of the plain one.
    store = f"sqlite:///{tmp_path}/calls.db"
    run(tmp_path / "off", **{"durable-execution.store": store, "event-log.trace.enabled": False})
    again = run(tmp_path / "on", **{"durable-execution.store": store})
    assert [s for s in summary(again) if s[0] in ("llm", "tool")] == [
        ("llm", "model", "reused"),
        ("tool", "lookup", "reused"),
        ("llm", "model", "reused"),
    ]


def test_a_failed_tool_call_is_reported_failed_without_its_secret(tmp_path: Path) -> None:
    register_secret(SECRET)
    try:
        records = run(tmp_path, question="nowhere")
    finally:
        clear_registered_secrets()
    text = json.dumps(records)
    assert SECRET not in text
    (failed,) = [r for r in lifecycle(records) if r["status"] == "failed"]
    assert failed["entityType"] == "tool" and failed["entityName"] == "lookup"
    assert failed["eventType"] == "_execution_failed_event"
    assert failed["problemCategory"] == "tool_call_failed"
    assert failed["eventAttributes"]["errorType"].endswith("ToolCallFailedError")
    assert "no such city" in failed["eventAttributes"]["errorMessage"]


def test_a_failed_model_call_is_reported_with_its_category(tmp_path: Path) -> None:
    def down(messages: list[ChatMessage], tools: list[ToolMetadata]) -> str:
        from flink_agents.api.errors import ChatModelError

        raise ChatModelError("provider is down", retryable=False)

    env = LocalExecutionEnvironment(
        {
            "baseLogDir": str(tmp_path),
            "eventLoggerType": "file",
            "event-log.trace.enabled": True,
            "error-handling-strategy": "ignore",
        }
    )
    agent = chat_agent(FunctionChatModelConnection(function=down))
    env.from_list([{"key": "k", "value": "hi"}]).apply(agent)
    env.execute()
    (path,) = tmp_path.iterdir()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    llm = [r for r in lifecycle(records) if r["entityType"] == "llm"]
    assert [r["status"] for r in llm] == ["started", "failed"]
    assert llm[1]["problemCategory"] == "model_call_failed"
    assert llm[1]["eventAttributes"] == {
        "errorType": "flink_agents.api.errors.ChatModelError",
        "errorMessage": "provider is down",
    }


class Answer(BaseModel):
    city: str


def test_structured_output_is_reported_as_a_parser_execution(tmp_path: Path) -> None:
    def answer(messages: list[ChatMessage], tools: list[ToolMetadata]) -> str:
        return '{"city": "Paris"}'

    env = LocalExecutionEnvironment(
        {"baseLogDir": str(tmp_path), "eventLoggerType": "file", "event-log.trace.enabled": True}
    )
    agent = chat_agent(FunctionChatModelConnection(function=answer), output_schema=Answer)
    env.from_list([{"key": "k", "value": "where?"}]).apply(agent)
    env.execute()
    (path,) = tmp_path.iterdir()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    parser = [r for r in lifecycle(records) if r["entityType"] == "parser"]
    assert [(r["entityName"], r["status"]) for r in parser] == [
        ("structured_output", "started"),
        ("structured_output", "success"),
    ]


def test_a_replayed_call_is_reported_reused_not_made_again(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/calls.db"
    first = run(tmp_path / "first", **{"durable-execution.store": store})
    again = run(tmp_path / "again", **{"durable-execution.store": store})
    calls = [s for s in summary(first) if s[0] in ("llm", "tool")]
    assert [s[2] for s in calls] == ["started", "success"] * 3
    replayed = [s for s in summary(again) if s[0] in ("llm", "tool")]
    assert replayed == [
        ("llm", "model", "reused"),
        ("tool", "lookup", "reused"),
        ("llm", "model", "reused"),
    ]
    reused = [r for r in lifecycle(again) if r["status"] == "reused"]
    assert {r["eventType"] for r in reused} == {"_execution_reused_event"}
    # The same input run: its id does not change when the run is made again.
    assert reused[0]["inputRunId"] == lifecycle(first)[0]["inputRunId"]


def test_an_action_reports_through_its_context(tmp_path: Path) -> None:
    seen: list[bool] = []

    async def act(event: Event, ctx: RunnerContext) -> None:
        seen.append(isinstance(ctx, ExecutionReporter))
        meta: Mapping[str, Any] = {"source": "rates"}
        ExecutionReporters.started(ctx, ExecutionEntityTypes.TOOL, "fetch", meta)
        ExecutionReporters.failed(
            ctx, ExecutionEntityTypes.TOOL, "fetch", meta, ValueError("bad"), "fetch_failed"
        )
        ctx.send_event(OutputEvent(output=1))

    agent = Agent()
    agent.add_action("act", [InputEvent], act)
    env = LocalExecutionEnvironment(
        {"baseLogDir": str(tmp_path), "eventLoggerType": "file", "event-log.trace.enabled": True}
    )
    env.from_list([{"key": "k", "value": 1}]).apply(agent)
    env.execute()
    assert seen == [True]
    (path,) = tmp_path.iterdir()
    steps = lifecycle([json.loads(line) for line in path.read_text().splitlines()])
    started, failed = steps[1], steps[2]
    assert (started["entityName"], started["entityMetadata"]) == ("fetch", {"source": "rates"})
    assert failed["executionId"] == started["executionId"]
    assert failed["problemCategory"] == "fetch_failed"
    assert failed["eventAttributes"] == {"errorType": "builtins.ValueError", "errorMessage": "bad"}


def test_the_trace_tree_reads_past_the_lifecycle_records(tmp_path: Path) -> None:
    run(tmp_path)
    warnings: list[dict[str, Any]] = []
    forest = build_trace_forest(read_event_records(tmp_path, warnings), warnings)
    assert warnings == []
    assert len(forest["roots"]) == 1
    # The business events only: six, none of them a lifecycle record.
    assert len(forest["nodes"]) == 6
    assert not {n["eventType"] for n in forest["nodes"].values()} & set(
        ExecutionLifecycleEvents.EVENT_TYPES
    )


@pytest.mark.parametrize("level", ["standard", "verbose"])
def test_lifecycle_records_carry_the_log_level(tmp_path: Path, level: str) -> None:
    records = lifecycle(run(tmp_path, **{"event-log.level": level}))
    assert {r["logLevel"] for r in records} == {level.upper()}
