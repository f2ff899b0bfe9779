"""Upstream's parallel chat example (`flink_agents.examples.quickstart.agents.
parallel_chat_agent`), its agent as upstream wrote it: two actions fan out one
`ChatRequestEvent` each, keep ``aspect_map.{req.id}`` in sensory memory before sending it,
and match each `ChatResponseEvent` to its aspect by ``request_id``; the requests give
``output_schema=OutputSchema(output_schema=...)`` and the response is read from
``response.extra_args[STRUCTURED_OUTPUT]``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.api.agents.agent import STRUCTURED_OUTPUT, Agent
from flink_agents.api.agents.types import OutputSchema
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.chat_models.function_model import FunctionChatModelConnection
from flink_agents.api.decorators import action
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from tests.runtime.chat_agents import run_local

SENTIMENT_INPUT_EVENT_TYPE = "SentimentInputEvent"
ASPECTS = ("taste", "service")
SENT: dict[str, list[str]] = {}
"""Per aspect, the ids its requests had when they were sent (read before send_event)."""


class AspectResponse(BaseModel):
    aspect: str
    result: str


class SummaryResponse(BaseModel):
    summary: str


def _build_aspect_request(text: str, aspect: str) -> ChatRequestEvent:
    return ChatRequestEvent(
        model="sentiment_model",
        messages=[
            ChatMessage(role=MessageRole.SYSTEM, content="Return JSON."),
            ChatMessage(role=MessageRole.USER, content=f'Judge the "{aspect}" dimension: {text}'),
        ],
        output_schema=OutputSchema(output_schema=AspectResponse),
    )


def _build_summarize_request(text: str, sentiments: dict[str, str]) -> ChatRequestEvent:
    body = f"Original: {text}\nJudgments: " + " ".join(f"{a}:{sentiments[a]}" for a in ASPECTS)
    return ChatRequestEvent(
        model="sentiment_model",
        messages=[ChatMessage(role=MessageRole.USER, content=body)],
        output_schema=OutputSchema(output_schema=SummaryResponse),
    )


class ParallelChatAgent(Agent):
    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def request_aspect_judgments(event: Event, ctx: RunnerContext) -> None:
        payload = InputEvent.from_event(event).input
        ctx.sensory_memory.set("id", payload["id"])
        ctx.sensory_memory.set("text", payload["text"])
        ctx.send_event(
            Event(
                type=SENTIMENT_INPUT_EVENT_TYPE,
                attributes={"input_id": payload["id"], "text": payload["text"]},
            )
        )

    @action(SENTIMENT_INPUT_EVENT_TYPE)
    @staticmethod
    def handle_taste_input(event: Event, ctx: RunnerContext) -> None:
        req = _build_aspect_request(event.get_attr("text"), "taste")
        ctx.sensory_memory.set(f"aspect_map.{req.id}", "taste")
        SENT.setdefault("taste", []).append(req.id)
        ctx.send_event(req)

    @action(SENTIMENT_INPUT_EVENT_TYPE)
    @staticmethod
    async def handle_service_input(event: Event, ctx: RunnerContext) -> None:
        req = _build_aspect_request(event.get_attr("text"), "service")
        ctx.sensory_memory.set(f"aspect_map.{req.id}", "service")
        SENT.setdefault("service", []).append(req.id)
        ctx.send_event(req)

    @action(ChatResponseEvent.EVENT_TYPE)
    @staticmethod
    def handle_response(event: Event, ctx: RunnerContext) -> None:
        response_event = ChatResponseEvent.from_event(event)
        assert response_event.response is not None
        parsed = response_event.response.extra_args[STRUCTURED_OUTPUT]
        if isinstance(parsed, dict):
            parsed = SummaryResponse(**parsed) if "summary" in parsed else AspectResponse(**parsed)
        if isinstance(parsed, SummaryResponse):
            output = {"id": ctx.sensory_memory.get("id"), "summary": parsed.summary}
            ctx.send_event(OutputEvent(output=output))
            return
        assert isinstance(parsed, AspectResponse)
        aspect = ctx.sensory_memory.get(f"aspect_map.{response_event.request_id}")
        ctx.sensory_memory.set(f"sentiments.{aspect}", parsed.result)
        if all(ctx.sensory_memory.is_exist(f"sentiments.{a}") for a in ASPECTS):
            text = ctx.sensory_memory.get("text")
            sentiments = {a: ctx.sensory_memory.get(f"sentiments.{a}") for a in ASPECTS}
            ctx.send_event(_build_summarize_request(text, sentiments))


def sentiment_model(messages: list[ChatMessage], tools: Any) -> str:
    """Taste is positive, service negative; the summary repeats the judgments."""
    text = messages[-1].content
    if text.startswith("Original:"):
        judgments = text.split("Judgments: ")[1].replace(" ", ", ")
        return json.dumps({"summary": judgments})
    aspect = "taste" if '"taste"' in text else "service"
    result = "positive" if aspect == "taste" else "negative"
    return json.dumps({"aspect": aspect, "result": result})


def with_sentiment_model(agent: Agent) -> Agent:
    connection = FunctionChatModelConnection(function=sentiment_model)
    agent.add_resource("conn", ResourceType.CHAT_MODEL_CONNECTION, connection)
    agent.add_resource(
        "sentiment_model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=BaseChatModelSetup, connection="conn"),
    )
    return agent


def parallel_chat_agent() -> Agent:
    return with_sentiment_model(ParallelChatAgent())


def test_upstreams_parallel_chat_agent_matches_responses_to_requests_by_id() -> None:
    SENT.clear()
    review = {"id": 1, "text": "The food here is great, but the service is too slow"}
    outputs, _ = run_local(parallel_chat_agent(), [{"key": 1, "value": review}])
    assert [o.value for o in outputs] == [{"id": 1, "summary": "taste:positive, service:negative"}]
    first = dict(SENT)
    assert all(len(ids) == 1 and "." not in str(ids[0]) for ids in first.values())
    # The same run again (a replay) makes the same ids.
    SENT.clear()
    run_local(parallel_chat_agent(), [{"key": 1, "value": review}])
    assert dict(SENT) == first


def test_request_id_of_a_response_is_the_id_the_request_had_when_it_was_made() -> None:
    made: list[str] = []

    async def ask(event: Event, ctx: RunnerContext) -> None:
        request = ChatRequestEvent(model="sentiment_model", messages=[ChatMessage.user('"taste"')])
        made.append(request.id)
        ctx.send_event(request)
        ctx.send_event(request)  # the same object again: another event, another id

    async def answer(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=ChatResponseEvent.from_event(event).request_id))

    agent = Agent().add_action("ask", [InputEvent], ask)
    with_sentiment_model(agent.add_action("answer", [ChatResponseEvent], answer))
    outputs, _ = run_local(agent, [{"key": "k", "value": "go"}])
    request_ids = [o.value for o in outputs]
    assert request_ids[0] == made[0] and len(set(request_ids)) == 2


def test_a_row_type_output_schema_is_refused_saying_what_to_use() -> None:
    from pyflink.common.typeinfo import BasicTypeInfo, RowTypeInfo

    row_type = RowTypeInfo([BasicTypeInfo.STRING_TYPE_INFO()], ["summary"])
    with pytest.raises(TypeError, match="pydantic model class with those fields"):
        ChatRequestEvent(model="m", output_schema=OutputSchema(output_schema=row_type))
