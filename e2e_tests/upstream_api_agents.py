"""An agent written against upstream's API, for the mini-cluster (importable by the
Flink workers): a ReActAgent with a RowTypeInfo output schema whose tool takes a
parameter the runtime injects from the agent configuration."""

from __future__ import annotations

import json
from typing import Any

from pyflink.common.typeinfo import BasicTypeInfo, RowTypeInfo

from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.content_blocks import ToolCallBlock
from flink_agents.api.decorators import tool
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tools import InjectedArg

__all__ = ["ORDER_ROW", "order_model", "order_react_agent", "query_order"]

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
