"""A job whose tool's error quotes the worker's ``ANTHROPIC_API_KEY`` (no tests here).

    ANTHROPIC_API_KEY=... python e2e_tests/provider_key_job.py LOG_DIR

The agent talks to a custom model connection (a `FunctionChatModelConnection`: no provider
connection is ever built, so nothing but the runner registers the key). Its tool fails with
the key in its error; the model, shown that error, raises with it, so the run becomes a
failure record (``input-failure.policy: skip``). The job runs in thread mode on the
mini-cluster with the event log under LOG_DIR and prints each failure record as
``ERROR <json>``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from flink_agents.api import (
    Agent,
    BaseChatModelSetup,
    ChatMessage,
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    OutputEvent,
    ResourceDescriptor,
    ResourceType,
    RunnerContext,
    ToolCallBlock,
)


def quote(symbol: str) -> str:
    """Fetch a quote.

    Args:
        symbol: The ticker.
    """
    raise RuntimeError(f"upstream refused the credential {os.environ['ANTHROPIC_API_KEY']}")


def model(messages: list[ChatMessage], tools: Any) -> ChatMessage:
    last = messages[-1]
    if last.tool_result_block is None:
        return ChatMessage.assistant(
            tool_calls=[ToolCallBlock(id="c1", name="quote", input={"symbol": last.text})]
        )
    raise ValueError(f"cannot answer after: {last.tool_result_block.text}")


async def ask(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    ctx.send_event(ChatRequestEvent(model="model", messages=[ChatMessage.user(record["value"])]))


async def answer(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=str(event.attributes.get("response"))))


def quote_agent() -> Agent:
    agent = Agent()
    agent.add_action("ask", [InputEvent], ask)
    agent.add_action("answer", [ChatResponseEvent], answer)
    agent.add_resource(
        "connection",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(clazz=FunctionChatModelConnection, function=model),
    )
    agent.add_resource(
        "model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=BaseChatModelSetup, connection="connection", tools=["quote"]),
    )
    agent.add_resource("quote", ResourceType.TOOL, quote)
    return agent


def main() -> None:
    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    env = create_stream_execution_environment()
    env.set_parallelism(1)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    config = agents_env.get_config()
    config.set("baseLogDir", sys.argv[1])
    config.set("event-log.level", "verbose")
    config.set("input-failure.policy", "skip")
    config.set("error-handling-strategy", "fail")
    records = env.from_collection([{"key": "k", "value": "ACME"}])
    errors: Any = (
        agents_env.from_datastream(records, key_selector=lambda r: r["key"])
        .apply(quote_agent())
        .to_error_datastream()
    )
    with errors.execute_and_collect("provider-key") as results:
        for record in results:
            print("ERROR " + json.dumps(record, default=str), flush=True)


if __name__ == "__main__":
    main()
