"""Test chat models: function-backed and scripted."""

from __future__ import annotations

import asyncio

import pytest

from flink_agents.api import (
    ChatMessage,
    ChatModelError,
    ChatResult,
    FunctionChatModelConnection,
    FunctionTool,
    ScriptedChatModelConnection,
    ToolCallBlock,
    ToolMetadata,
    Usage,
)


def lookup(ticket: str) -> str:
    """Look up a ticket.

    Args:
        ticket: Its id.
    """
    return ticket


async def test_function_model_gets_messages_and_tool_metadata() -> None:
    seen: list[tuple[list[ChatMessage], list[ToolMetadata]]] = []

    def reply(messages: list[ChatMessage], tools: list[ToolMetadata]) -> str:
        seen.append((messages, tools))
        return f"{len(messages)} messages, tools {[t.name for t in tools]}"

    model = FunctionChatModelConnection(function=reply, model_name="fn")
    tool = FunctionTool.from_function(lookup)
    result = await model.achat([ChatMessage.user("hi")], [tool], model="x", temperature=0)
    assert result == ChatResult(
        message=ChatMessage.assistant("1 messages, tools ['lookup']"),
        model="fn",
        finish_reason="stop",
        usage=Usage(),
    )
    assert seen[0][1] == [tool.metadata]
    assert len(model.calls) == 1
    assert model.calls[0].messages == [ChatMessage.user("hi")]
    assert model.calls[0].tools == [tool.metadata]
    assert model.calls[0].params == {"model": "x", "temperature": 0}


async def test_function_model_async_function_results_and_tool_call_finish() -> None:
    async def reply(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage:
        return ChatMessage.assistant(tool_calls=[ToolCallBlock(id="c1", name="lookup")])

    result = await FunctionChatModelConnection(function=reply).achat([ChatMessage.user("x")])
    assert result.finish_reason == "tool_calls"
    assert result.message.tool_calls[0].id == "c1"

    full = ChatResult(message=ChatMessage.assistant("a"), usage=Usage(input_tokens=3))
    model = FunctionChatModelConnection(function=lambda m, t: full)
    assert await model.achat([ChatMessage.user("x")]) is full
    # The sync entry point works too.
    assert model.chat([ChatMessage.user("x")]) is full


async def test_recorded_messages_are_copies() -> None:
    messages = [ChatMessage.user("original")]
    model = FunctionChatModelConnection(function=lambda m, t: "ok")
    await model.achat(messages)
    messages[0].blocks[0].text = "changed"  # type: ignore[union-attr]
    assert model.calls[0].messages[0].text == "original"


async def test_latency_is_slept_without_blocking_the_loop() -> None:
    received_before_answering: list[int] = []

    def answer(messages: list[ChatMessage], tools: list[ToolMetadata]) -> str:
        received_before_answering.append(len(model.calls))
        return "ok"

    model = FunctionChatModelConnection(function=answer, latency=0.01)
    await asyncio.gather(*(model.achat([ChatMessage.user("x")]) for _ in range(20)))
    # All twenty calls were received before the first answer: they waited out their
    # latency together (a blocking wait answers each before the next is received).
    assert received_before_answering == [20] * 20

    quiet = FunctionChatModelConnection(function=lambda m, t: "ok", record_calls=False)
    await quiet.achat([ChatMessage.user("x")])
    assert quiet.calls == []


async def test_scripted_model_plays_replies_in_order_and_raises_errors() -> None:
    error = ChatModelError("overloaded", status_code=529, retryable=True, kind="server")
    model = ScriptedChatModelConnection(replies=["first", error, ChatMessage.assistant("third")])
    assert (await model.achat([ChatMessage.user("1")])).message.text == "first"
    with pytest.raises(ChatModelError) as raised:
        await model.achat([ChatMessage.user("2")])
    assert raised.value is error
    assert (await model.achat([ChatMessage.user("3")])).message.text == "third"
    with pytest.raises(RuntimeError, match="3 replies; call 4"):
        await model.achat([ChatMessage.user("4")])
    assert [c.messages[0].text for c in model.calls] == ["1", "2", "3", "4"]


async def test_function_model_without_function_fails() -> None:
    with pytest.raises(ValueError, match="needs a function"):
        await FunctionChatModelConnection().achat([ChatMessage.user("x")])
