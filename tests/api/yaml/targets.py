"""Functions and classes the YAML files of these tests name (``tests.api.yaml.targets:...``)."""

from __future__ import annotations

import re

from pydantic import Field

from flink_agents.api.chat_message import ChatMessage, MessageRole, ToolCallBlock
from flink_agents.api.chat_models.function_model import ChatFunction, FunctionChatModelConnection
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.tool import ToolMetadata


def increment(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=InputEvent.from_event(event).input + 1))


def decrement(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=InputEvent.from_event(event).input - 1))


def scaled(event: Event, ctx: RunnerContext) -> None:
    """Multiplies by the action's ``config: {factor: ...}``."""
    factor = ctx.action_config["factor"]
    ctx.send_event(OutputEvent(output=InputEvent.from_event(event).input * factor))


class Counter:
    @staticmethod
    def bump(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=InputEvent.from_event(event).input + 100))


def ask(event: Event, ctx: RunnerContext) -> None:
    """Sends the input text to the chat model ``chat_model`` (the prompt fills ``{input}``)."""
    text = InputEvent.from_event(event).input
    ctx.send_event(
        ChatRequestEvent(
            model="chat_model", messages=[ChatMessage(role=MessageRole.USER, content=text)]
        )
    )


def answer(event: Event, ctx: RunnerContext) -> None:
    response = ChatResponseEvent.from_event(event).response
    ctx.send_event(OutputEvent(output=response.text if response is not None else None))


def query_order(order_id: str, tenant_id: str) -> str:
    """Look an order up.

    Args:
        order_id: the order.
        tenant_id: the tenant (injected).
    """
    return f"{tenant_id}:{order_id}"


def order_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    """Calls the first tool offered with the order id of the last user message, then
    answers with the tool's result; with no tool, repeats what the system said."""
    results = [m.content for m in messages if m.role is MessageRole.TOOL]
    if results:
        return f"found {results[-1]}"
    if not tools:
        return " | ".join(m.text for m in messages)
    user = next(m.text for m in reversed(messages) if m.role is MessageRole.USER)
    order = re.search(r"o-\d+", user)
    call = ToolCallBlock(
        id="call-1", name=tools[0].name, input={"order_id": order[0] if order else user}
    )
    return ChatMessage.assistant(tool_calls=[call])


class OrderModelConnection(FunctionChatModelConnection):
    """`order_model` as a connection a YAML file can name by class path."""

    function: ChatFunction | None = Field(default=order_model, exclude=True)
    base_url: str = "http://unused"
    """Stands in for a provider's address (the YAML files set it)."""
