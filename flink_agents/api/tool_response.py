"""`ToolResponse`: the execution record of one tool call.

Also the convention for tool-call arguments that are not a JSON object (invalid JSON,
an array...): every adapter keeps the call, with ``input == {RAW_ARGUMENTS_KEY: raw}``
(`raw_arguments` reads it back), and such a call gets a failed response
(`ToolResponse.invalid_arguments`) instead of running the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from flink_agents.api._trusted import trusted_instance
from flink_agents.api.content_blocks import TextBlock, ToolResultBlock, ToolResultContent
from flink_agents.api.redaction import redact
from flink_agents.api.tool_output import normalize_tool_output

__all__ = ["RAW_ARGUMENTS_KEY", "ToolResponse", "raw_arguments"]

RAW_ARGUMENTS_KEY = "_raw_arguments"
"""The one key of a `ToolCallBlock.input` whose arguments were not a JSON object; its value
is the arguments exactly as the model sent them (sent back verbatim on later turns)."""

_RAW_PREVIEW = 500
"""How many characters of unparsable arguments an error message quotes."""


def raw_arguments(arguments: Mapping[str, Any]) -> str | None:
    """The model's raw arguments when they were not a JSON object, else None."""
    if len(arguments) == 1:
        raw = arguments.get(RAW_ARGUMENTS_KEY)
        if isinstance(raw, str):
            return raw
    return None


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
    """What went wrong, when ``success`` is false; redacted
    (`flink_agents.api.redaction.redact`), since the model and the event log read it."""
    started_at: datetime | None = None
    """When the call started."""
    duration_s: float | None = None
    """How long it ran, in seconds."""

    @field_validator("error")
    @classmethod
    def _redact_error(cls, error: str | None) -> str | None:
        return redact(error) if error is not None else None

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
        content = normalize_tool_output(output)
        if (
            type(call_id) is str
            and type(name) is str
            and (started_at is None or type(started_at) is datetime)
            and (duration_s is None or type(duration_s) is float)
        ):
            # Every sync tool call ends here: values of the field types (the blocks come
            # validated) need no second validation.
            return trusted_instance(
                cls,
                {
                    "call_id": call_id,
                    "name": name,
                    "content": content,
                    "success": True,
                    "error": None,
                    "started_at": started_at,
                    "duration_s": duration_s,
                },
                {"call_id", "name", "content", "started_at", "duration_s"},
            )
        return cls(
            call_id=call_id,
            name=name,
            content=content,
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
        """A failed response: the error text, redacted, is what the model will read.

        API keys (registered or shaped like one), credentials in ``k=v`` / JSON form,
        ``data:`` URLs and base64 runs are masked (by the ``error`` field's validator),
        so an exception that prints a secret reaches neither the model nor the event log.
        """
        return cls(
            call_id=call_id,
            name=name,
            success=False,
            error=error,
            started_at=started_at,
            duration_s=duration_s,
        )

    @classmethod
    def invalid_arguments(
        cls,
        call_id: str,
        name: str,
        raw: str,
        *,
        started_at: datetime | None = None,
        duration_s: float | None = None,
    ) -> ToolResponse:
        """The failed response for a call whose arguments are not a JSON object: the tool
        is not run, and the model reads what it sent (the first 500 characters)."""
        shown = raw if len(raw) <= _RAW_PREVIEW else f"{raw[:_RAW_PREVIEW]}...<truncated>"
        return cls.failure(
            call_id,
            name,
            f"tool {name!r} was not run: its arguments are not a JSON object: {shown}",
            started_at=started_at,
            duration_s=duration_s,
        )

    def to_result_block(self) -> ToolResultBlock:
        """The model-facing result; a failure becomes ``is_error=True`` with its error text."""
        if self.success:
            if self.call_id:  # what validation asks of it: the rest are checked values
                return trusted_instance(
                    ToolResultBlock,
                    {
                        "type": "tool_result",
                        "call_id": self.call_id,
                        "content": list(self.content),
                        "is_error": False,
                    },
                    {"call_id", "content"},
                )
            return ToolResultBlock(call_id=self.call_id, content=list(self.content))
        text = self.error or f"tool {self.name!r} failed"
        content: list[ToolResultContent] = [TextBlock(text=text), *self.content]
        return ToolResultBlock(call_id=self.call_id, content=content, is_error=True)
