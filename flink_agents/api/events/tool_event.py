"""Tool events: the calls a model asked for, and how each one went."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar
from uuid import UUID

from pydantic import TypeAdapter

from flink_agents.api.content_blocks import ToolCallBlock
from flink_agents.api.events.event import Event, EventId, event_id, request_id_of
from flink_agents.api.tool_response import ToolResponse

__all__ = ["ToolRequestEvent", "ToolResponseEvent"]

_CALLS: TypeAdapter[list[ToolCallBlock]] = TypeAdapter(list[ToolCallBlock])
_RESPONSES: TypeAdapter[list[ToolResponse]] = TypeAdapter(list[ToolResponse])


class ToolRequestEvent(Event):
    """Run these tool calls; the built-in tool action answers with a `ToolResponseEvent`."""

    EVENT_TYPE: ClassVar[str] = "_tool_request_event"
    ATTRIBUTE_TYPES: ClassVar[Mapping[str, Any]] = {
        "model": str | None,
        "tool_calls": list[ToolCallBlock],
    }

    def __init__(
        self,
        model: str | None = None,
        tool_calls: Sequence[ToolCallBlock | Mapping[str, Any]] = (),
        **data: Any,
    ) -> None:
        if "attributes" in data:
            super().__init__(**data)
            return
        super().__init__(
            attributes={"model": model, "tool_calls": _CALLS.validate_python(list(tool_calls))},
            **data,
        )

    @property
    def model(self) -> str | None:
        """The chat model setup whose tools may run (None: any tool of the agent)."""
        return self.attributes.get("model")

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        """The calls, in the order the model made them."""
        return self.attributes["tool_calls"]


class ToolResponseEvent(Event):
    """One `ToolResponse` per call of a `ToolRequestEvent`, in call order."""

    EVENT_TYPE: ClassVar[str] = "_tool_response_event"
    ATTRIBUTE_TYPES: ClassVar[Mapping[str, Any]] = {
        "request_id": EventId,
        "responses": list[ToolResponse],
    }

    def __init__(
        self,
        request_id: UUID | str | None = None,
        responses: Sequence[ToolResponse | Mapping[str, Any]] = (),
        **data: Any,
    ) -> None:
        if "attributes" in data:
            super().__init__(**data)
            return
        if not request_id:
            raise ValueError("a ToolResponseEvent needs the id of its request")
        super().__init__(
            attributes={
                "request_id": event_id(request_id),
                "responses": _RESPONSES.validate_python(list(responses)),
            },
            **data,
        )

    @property
    def request_id(self) -> UUID:
        """Id of the `ToolRequestEvent` this answers."""
        return request_id_of(self)

    @property
    def responses(self) -> list[ToolResponse]:
        """How each call went, in call order."""
        return self.attributes["responses"]
