"""Execution reporting: what an action reports about the model, tool and parser calls it
makes, and the lifecycle records of them in upstream's file event log.

An action context that can report implements `ExecutionReporter` (this runtime's action
contexts do); code that may run with any `RunnerContext` reports through
`ExecutionReporters`, which does nothing for a context that cannot report and never lets
a report's failure reach the action. With upstream's file event log (``baseLogDir``) and
``event-log.trace.enabled: true`` each report is one lifecycle record
(`ExecutionLifecycleEvents`) in the event log (docs/observability.md).
"""

from flink_agents.api.trace.execution_lifecycle_events import ExecutionLifecycleEvents
from flink_agents.api.trace.execution_reporter import (
    ExecutionEntityTypes,
    ExecutionProblemCategories,
    ExecutionReporter,
    ExecutionReporters,
)
from flink_agents.api.trace.llm_execution_metadata_keys import LLMExecutionMetadataKeys
from flink_agents.api.trace.tool_execution_metadata_keys import ToolExecutionMetadataKeys

__all__ = [
    "ExecutionEntityTypes",
    "ExecutionLifecycleEvents",
    "ExecutionProblemCategories",
    "ExecutionReporter",
    "ExecutionReporters",
    "LLMExecutionMetadataKeys",
    "ToolExecutionMetadataKeys",
]
