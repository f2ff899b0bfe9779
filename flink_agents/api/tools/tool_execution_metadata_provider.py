"""`ToolExecutionMetadataProvider`: a tool that adds its own metadata to the reports of
its executions (`flink_agents.api.trace`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

__all__ = ["ToolExecutionMetadataProvider"]


class ToolExecutionMetadataProvider(ABC):
    """A tool that says more about one of its executions than its name and call id.

    What it returns joins the metadata of the call's lifecycle records (keys the runtime
    sets itself are kept; ``None`` values are left out). It gets the call's arguments:
    it should return stable, low-cardinality values (a server's name, not the
    arguments), since the records go to the event log.
    """

    @abstractmethod
    def get_tool_execution_metadata(self, parameters: Mapping[str, Any]) -> Mapping[str, Any]:
        """The metadata of one execution with ``parameters``."""
