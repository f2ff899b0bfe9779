"""Agents and helpers shared by the runtime tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

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
    Prompt,
    ResourceDescriptor,
    ResourceType,
    RunnerContext,
)
from flink_agents.runtime.local_runner import AgentOutput, LocalRunner

MODEL = "model"
CONNECTION = "connection"


def chat_agent(
    connection: FunctionChatModelConnection,
    *,
    tools: Mapping[str, Callable[..., Any]] | None = None,
    setup_tools: Sequence[str] | None = None,
    output_schema: type[BaseModel] | None = None,
    prompt: Prompt | None = None,
    prompt_args: Mapping[str, Any] | None = None,
) -> Agent:
    """An agent that sends each input as a user message to ``connection`` and outputs
    the `ChatResponseEvent` itself."""

    async def start(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        messages = value if isinstance(value, list) else [ChatMessage.user(str(value))]
        ctx.send_event(
            ChatRequestEvent(
                model=MODEL,
                messages=messages,
                prompt_args=dict(prompt_args or {}),
                output_schema=output_schema,
            )
        )

    async def finish(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event))

    agent = Agent()
    agent.add_action("start", [InputEvent], start)
    agent.add_action("finish", [ChatResponseEvent], finish)
    agent.add_resource(CONNECTION, ResourceType.CHAT_MODEL_CONNECTION, connection)
    for name, func in (tools or {}).items():
        agent.add_resource(name, ResourceType.TOOL, func)
    agent.add_resource(
        MODEL,
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(
            clazz=BaseChatModelSetup,
            connection=CONNECTION,
            model="test-model",
            tools=list(setup_tools if setup_tools is not None else (tools or {})),
            prompt=prompt,
        ),
    )
    return agent


def run_local(
    agent: Agent, inputs: Sequence[Mapping[str, Any]], config: Mapping[str, Any] | None = None
) -> tuple[list[AgentOutput], LocalRunner]:
    """Run inputs on a fresh local runner; its outputs and the runner."""
    runner = LocalRunner(agent, dict(config or {}))
    outputs = asyncio.run(runner.run(inputs))
    runner.close()
    return outputs, runner


def only_response(outputs: Sequence[AgentOutput]) -> ChatResponseEvent:
    """The single ChatResponseEvent a chat_agent run produced."""
    assert len(outputs) == 1, outputs
    response = outputs[0].value
    assert isinstance(response, ChatResponseEvent)
    return response
