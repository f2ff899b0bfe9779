"""`ToolResponse`: the execution record of one tool call."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from flink_agents.api.content_blocks import TextBlock, ToolResultBlock, ToolResultContent
from flink_agents.api.tool_output import normalize_tool_output

__all__ = ["ToolResponse"]


class ToolResponse(BaseModel):
    """How one tool call went: its output, whether it succeeded, and when it ran.

    Only its model-facing form, `to_result_block`, goes into chat history.
    """

    model_config = ConfigDict(extra="forbid")

    call_id: str
    """Id of the tool call this answers."""
    name: str
    """The tool that ran (or was asked for)."""
    content: list[ToolResultContent] = Field(default_factory=list)
    """The normalized output: text and media blocks."""
    success: bool = True
    """False when the tool raised or could not be found."""
    error: str | None = None
    """What went wrong, when ``success`` is false."""
    started_at: datetime | None = None
    """When the call started."""
    duration_s: float | None = None
    """How long it ran, in seconds."""

    @classmethod
    def from_output(
        cls,
        call_id: str,
        name: str,
        output: Any,
        *,
        started_at: datetime | None = None,
        duration_s: float | None = None,
    ) -> ToolResponse:
        """A successful response whose content is ``normalize_tool_output(output)``."""
        return cls(
            call_id=call_id,
            name=name,
            content=normalize_tool_output(output),
            started_at=started_at,
            duration_s=duration_s,
        )

    @classmethod
    def failure(
        cls,
        call_id: str,
        name: str,
        error: str,
        *,
        started_at: datetime | None = None,
        duration_s: float | None = None,
    ) -> ToolResponse:
        """A failed response: the error text is what the model will read."""
        return cls(
            call_id=call_id,
            name=name,
            success=False,
            error=error,
            started_at=started_at,
            duration_s=duration_s,
        )

    def to_result_block(self) -> ToolResultBlock:
        """The model-facing result; a failure becomes ``is_error=True`` with its error text."""
        if self.success:
            return ToolResultBlock(call_id=self.call_id, content=list(self.content))
        text = self.error or f"tool {self.name!r} failed"
        content: list[ToolResultContent] = [TextBlock(text=text), *self.content]
        return ToolResultBlock(call_id=self.call_id, content=content, is_error=True)
