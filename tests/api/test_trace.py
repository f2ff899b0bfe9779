"""flink_agents.api.trace: the reporting API an action or a tool sees."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest

from flink_agents.api.tools import ToolExecutionMetadataProvider
from flink_agents.api.trace import (
    ExecutionEntityTypes,
    ExecutionLifecycleEvents,
    ExecutionProblemCategories,
    ExecutionReporter,
    ExecutionReporters,
    ToolExecutionMetadataKeys,
)


class Recorder(ExecutionReporter):
    def __init__(self, fail: bool = False) -> None:
        self.reports: list[tuple[Any, ...]] = []
        self.fail = fail

    def report_execution_started(
        self, entity_type: str, entity_name: str, entity_metadata: Mapping[str, Any] | None = None
    ) -> None:
        if self.fail:
            raise OSError("disk full")
        self.reports.append(("started", entity_type, entity_name, entity_metadata))

    def report_execution_succeeded(
        self, entity_type: str, entity_name: str, entity_metadata: Mapping[str, Any] | None = None
    ) -> None:
        self.reports.append(("succeeded", entity_type, entity_name, entity_metadata))

    def report_execution_failed(
        self,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None,
        error: BaseException,
        problem_category: str | None = None,
    ) -> None:
        self.reports.append(("failed", entity_type, entity_name, entity_metadata, problem_category))


def test_reporters_pass_reports_on_with_empty_metadata_for_none() -> None:
    ctx = Recorder()
    ExecutionReporters.started(ctx, ExecutionEntityTypes.LLM, "chat")
    ExecutionReporters.succeeded(ctx, ExecutionEntityTypes.LLM, "chat", {"model": "m"})
    ExecutionReporters.failed(ctx, ExecutionEntityTypes.TOOL, "t", None, ValueError("x"))
    assert ctx.reports == [
        ("started", "llm", "chat", {}),
        ("succeeded", "llm", "chat", {"model": "m"}),
        ("failed", "tool", "t", {}, None),
    ]


def test_a_failing_report_never_reaches_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, "flink_agents.api.trace"):
        ExecutionReporters.started(Recorder(fail=True), ExecutionEntityTypes.ACTION, "a")
    assert "dropped" in caplog.text


def test_lifecycle_event_types_and_their_statuses() -> None:
    events = ExecutionLifecycleEvents
    assert events.expected_status("_execution_started_event") == events.STATUS_STARTED
    assert events.expected_status("_execution_finished_event") == "success"
    assert events.expected_status("_execution_failed_event") == "failed"
    assert events.expected_status("_execution_reused_event") == "reused"
    assert events.expected_status("_input_event") is None
    assert events.expected_status(None) is None
    assert len(events.EVENT_TYPES) == 4
    assert ExecutionProblemCategories.TOOL_CALL_FAILED == "tool_call_failed"
    assert ExecutionEntityTypes.PARSER == "parser"


def test_a_tool_supplies_its_execution_metadata() -> None:
    class Served(ToolExecutionMetadataProvider):
        def get_tool_execution_metadata(self, parameters: Mapping[str, Any]) -> Mapping[str, Any]:
            return {ToolExecutionMetadataKeys.MCP_SERVER: "calc"}

    assert Served().get_tool_execution_metadata({}) == {"mcpServer": "calc"}
    with pytest.raises(TypeError):
        ToolExecutionMetadataProvider()  # type: ignore[abstract]  # pyright: ignore[reportAbstractUsage]
