"""`ExecutionReporter`, the reporting capability of an action context, and
`ExecutionReporters`, best-effort reporting through any context."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

__all__ = [
    "ExecutionEntityTypes",
    "ExecutionProblemCategories",
    "ExecutionReporter",
    "ExecutionReporters",
]

_LOG = logging.getLogger(__name__)

_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


class ExecutionEntityTypes:
    """What an execution is (the ``entityType`` of its records)."""

    ACTION = "action"
    LLM = "llm"
    PARSER = "parser"
    TOOL = "tool"


class ExecutionProblemCategories:
    """Why an execution failed, in a few words meant for grouping (``problemCategory``)."""

    ACTION_EXECUTION_FAILED = "action_execution_failed"
    MODEL_CALL_FAILED = "model_call_failed"
    MODEL_OUTPUT_PARSE_ERROR = "model_output_parse_error"
    TOOL_CALL_FAILED = "tool_call_failed"


class ExecutionReporter(ABC):
    """A context that records the executions an action makes inside it.

    An execution is named by its entity type, its name and its metadata: a terminal report
    (succeeded or failed) closes the started one with the same three.
    """

    @abstractmethod
    def report_execution_started(
        self,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """An execution started."""

    @abstractmethod
    def report_execution_succeeded(
        self,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """An execution ended well."""

    @abstractmethod
    def report_execution_failed(
        self,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None,
        error: BaseException,
        problem_category: str | None = None,
    ) -> None:
        """An execution failed with ``error``."""


class ExecutionReporters:
    """Reports through a context when it is an `ExecutionReporter`; nothing otherwise.

    A report never fails the caller: a reporter's error is logged at debug level and
    dropped. Missing metadata is reported as an empty mapping.
    """

    @staticmethod
    def started(
        ctx: object,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Report that an execution started."""
        metadata = entity_metadata or _NO_METADATA
        ExecutionReporters._report(
            ctx, lambda r: r.report_execution_started(entity_type, entity_name, metadata)
        )

    @staticmethod
    def succeeded(
        ctx: object,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Report that an execution ended well."""
        metadata = entity_metadata or _NO_METADATA
        ExecutionReporters._report(
            ctx, lambda r: r.report_execution_succeeded(entity_type, entity_name, metadata)
        )

    @staticmethod
    def failed(
        ctx: object,
        entity_type: str,
        entity_name: str,
        entity_metadata: Mapping[str, Any] | None,
        error: BaseException,
        problem_category: str | None = None,
    ) -> None:
        """Report that an execution failed."""
        metadata = entity_metadata or _NO_METADATA
        ExecutionReporters._report(
            ctx,
            lambda r: r.report_execution_failed(
                entity_type, entity_name, metadata, error, problem_category
            ),
        )

    @staticmethod
    def _report(ctx: object, report: Callable[[ExecutionReporter], None]) -> None:
        if not isinstance(ctx, ExecutionReporter):
            return
        try:
            report(ctx)
        except Exception:
            _LOG.debug("an execution report failed and was dropped", exc_info=True)
