"""Support-ticket triage: an agent with a tool, on the local runner or as a PyFlink job.

    python examples/support_triage.py            # offline model, no API key needed
    python examples/support_triage.py --flink    # the same agent as a PyFlink job
    ANTHROPIC_API_KEY=... python examples/support_triage.py
    OPENAI_API_KEY=... python examples/support_triage.py

Each ticket (keyed by customer) goes to a chat model that may call the
``lookup_order`` tool, then answers with a `Triage` record. Without an API key the
model is a small rule-based function (`FunctionChatModelConnection`), so the example
runs anywhere; with a key it uses Anthropic or OpenAI through the same agent.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Literal

from pydantic import BaseModel

from flink_agents.api import (
    Agent,
    AgentsExecutionEnvironment,
    BaseChatModelSetup,
    ChatMessage,
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    MessageRole,
    OutputEvent,
    ResourceDescriptor,
    RunnerContext,
    ToolCallBlock,
    ToolMetadata,
    action,
    chat_model_connection,
    chat_model_setup,
    tool,
)

TICKETS = [
    {"key": "cust-17", "value": "Order #1042 still hasn't arrived, it's been two weeks. Urgent!"},
    {"key": "cust-17", "value": "Also, I was charged twice for order #1042. Please refund one."},
    {"key": "cust-08", "value": "The app crashes with an error every time I open settings."},
    {"key": "cust-23", "value": "How do I change the email address on my account?"},
]

ORDERS = {
    "1042": {"status": "in transit", "carrier": "PostNL", "days_late": 9, "amount_eur": 59.0},
}

SYSTEM_PROMPT = (
    "You triage customer support tickets. Use the lookup_order tool when a ticket "
    "mentions an order number. Answer with one JSON object: category (billing, shipping, "
    "technical or account), priority (low, normal or high), summary (one sentence) and "
    "reply (a short answer to the customer)."
)


class Triage(BaseModel):
    """The agent's answer for one ticket."""

    category: Literal["billing", "shipping", "technical", "account"]
    priority: Literal["low", "normal", "high"]
    summary: str
    reply: str


def provider() -> str:
    """Which model to use: the first API key found, else the offline model."""
    if "--offline" in sys.argv:
        return "offline"
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_API_KEY"):
        return "openai"
    return "offline"


class SupportTriageAgent(Agent):
    """Sends each ticket to the triage model and outputs its `Triage`."""

    @action(InputEvent)
    @staticmethod
    def triage(event: Event, ctx: RunnerContext) -> None:
        seen = ctx.short_term_memory.get("tickets", 0) + 1
        ctx.short_term_memory["tickets"] = seen  # kept per customer, across tickets
        ticket = event.attributes["input"]
        if isinstance(ticket, dict):  # a record from a stream: {"key": ..., "value": ...}
            ticket = ticket["value"]
        ctx.send_event(
            ChatRequestEvent(
                model="triage_model",
                messages=[
                    ChatMessage.system(SYSTEM_PROMPT),
                    ChatMessage.user(f"Ticket {seen} from this customer: {ticket}"),
                ],
                output_schema=Triage,
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def publish(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ChatResponseEvent)
        if event.error is not None:
            output: dict[str, Any] = {"customer": str(ctx.key), "error": event.error.message}
        else:
            output = {"customer": str(ctx.key), **event.structured_output.model_dump()}
        ctx.send_event(OutputEvent(output=output))

    @tool
    @staticmethod
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order's delivery and payment status.

        Args:
            order_id: The order number, digits only.
        """
        order = ORDERS.get(order_id.lstrip("#"))
        return order if order is not None else {"error": f"no order {order_id}"}

    @chat_model_connection
    @staticmethod
    def model_connection() -> ResourceDescriptor:
        # Providers are named by dotted path, so this file imports no provider SDK.
        if provider() == "anthropic":
            return ResourceDescriptor(
                clazz="flink_agents.integrations.chat_models.anthropic.AnthropicChatModelConnection"
            )
        if provider() == "openai":
            return ResourceDescriptor(
                clazz="flink_agents.integrations.chat_models.openai.OpenAIResponsesChatModelConnection"
            )
        return ResourceDescriptor(clazz=FunctionChatModelConnection, function=offline_model)

    @chat_model_setup
    @staticmethod
    def triage_model() -> ResourceDescriptor:
        tools = ["lookup_order"]
        if provider() == "anthropic":
            return ResourceDescriptor(
                clazz="flink_agents.integrations.chat_models.anthropic.AnthropicChatModelSetup",
                connection="model_connection",
                tools=tools,
            )
        if provider() == "openai":
            return ResourceDescriptor(
                clazz="flink_agents.integrations.chat_models.openai.OpenAIResponsesChatModelSetup",
                connection="model_connection",
                tools=tools,
            )
        return ResourceDescriptor(
            clazz=BaseChatModelSetup, connection="model_connection", tools=tools
        )


def offline_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    """A rule-based stand-in for a model: looks orders up, then answers in JSON."""
    ticket = next(m.text for m in reversed(messages) if m.role is MessageRole.USER)
    looked_up = [m.tool_result_block.text for m in messages if m.tool_result_block]
    order = re.search(r"#(\d+)", ticket)
    if order and not looked_up:
        call = ToolCallBlock(id="call_1", name="lookup_order", input={"order_id": order.group(1)})
        return ChatMessage.assistant("Let me check that order.", tool_calls=[call])
    text = ticket.lower()
    if "charge" in text or "refund" in text:
        category = "billing"
    elif "order" in text or "arrive" in text:
        category = "shipping"
    elif "crash" in text or "error" in text:
        category = "technical"
    else:
        category = "account"
    priority = "high" if "urgent" in text or "twice" in text else "normal"
    details = f" Order details: {looked_up[0]}" if looked_up else ""
    answer = {
        "category": category,
        "priority": priority,
        "summary": f"{category.capitalize()} request: {ticket.split(': ', 1)[-1][:60]}",
        "reply": f"Thanks for reaching out, we are on it.{details}",
    }
    return json.dumps(answer)


def run_locally() -> list[tuple[str, Any]]:
    """The agent on the pure-Python local runner."""
    env = AgentsExecutionEnvironment.get_execution_environment()
    results = env.from_list(TICKETS).apply(SupportTriageAgent()).to_list()
    env.execute()
    return [(customer, triage) for result in results for customer, triage in result.items()]


def run_on_flink() -> list[tuple[str, Any]]:
    """The same agent as a keyed operator in a PyFlink job on a local mini-cluster."""
    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    env = create_stream_execution_environment()  # finds Java, sets up the Python workers
    env.set_parallelism(1)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    tickets = env.from_collection(TICKETS)
    outputs = (
        agents_env.from_datastream(tickets, key_selector=lambda ticket: ticket["key"])
        .apply(SupportTriageAgent())
        .to_datastream()
    )
    # Each output is the value of one of the agent's OutputEvents.
    with outputs.execute_and_collect("support-triage") as results:
        return [(triage["customer"], triage) for triage in results]


def main() -> None:
    print(f"model: {provider()}")
    on_flink = "--flink" in sys.argv
    results = run_on_flink() if on_flink else run_locally()
    for customer, triage in results:
        print(f"{customer}: {json.dumps(triage, ensure_ascii=False)}")


if __name__ == "__main__":
    main()
