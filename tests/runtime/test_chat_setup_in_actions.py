"""Chat model setups from actions (ctx.get_resource) and setups with their own chat in the
built-in chat action: prompts, retries and durable replay."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.api import (
    Agent,
    AgentsExecutionEnvironment,
    BaseChatModelSetup,
    ChatMessage,
    ChatModelError,
    ChatRequestEvent,
    ChatResponseEvent,
    ChatResult,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    MessageRole,
    OutputEvent,
    Prompt,
    ResourceDescriptor,
    ResourceType,
    RunnerContext,
    ToolCallBlock,
    ToolMetadata,
)
from flink_agents.runtime import builtin_actions
from flink_agents.runtime.errors import ActionExecutionError
from tests.runtime.chat_agents import only_response, run_local


def lookup(order: str) -> str:
    """Look an order up.

    Args:
        order: The order number.
    """
    return f"order {order}: in transit"


def line(message: ChatMessage) -> str:
    block = message.tool_result_block
    return f"{message.role.value}:{block.text if block else message.text}"


def echo(messages: list[ChatMessage], tools: list[ToolMetadata]) -> str:
    return " | ".join(line(m) for m in messages)


def base_agent(connection: FunctionChatModelConnection, **setup: Any) -> Agent:
    agent = Agent()
    agent.add_resource("conn", ResourceType.CHAT_MODEL_CONNECTION, connection)
    clazz = setup.pop("clazz", BaseChatModelSetup)
    agent.add_resource(
        "model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=clazz, connection="conn", **setup),
    )
    return agent


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    recorded: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(builtin_actions, "_sleep", fake_sleep)
    return recorded


# ------------------------------------------------------------------ from an action


def test_a_sync_action_calls_the_setup_it_gets_from_the_context() -> None:
    def ask(event: Event, ctx: RunnerContext) -> None:
        model = ctx.get_resource("model", ResourceType.CHAT_MODEL)
        assert isinstance(model, BaseChatModelSetup)
        answer = model.chat([ChatMessage.user(str(event.attributes["input"]))], {"team": "billing"})
        ctx.send_event(OutputEvent(output=answer.message.text))

    connection = FunctionChatModelConnection(function=echo)
    agent = base_agent(connection, prompt=Prompt.from_text("You handle {team} tickets."))
    agent.add_action("ask", [InputEvent], ask)
    outputs, _ = run_local(agent, [{"key": "k", "value": "refund please"}])
    assert [o.value for o in outputs] == ["system:You handle billing tickets. | user:refund please"]


def test_an_async_action_awaits_achat_and_a_durable_chat(tmp_path: Path) -> None:
    """Upstream's async actions call ``await ctx.durable_execute_async(model.chat, ...)``;
    with a store, a run made again gets the recorded answer."""
    calls: list[str] = []

    def model_function(messages: list[ChatMessage], tools: list[ToolMetadata]) -> str:
        calls.append(messages[-1].text)
        return echo(messages, tools)

    async def ask(event: Event, ctx: RunnerContext) -> None:
        model = ctx.get_resource("model", ResourceType.CHAT_MODEL)
        assert isinstance(model, BaseChatModelSetup)
        question = [ChatMessage.user(str(event.attributes["input"]))]
        direct = await model.achat(question)
        durable = await ctx.durable_execute_async(model.chat, question, prompt_args={"x": 1})
        assert isinstance(durable, ChatResult)
        ctx.send_event(OutputEvent(output=[direct.message.text, durable.message.text]))

    def run() -> list[Any]:
        agent = base_agent(FunctionChatModelConnection(function=model_function))
        agent.add_action("ask", [InputEvent], ask)
        config = {"durable-execution.store": f"sqlite:///{tmp_path}/calls.db"}
        env = AgentsExecutionEnvironment.get_execution_environment(config=config)
        results = env.from_list([{"key": "k", "value": "q"}]).apply(agent).to_list()
        env.execute()
        return results

    assert run() == [{"k": ["user:q", "user:q"]}]
    assert calls == ["q", "q"]
    assert run() == [{"k": ["user:q", "user:q"]}]
    assert calls == ["q", "q", "q"]  # the durable call replayed, the direct one did not


# ------------------------------------------------------------------ the built-in chat action

RECEIVED: list[tuple[list[str], Any]] = []
FAILURES: list[BaseException] = []


class UpstreamStyleSetup(BaseChatModelSetup):
    """A setup written for the upstream API: a sync ``chat`` that answers with the
    assistant message. It applies the prompt itself and marks what it answers."""

    def chat(
        self,
        messages: Sequence[ChatMessage],
        prompt_args: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:  # pyright: ignore[reportIncompatibleMethodOverride]
        RECEIVED.append(([line(m) for m in messages], prompt_args))
        if FAILURES:
            raise FAILURES.pop(0)
        result = super().chat(messages, prompt_args, **kwargs)
        message = result.message
        if message.tool_calls:
            return message
        return ChatMessage.assistant(f"[checked] {message.text}")


def upstream_agent(connection: FunctionChatModelConnection) -> Agent:
    async def start(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(
                model="model",
                messages=[ChatMessage.user(str(event.attributes["input"]))],
                prompt_args={"team": "shipping"},
            )
        )

    async def finish(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event))

    agent = base_agent(
        connection,
        clazz=UpstreamStyleSetup,
        prompt=Prompt.from_text("You handle {team} tickets."),
        tools=["lookup"],
    )
    agent.add_resource("lookup", ResourceType.TOOL, lookup)
    agent.add_action("start", [InputEvent], start)
    agent.add_action("finish", [ChatResponseEvent], finish)
    return agent


def tool_then_answer(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    results = [m.tool_result_block for m in messages if m.tool_result_block]
    if not results:
        call = ToolCallBlock(id="c1", name="lookup", input={"order": "42"})
        return ChatMessage.assistant("checking", tool_calls=[call])
    return echo(messages, tools)


@pytest.fixture(autouse=True)
def _clean() -> None:
    RECEIVED.clear()
    FAILURES.clear()


def test_the_chat_action_calls_a_setup_that_overrides_chat() -> None:
    connection = FunctionChatModelConnection(function=tool_then_answer)
    outputs, _ = run_local(upstream_agent(connection), [{"key": "k", "value": "where is 42?"}])
    response = only_response(outputs)
    assert response.error is None and response.response is not None
    assert response.response.text.startswith("[checked] system:You handle shipping tickets.")
    # Each turn the setup gets the conversation without the prompt, and the prompt args.
    assert [received for received, _ in RECEIVED] == [
        ["user:where is 42?"],
        ["user:where is 42?", "assistant:checking", "tool:order 42: in transit"],
    ]
    assert all(args == {"team": "shipping"} for _, args in RECEIVED)
    # What the model saw: the prompt once, first.
    assert [m.role for m in connection.calls[1].messages] == [
        MessageRole.SYSTEM,
        MessageRole.USER,
        MessageRole.ASSISTANT,
        MessageRole.TOOL,
    ]


def test_a_setup_with_its_own_chat_is_retried(sleeps: list[float]) -> None:
    FAILURES.append(ChatModelError("busy", status_code=429, retryable=True))
    connection = FunctionChatModelConnection(function=echo)
    outputs, _ = run_local(
        upstream_agent(connection), [{"key": "k", "value": "hi"}], {"retry-wait-interval": 0.1}
    )
    response = only_response(outputs)
    assert response.error is None and response.response is not None
    assert response.response.text.startswith("[checked]")
    assert len(RECEIVED) == 2 and len(sleeps) == 1


def test_a_setup_with_its_own_chat_is_replayed_from_the_store(tmp_path: Path) -> None:
    def run() -> list[str]:
        agent = upstream_agent(FunctionChatModelConnection(function=tool_then_answer))
        config = {"durable-execution.store": f"sqlite:///{tmp_path}/calls.db"}
        env = AgentsExecutionEnvironment.get_execution_environment(config=config)
        results = env.from_list([{"key": "k", "value": "where is 42?"}]).apply(agent).to_list()
        env.execute()
        return [r.response.text for result in results for r in result.values()]

    first = run()
    assert len(RECEIVED) == 2
    assert run() == first
    assert len(RECEIVED) == 2  # both turns answered from the store


# ------------------------------------------------------------------ on the wire


def test_no_empty_user_message_follows_the_prompt_on_the_wire() -> None:
    """Upstream's review-analysis quickstart: the request's only message is an empty user
    message carrying prompt_args; the model gets the prompt's messages, nothing after."""
    prompt = Prompt.from_messages(
        [ChatMessage.system("Score the review."), ChatMessage.user('"input": {input}')]
    )

    async def start(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(
                model="model",
                messages=[ChatMessage(role=MessageRole.USER, blocks=[])],
                prompt_args={"input": event.attributes["input"]},
            )
        )

    async def finish(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event))

    connection = FunctionChatModelConnection(function=tool_then_answer)
    agent = base_agent(connection, prompt=prompt, tools=["lookup"])
    agent.add_resource("lookup", ResourceType.TOOL, lookup)
    agent.add_action("start", [InputEvent], start)
    agent.add_action("finish", [ChatResponseEvent], finish)
    outputs, _ = run_local(agent, [{"key": "k", "value": "late parcel"}])
    assert only_response(outputs).error is None
    sent = [[(m.role.value, m.text) for m in call.messages] for call in connection.calls]
    assert sent[0] == [("system", "Score the review."), ("user", '"input": late parcel')]
    assert sent[1][:2] == sent[0]
    assert [role for role, _ in sent[1][2:]] == ["assistant", "tool"]


def test_the_chat_action_still_sends_through_a_plain_setup() -> None:
    connection = FunctionChatModelConnection(function=echo)
    agent = base_agent(connection, prompt=Prompt.from_text("P {x}"))

    async def start(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(model="model", messages=[ChatMessage.user("q")], prompt_args={"x": 1})
        )

    async def finish(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event))

    agent.add_action("start", [InputEvent], start)
    agent.add_action("finish", [ChatResponseEvent], finish)
    outputs, _ = run_local(agent, [{"key": "k", "value": "x"}])
    response = only_response(outputs)
    assert response.response is not None and response.response.text == "system:P 1 | user:q"
    assert asyncio.iscoroutinefunction(BaseChatModelSetup.achat)


def test_a_request_with_a_schema_to_a_native_setup_fails_saying_what_to_use() -> None:
    class Answer(BaseModel):
        text: str

    async def start(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(model="model", messages=[ChatMessage.user("q")], output_schema=Answer)
        )

    agent = base_agent(
        FunctionChatModelConnection(function=echo), structured_output_strategy="native"
    )
    agent.add_action("start", [InputEvent], start)
    with pytest.raises(ActionExecutionError, match="structured_output_strategy NATIVE"):
        run_local(agent, [{"key": "k", "value": "x"}])
