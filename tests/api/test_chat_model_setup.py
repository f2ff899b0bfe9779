"""BaseChatModelSetup.chat / achat: the prompt, the tools, the parameters, overrides."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from flink_agents.api import (
    BaseChatModelSetup,
    ChatMessage,
    ChatResult,
    FunctionChatModelConnection,
    MessageRole,
    Prompt,
    Resource,
    ResourceType,
    TextBlock,
    ToolCallBlock,
)
from flink_agents.api.chat_models.chat_model import StructuredOutputStrategy
from flink_agents.api.tools.function_tool import FunctionTool


def _failures(error: ValidationError) -> list[tuple[Any, str]]:
    """Where validation failed and why: a ValidationError for another field does not pass."""
    return [(e["loc"], e["type"]) for e in error.errors()]


def lookup(ticket: str) -> str:
    """Look a ticket up.

    Args:
        ticket: The ticket id.
    """
    return ticket


def resources(
    connection: FunctionChatModelConnection, **extra: Resource
) -> dict[tuple[ResourceType, str], Resource]:
    found: dict[tuple[ResourceType, str], Resource] = {
        (ResourceType.CHAT_MODEL_CONNECTION, "conn"): connection
    }
    for name, resource in extra.items():
        found[(resource.resource_type(), name)] = resource
    return found


def setup_with(
    registry: Mapping[tuple[ResourceType, str], Resource],
    cls: type[BaseChatModelSetup] = BaseChatModelSetup,
    **fields: Any,
) -> BaseChatModelSetup:
    def get_resource(name: str, resource_type: ResourceType) -> Resource:
        return registry[(resource_type, name)]

    return cls(connection="conn", get_resource=get_resource, **fields)


def echo(messages: list[ChatMessage], tools: list) -> str:
    return " | ".join(f"{m.role.value}:{m.text}" for m in messages)


def test_chat_sends_the_prompt_then_the_messages_with_tools_and_parameters() -> None:
    model = FunctionChatModelConnection(function=echo)
    prompt = Prompt.from_text("You handle {team} tickets.")
    setup = setup_with(
        resources(model, lookup=FunctionTool.from_function(lookup)),
        model="m1",
        prompt=prompt,
        tools=["lookup"],
        params={"temperature": 0.5},
    )
    result = setup.chat([ChatMessage.user("hi")], prompt_args={"team": "billing"})
    assert isinstance(result, ChatResult)
    assert result.message.text == "system:You handle billing tickets. | user:hi"
    # Upstream's chat() returns the message: its .content reads the same here.
    assert result.content == result.message.text and result.tool_calls == []
    call = model.calls[0]
    assert [t.name for t in call.tools] == ["lookup"]
    assert call.params == {"model": "m1", "temperature": 0.5}
    # Keyword arguments of one call override the setup's parameters.
    setup.chat([ChatMessage.user("again")], temperature=0.0)
    assert model.calls[1].params == {"model": "m1", "temperature": 0.0}


def test_the_prompt_may_be_a_prompt_resource_name() -> None:
    model = FunctionChatModelConnection(function=echo)
    setup = setup_with(
        resources(model, greeting=Prompt.from_text("Hello {name}")), prompt="greeting"
    )
    assert setup.chat([], {"name": "Ada"}).message.text == "system:Hello Ada"


async def test_achat_awaits_the_same_call() -> None:
    model = FunctionChatModelConnection(function=echo)
    setup = setup_with(resources(model))
    result = await setup.achat([ChatMessage.user("hi")])
    assert result.message.text == "user:hi"


def test_messages_with_nothing_to_say_are_left_out_after_a_prompt() -> None:
    """Upstream's quickstart sends ``ChatMessage(role=USER)`` only to carry prompt_args:
    the model must not receive an empty user message after the prompt's."""
    model = FunctionChatModelConnection(function=echo)
    prompt = Prompt.from_messages(
        [ChatMessage.system("Analyze reviews."), ChatMessage.user("review: {input}")]
    )
    setup = setup_with(resources(model), prompt=prompt)
    call = ToolCallBlock(id="c1", name="lookup", input={})
    sent = setup.apply_prompt(
        [
            ChatMessage(role=MessageRole.USER, blocks=[]),
            ChatMessage.user(""),
            ChatMessage(role=MessageRole.SYSTEM, blocks=[TextBlock(text="")]),
            ChatMessage.assistant(tool_calls=[call]),
        ],
        {"input": "great"},
    )
    assert sent == [
        ChatMessage.system("Analyze reviews."),
        ChatMessage.user("review: great"),
        ChatMessage.assistant(tool_calls=[call]),
    ]
    setup.chat([ChatMessage(role=MessageRole.USER, blocks=[])], {"input": "ok"})
    assert [(m.role.value, m.text) for m in model.calls[-1].messages] == [
        ("system", "Analyze reviews."),
        ("user", "review: ok"),
    ]


class ServedPrompt(Prompt):
    """A prompt rendered somewhere else (as an MCP server renders one): the async rendering
    waits for an answer; the sync one would hold the caller's thread."""

    answer: str = "Be brief."

    def format_string(self, **kwargs: Any) -> str:
        raise AssertionError("rendered synchronously")

    def format_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        raise AssertionError("rendered synchronously")

    async def aformat_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        await asyncio.sleep(0)  # the loop goes on while the answer is on its way
        return [ChatMessage.system(f"{self.answer} ({kwargs['team']})")]


async def test_achat_awaits_the_prompts_async_rendering() -> None:
    model = FunctionChatModelConnection(function=echo)
    setup = setup_with(resources(model), prompt=ServedPrompt())
    result = await setup.achat([ChatMessage.user("hi")], {"team": "billing"})
    assert result.message.text == "system:Be brief. (billing) | user:hi"
    # The blocking chat goes through the same async path (on its own loop).
    assert setup.chat([ChatMessage.user("hi")], {"team": "ops"}).message.text == (
        "system:Be brief. (ops) | user:hi"
    )
    assert await setup.aapply_prompt([], {"team": "x"}) == [ChatMessage.system("Be brief. (x)")]


async def test_a_prompts_async_rendering_is_its_sync_one_by_default() -> None:
    prompt = Prompt.from_text("You handle {team} tickets.")
    assert await prompt.aformat_string(team="billing") == "You handle billing tickets."
    assert await prompt.aformat_messages(MessageRole.USER, team="ops") == [
        ChatMessage.user("You handle ops tickets.")
    ]


def test_without_a_prompt_the_messages_go_as_they_are() -> None:
    setup = setup_with(resources(FunctionChatModelConnection(function=echo)))
    empty = ChatMessage.user("")
    assert setup.apply_prompt([empty]) == [empty]


class PrefixingSetup(BaseChatModelSetup):
    """Puts a message of its own before every call's messages, without a prompt."""

    async def aapply_prompt(
        self, messages: Sequence[ChatMessage], prompt_args: Mapping[str, Any] | None = None
    ) -> list[ChatMessage]:
        return [ChatMessage.system("house rules"), *messages]


async def test_an_overriding_aapply_prompt_is_used_without_a_prompt() -> None:
    model = FunctionChatModelConnection(function=echo)
    setup = setup_with(resources(model), cls=PrefixingSetup)
    result = await setup.achat([ChatMessage.user("hi")])
    assert result.message.text == "system:house rules | user:hi"
    plain = setup_with(resources(model))  # no prompt and no override: as they are
    assert (await plain.achat([ChatMessage.user("hi")])).message.text == "user:hi"


SEEN: list[Any] = []


class UpstreamStyleSetup(BaseChatModelSetup):
    """Overrides the sync ``chat`` and answers with the assistant message, as upstream's
    setups do; calls the base class for the real work."""

    def chat(
        self,
        messages: Sequence[ChatMessage],
        prompt_args: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        SEEN.append((threading.current_thread().name, prompt_args))
        result = super().chat([*messages, ChatMessage.user("(checked)")], prompt_args, **kwargs)
        return result.message


async def test_achat_goes_through_an_overriding_chat() -> None:
    model = FunctionChatModelConnection(function=echo)
    setup = setup_with(resources(model), cls=UpstreamStyleSetup, model="m")
    assert setup.overrides_chat()
    result = await setup.achat([ChatMessage.user("hi")], {"x": 1})
    # The override's message comes back as a ChatResult.
    assert isinstance(result, ChatResult)
    assert result.message.text == "user:hi | user:(checked)"
    assert SEEN[-1][1] == {"x": 1}
    assert SEEN[-1][0] != threading.current_thread().name


class AsyncSetup(BaseChatModelSetup):
    async def achat(
        self,
        messages: Sequence[ChatMessage],
        prompt_args: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = await super().achat(messages, prompt_args, **kwargs)
        return ChatResult(message=ChatMessage.assistant(result.message.text.upper()))


def test_sync_chat_goes_through_an_overriding_achat() -> None:
    setup = setup_with(resources(FunctionChatModelConnection(function=echo)), cls=AsyncSetup)
    assert setup.chat([ChatMessage.user("hi")]).message.text == "USER:HI"


def test_a_plain_setup_does_not_override() -> None:
    assert not setup_with(resources(FunctionChatModelConnection(function=echo))).overrides_chat()


def test_a_setup_outside_an_agent_says_how_to_get_one() -> None:
    setup = BaseChatModelSetup(connection="conn")
    with pytest.raises(RuntimeError, match=r"ctx.get_resource"):
        setup.chat([ChatMessage.user("hi")])


def test_a_connection_name_that_is_no_connection_is_refused() -> None:
    registry: dict[tuple[ResourceType, str], Resource] = {
        (ResourceType.CHAT_MODEL_CONNECTION, "conn"): Prompt.from_text("x")
    }
    with pytest.raises(TypeError, match="not a chat model connection"):
        setup_with(registry).chat([ChatMessage.user("hi")])


@pytest.mark.parametrize("raw", ["NATIVE", "native", "Native"])
def test_structured_output_strategy_by_name_or_value(raw: str) -> None:
    setup = BaseChatModelSetup(connection="c", structured_output_strategy=raw)
    assert setup.structured_output_strategy is StructuredOutputStrategy.NATIVE


def test_structured_output_strategy_defaults_to_auto_and_null_is_auto() -> None:
    assert BaseChatModelSetup(connection="c").structured_output_strategy is (
        StructuredOutputStrategy.AUTO
    )
    none: Any = None
    setup = BaseChatModelSetup(connection="c", structured_output_strategy=none)
    assert setup.structured_output_strategy is StructuredOutputStrategy.AUTO
    with pytest.raises(ValidationError) as raised:
        BaseChatModelSetup(connection="c", structured_output_strategy="bogus")
    assert _failures(raised.value) == [(("structured_output_strategy",), "enum")]


def test_the_strategy_resolves_against_the_capability() -> None:
    assert StructuredOutputStrategy.AUTO.resolves_to_native(True) is True
    assert StructuredOutputStrategy.AUTO.resolves_to_native(False) is False
    assert StructuredOutputStrategy.NATIVE.resolves_to_native(False) is True
    assert StructuredOutputStrategy.PROMPT.resolves_to_native(True) is False


def test_native_structured_output_is_refused_saying_what_to_use() -> None:
    connection = FunctionChatModelConnection(function=echo)
    assert connection.supports_native_structured_output("any") is False
    for strategy in ("auto", "prompt"):
        setup_with(
            resources(connection), structured_output_strategy=strategy
        ).check_structured_output()
    native = setup_with(resources(connection), structured_output_strategy="native")
    with pytest.raises(ValueError, match="use AUTO"):
        native.check_structured_output()
