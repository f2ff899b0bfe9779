"""Tool metadata (what a model sees) and the tool base class."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from flink_agents.api.resource import Resource, ResourceType

__all__ = ["BaseTool", "ToolMetadata", "as_tool_metadata"]


class ToolMetadata(BaseModel):
    """A tool as a model sees it: name, description and a JSON schema of its input."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    """The name the model calls it by."""
    description: str = ""
    """What it does, for the model."""
    args_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """JSON schema (an object) of the arguments."""


class BaseTool(Resource, ABC):
    """A callable tool. `call` returns anything `normalize_tool_output` accepts."""

    metadata: ToolMetadata

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.TOOL

    @property
    def name(self) -> str:
        return self.metadata.name

    @abstractmethod
    async def acall(self, **arguments: Any) -> Any:
        """Run the tool with the model's arguments."""


def as_tool_metadata(tool: ToolMetadata | BaseTool) -> ToolMetadata:
    """The metadata of a tool, or the metadata itself."""
    return tool if isinstance(tool, ToolMetadata) else tool.metadata
