"""Agents written against upstream's API, for the mini-cluster (importable by the
Flink workers): a ReActAgent with a RowTypeInfo output schema whose tool takes a
parameter the runtime injects from the agent configuration; and the shape of upstream's
durable-execute e2e agent, whose output is a pydantic model."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from pyflink.common.typeinfo import BasicTypeInfo, RowTypeInfo

from flink_agents.api.agents.agent import Agent
from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.content_blocks import ToolCallBlock
from flink_agents.api.decorators import action, tool
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools import InjectedArg

__all__ = [
    "ORDER_ROW",
    "ExecuteAgent",
    "ExecuteData",
    "ExecuteOutput",
    "order_model",
    "order_react_agent",
    "query_order",
]

ORDER_ROW = RowTypeInfo(
    [BasicTypeInfo.STRING_TYPE_INFO(), BasicTypeInfo.STRING_TYPE_INFO()], ["id", "status"]
)


@tool(injected_args={"tenant_id": InjectedArg.from_config("e2e.tenant_id")})
def query_order(order_id: str, tenant_id: str) -> str:
    """The status of an order.

    Args:
        order_id: The order's id.
    """
    return f"{order_id} of {tenant_id}: shipped"


def order_model(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """Calls the tool first (trying to set the tenant itself), then answers with a row."""
    last = messages[-1]
    result = last.tool_result_block
    if result is None:
        order_id = last.text.rsplit(" ", 1)[-1]
        assert [t.name for t in tools] == ["query_order"]
        assert list(tools[0].args_schema["properties"]) == ["order_id"]
        return ChatMessage.assistant(
            tool_calls=[
                ToolCallBlock(
                    id="c1", name="query_order", input={"order_id": order_id, "tenant_id": "x"}
                )
            ]
        )
    order_id, status = result.text.split(" of ", 1)
    return "```json\n" + json.dumps({"id": order_id, "status": status}) + "\n```"


def order_react_agent() -> ReActAgent:
    return ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=BaseChatModelSetup, connection="orders_model", tools=["query_order"]
        ),
        prompt=Prompt.from_messages([ChatMessage.user("Where is order {order_id}")]),
        output_schema=ORDER_ROW,
    )


class ExecuteData(BaseModel):
    id: int
    value: int


class ExecuteOutput(BaseModel):
    id: int
    result: int


def compute_value(x: int, y: int) -> int:
    return x + y


class ExecuteAgent(Agent):
    """Upstream's durable-execute e2e agent's shape: a model in, a model out."""

    @action(InputEvent)
    @staticmethod
    def process(event: Event, ctx: RunnerContext) -> None:
        data = ExecuteData.model_validate(InputEvent.from_event(event).input)
        result = ctx.durable_execute(compute_value, data.value, 10)
        ctx.send_event(OutputEvent(output=ExecuteOutput(id=data.id, result=result)))
