"""Metric groups bound to resources: inside an action a resource's ``metric_group`` is the
action's, bound per request (resources are shared by every action and run), and the
built-in chat action counts upstream's per-action token counters there once per call."""

from __future__ import annotations

import asyncio
from typing import Any

from flink_agents.api import (
    ChatMessage,
    Event,
    InputEvent,
    RunnerContext,
    ScriptedChatModelConnection,
)
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.chat_result import ChatResult, Usage
from flink_agents.api.resource import ResourceType, resource_metric_group
from flink_agents.runtime.metrics import InMemoryMetricGroup
from tests.runtime.chat_agents import MODEL, chat_agent, run_local


def setup() -> BaseChatModelSetup:
    return BaseChatModelSetup(connection="c", model="m")


def test_a_binding_wins_inside_its_block_only() -> None:
    model, own, action = setup(), InMemoryMetricGroup(), InMemoryMetricGroup()
    assert model.metric_group is None
    model.set_metric_group(own)
    with resource_metric_group(lambda: action):
        assert model.metric_group is action
    assert model.metric_group is own


async def test_concurrent_requests_count_in_their_own_groups() -> None:
    model = setup()
    groups = [InMemoryMetricGroup(), InMemoryMetricGroup()]
    both_read = asyncio.Event()
    read: list[Any] = []

    async def request(group: InMemoryMetricGroup, tokens: int) -> None:
        with resource_metric_group(lambda: group):
            captured = model.metric_group
            read.append(captured)
            if len(read) == 2:
                both_read.set()
            await both_read.wait()  # the other request bound its group meanwhile
            model._record_token_metrics("m", tokens, 1, model.metric_group)  # pyright: ignore[reportPrivateUsage]

    await asyncio.gather(
        asyncio.create_task(request(groups[0], 10)), asyncio.create_task(request(groups[1], 20))
    )
    assert read == groups
    counts = [g.snapshot()["model=m"]["promptTokens"] for g in groups]
    assert counts == [10, 20]


def test_chat_calls_count_upstreams_tokens_in_the_action_group_once() -> None:
    replies = [
        ChatResult(
            message=ChatMessage.assistant("a"),
            model="m-2025",
            usage=Usage(input_tokens=10, output_tokens=3),
        ),
        ChatResult(message=ChatMessage.assistant("b"), usage=Usage(input_tokens=5)),
        ChatResult(
            message=ChatMessage.assistant("c"),
            model="m-2025",
            usage=Usage(input_tokens=7, output_tokens=2),
        ),
    ]
    model = ScriptedChatModelConnection(replies=replies)
    _, runner = run_local(chat_agent(model), [{"key": "k", "value": str(i)} for i in range(3)])
    metrics = runner.metrics
    assert isinstance(metrics, InMemoryMetricGroup)
    snapshot = metrics.snapshot()
    tokens = snapshot["action"]["_chat_model_action"]["model=m-2025"]
    # The call without an output count is not counted there (upstream needs both).
    assert (tokens["promptTokens"], tokens["completionTokens"]) == (17, 5)
    # The agent's own token counters: each call counted once.
    assert snapshot["chatModel"]["test-model"]["inputTokens"] == 22


def test_a_resource_in_an_action_reads_that_actions_group() -> None:
    seen: list[bool] = []

    async def act(event: Event, ctx: RunnerContext) -> None:
        chat_model = ctx.get_resource(MODEL, ResourceType.CHAT_MODEL)
        seen.append(chat_model.metric_group is ctx.action_metric_group)

    agent = chat_agent(ScriptedChatModelConnection(replies=[ChatMessage.assistant("hi")]))
    agent.add_action("act", [InputEvent], act)
    run_local(agent, [{"key": "k", "value": 1}])
    assert seen == [True]
    assert setup().metric_group is None  # outside an action: nothing bound
