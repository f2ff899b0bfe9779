"""Chat events: a request to a chat model setup, and the final response of its loop."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, TypeAdapter, field_validator

from flink_agents.api._values import AnyValue, ModelClassRef
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.errors import ChatModelError
from flink_agents.api.events.event import Event, EventId, event_id, request_id_of
from flink_agents.api.message import ChatMessage
from flink_agents.api.redaction import redact

__all__ = ["ChatError", "ChatRequestEvent", "ChatResponseEvent"]

_MESSAGES: TypeAdapter[list[ChatMessage]] = TypeAdapter(list[ChatMessage])


def _as_messages(messages: Sequence[ChatMessage | Mapping[str, Any]]) -> list[ChatMessage]:
    items = list(messages)
    if all(type(m) is ChatMessage for m in items):
        return items  # type: ignore[return-value]
    return _MESSAGES.validate_python(items)


class ChatError(BaseModel):
    """Why a chat request produced no answer (carried by `ChatResponseEvent.error`)."""

    model_config = ConfigDict(extra="forbid")

    message: str
    """What went wrong, redacted (`flink_agents.api.redaction.redact`): no registered
    API key, credential, media data or ``data:`` URL."""
    kind: str
    """``max_model_calls``, ``structured_output``, ``unsupported_content``, or the
    `ChatModelError` kind (``rate_limit``, ``server``, ``bad_request``...)."""
    retryable: bool = False
    """Whether the provider error was retryable (it was retried until the limit)."""
    status_code: int | None = None
    """HTTP status of the provider's answer, when there was one."""
    provider: str | None = None
    """Which provider API failed, when known."""
    attempts: int = 0
    """How many times the failing model call was made."""

    @field_validator("message")
    @classmethod
    def _redact_message(cls, message: str) -> str:
        return redact(message)

    @classmethod
    def from_model_error(cls, error: ChatModelError, *, attempts: int = 1) -> ChatError:
        """The event form of a provider error (its message redacted)."""
        return cls(
            message=error.message,
            kind=error.kind or ("model_error_retryable" if error.retryable else "model_error"),
            retryable=error.retryable,
            status_code=error.status_code,
            provider=error.provider,
            attempts=attempts,
        )


def _model_class(output_schema: Any) -> type[BaseModel] | None:
    """A request's output schema: a pydantic model class, or upstream's
    ``OutputSchema(output_schema=Model)`` of one. A ``RowTypeInfo`` is refused, saying
    what to use."""
    if output_schema is None:  # most requests: no import on every one
        return None
    from flink_agents.api.agents.types import OutputSchema, is_row_type_info

    if isinstance(output_schema, OutputSchema):
        output_schema = output_schema.output_schema
    if output_schema is None or (
        isinstance(output_schema, type) and issubclass(output_schema, BaseModel)
    ):
        return output_schema
    if is_row_type_info(output_schema):
        raise TypeError(
            "a ChatRequestEvent's output_schema cannot be a RowTypeInfo here: give a pydantic "
            "model class with those fields (ReActAgent takes a RowTypeInfo)"
        )
    raise TypeError(
        "output_schema must be a pydantic model class or an OutputSchema of one, got "
        f"{type(output_schema).__name__}"
    )


class ChatRequestEvent(Event):
    """Ask the chat model setup named ``model`` to answer ``messages``.

    The built-in chat action runs the whole tool-calling loop and answers with one
    `ChatResponseEvent` whose ``request_id`` is this event's id. ``output_schema`` (a
    pydantic model class, or upstream's ``OutputSchema`` of one) has the final answer's
    text parsed into it: `ChatResponseEvent.structured_output`, also in the response
    message's ``extra_args[STRUCTURED_OUTPUT]`` as upstream.
    """

    EVENT_TYPE: ClassVar[str] = "_chat_request_event"
    ATTRIBUTE_TYPES: ClassVar[Mapping[str, Any]] = {
        "model": str,
        "messages": list[ChatMessage],
        "prompt_args": dict[str, AnyValue],
        "output_schema": ModelClassRef,
    }

    def __init__(
        self,
        model: str | None = None,
        messages: Sequence[ChatMessage | Mapping[str, Any]] = (),
        prompt_args: Mapping[str, Any] | None = None,
        output_schema: type[BaseModel] | Any | None = None,
        **data: Any,
    ) -> None:
        if "attributes" in data:
            super().__init__(**data)
            return
        if not model:
            raise ValueError("a ChatRequestEvent needs the name of a chat model setup")
        output_schema = _model_class(output_schema)
        super().__init__(
            attributes={
                "model": model,
                "messages": _as_messages(messages),
                "prompt_args": dict(prompt_args or {}),
                "output_schema": output_schema,
            },
            **data,
        )

    @property
    def model(self) -> str:
        """Name of the chat model setup resource to call."""
        return self.attributes["model"]

    @property
    def messages(self) -> list[ChatMessage]:
        """The conversation to answer."""
        return self.attributes["messages"]

    @property
    def prompt_args(self) -> dict[str, Any]:
        """Values for the setup's prompt template."""
        return self.attributes.get("prompt_args") or {}

    @property
    def output_schema(self) -> type[BaseModel] | None:
        """Pydantic model the final answer's text is parsed into, if any."""
        return self.attributes.get("output_schema")


class ChatResponseEvent(Event):
    """The end of a chat request's loop: the final answer, or an error."""

    EVENT_TYPE: ClassVar[str] = "_chat_response_event"
    ATTRIBUTE_TYPES: ClassVar[Mapping[str, Any]] = {
        "request_id": EventId,
        "response": ChatMessage | None,
        "result": ChatResult | None,
        "error": ChatError | None,
        "structured_output": AnyValue,
    }

    def __init__(
        self,
        request_id: UUID | str | None = None,
        response: ChatMessage | None = None,
        result: ChatResult | None = None,
        error: ChatError | None = None,
        structured_output: Any = None,
        **data: Any,
    ) -> None:
        if "attributes" in data:
            super().__init__(**data)
            return
        if not request_id:
            raise ValueError("a ChatResponseEvent needs the id of its request")
        if response is None and result is not None:
            response = result.message
        super().__init__(
            attributes={
                "request_id": event_id(request_id),
                "response": response,
                "result": result,
                "error": error,
                "structured_output": structured_output,
            },
            **data,
        )

    @property
    def request_id(self) -> UUID:
        """Id of the `ChatRequestEvent` this answers."""
        return request_id_of(self)

    @property
    def response(self) -> ChatMessage | None:
        """The final assistant message (the last one seen, when there is an error)."""
        return self.attributes.get("response")

    @property
    def result(self) -> ChatResult | None:
        """The `ChatResult` of the last model call: usage, ids, finish reason."""
        return self.attributes.get("result")

    @property
    def error(self) -> ChatError | None:
        """Set when the request failed."""
        return self.attributes.get("error")

    @property
    def structured_output(self) -> Any:
        """The final text parsed into the request's ``output_schema``, if it had one."""
        return self.attributes.get("structured_output")

    @property
    def ok(self) -> bool:
        """True when there is no error."""
        return self.attributes.get("error") is None
