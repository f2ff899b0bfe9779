"""`tool-call.timeout-s` in the built-in tool action, and sync tools on threads of their own."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import Field

from flink_agents.api import (
    AgentConfiguration,
    AgentExecutionOptions,
    ChatMessage,
    ChatResponseEvent,
    FunctionChatModelConnection,
    MessageRole,
    ScriptedChatModelConnection,
    ToolCallBlock,
    ToolMetadata,
    ToolResultBlock,
)
from flink_agents.api.tools.tool import Tool
from flink_agents.runtime.local_runner import AgentOutput, LocalRunner
from tests.runtime.chat_agents import chat_agent, only_response

BOUND = 5.0
"""Seconds a test waits at most for its runs (a safety net, never the expected time)."""


def call(call_id: str, name: str, **arguments: Any) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name=name, input=arguments)


def tool_results(model: FunctionChatModelConnection, turn: int = 1) -> list[ToolResultBlock]:
    """The tool results the model was sent in call ``turn``."""
    blocks = [m.tool_result_block for m in model.calls[turn].messages]
    return [b for b in blocks if b is not None]


def run_bounded(
    agent: Any,
    inputs: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any],
    release: threading.Event | None = None,
) -> tuple[list[AgentOutput], LocalRunner]:
    """Run on a local runner whose loop's default executor has ``num-async-threads``
    threads (as `LocalExecutionEnvironment` sets it up), at most `BOUND` seconds; then
    ``release`` the hung tools (so the loop's executor can shut down)."""
    runner = LocalRunner(agent, dict(config))

    async def main() -> list[AgentOutput]:
        threads = AgentConfiguration(config).get(AgentExecutionOptions.NUM_ASYNC_THREADS)
        executor = ThreadPoolExecutor(max_workers=threads)
        asyncio.get_running_loop().set_default_executor(executor)
        try:
            return await asyncio.wait_for(runner.run(inputs), BOUND)
        finally:
            if release is not None:
                release.set()
            executor.shutdown(wait=False, cancel_futures=True)

    try:
        return asyncio.run(main()), runner
    finally:
        runner.close()


def test_the_option_defaults_to_300_seconds_and_must_be_positive() -> None:
    assert AgentConfiguration().get(AgentExecutionOptions.TOOL_CALL_TIMEOUT) == 300.0
    assert AgentConfiguration({"tool-call.timeout-s": "0.5"}).get(
        AgentExecutionOptions.TOOL_CALL_TIMEOUT
    ) == pytest.approx(0.5)
    for bad in ("0", -1, "nan", "soon"):
        with pytest.raises(ValueError, match=r"tool-call\.timeout"):
            AgentConfiguration({"tool-call.timeout-s": bad})


def test_a_slow_async_tool_gives_a_timeout_result_and_the_loop_goes_on() -> None:
    never = asyncio.Event()  # nobody sets it

    async def stuck(ticket: str) -> str:
        """Waits forever.

        Args:
            ticket: Id.
        """
        await never.wait()
        return "unreachable"

    async def lookup(ticket: str) -> str:
        """Answers at once.

        Args:
            ticket: Id.
        """
        return f"ticket {ticket}: open"

    model = ScriptedChatModelConnection(
        replies=[
            ChatMessage.assistant(
                tool_calls=[call("c1", "stuck", ticket="1"), call("c2", "lookup", ticket="2")]
            ),
            "One lookup timed out.",
        ]
    )
    outputs, runner = run_bounded(
        chat_agent(model, tools={"stuck": stuck, "lookup": lookup}),
        [{"key": "k", "value": "go"}],
        {"tool-call.timeout-s": 0.05},
    )
    response = only_response(outputs)
    assert response.ok and response.response is not None
    assert response.response.text == "One lookup timed out."
    timed_out, answered = tool_results(model)
    assert timed_out.is_error and timed_out.text == "tool 'stuck' timed out after 0.05 s"
    assert not answered.is_error and answered.text == "ticket 2: open"
    snapshot = runner.metrics.snapshot()  # type: ignore[attr-defined]
    assert snapshot["tool"]["stuck"]["errors"] == 1


def test_an_async_tool_that_swallows_its_cancellation_is_not_waited_for() -> None:
    never = asyncio.Event()  # nobody sets it
    returned = threading.Event()
    answered_before_it_returned: list[bool] = []

    async def stubborn(ticket: str) -> str:
        """Ignores being cancelled, and returns a second later.

        Args:
            ticket: Id.
        """
        with contextlib.suppress(asyncio.CancelledError):
            await never.wait()
        await asyncio.sleep(1.0)
        returned.set()
        return "late"

    def reply(messages: list[ChatMessage], tools: Any) -> ChatMessage | str:
        if messages[-1].role is MessageRole.TOOL:
            answered_before_it_returned.append(not returned.is_set())
            return "ok"
        return ChatMessage.assistant(tool_calls=[call("c1", "stubborn", ticket="1")])

    model = FunctionChatModelConnection(function=reply)
    outputs, _ = run_bounded(
        chat_agent(model, tools={"stubborn": stubborn}),
        [{"key": "k", "value": "go"}],
        {"tool-call.timeout-s": 0.05},
    )
    assert only_response(outputs).ok
    # The chat loop went on with the timeout when it came, not when the tool returned.
    assert answered_before_it_returned == [True]
    (result,) = tool_results(model)
    assert result.is_error and result.text == "tool 'stubborn' timed out after 0.05 s"


def test_a_hung_sync_tool_gives_a_timeout_result(release: threading.Event) -> None:
    def blocking(ticket: str) -> str:
        """Blocks its thread until released.

        Args:
            ticket: Id.
        """
        release.wait()
        return "late"

    model = ScriptedChatModelConnection(
        replies=[ChatMessage.assistant(tool_calls=[call("c1", "blocking", ticket="1")]), "ok"]
    )
    outputs, _ = run_bounded(
        chat_agent(model, tools={"blocking": blocking}),
        [{"key": "k", "value": "go"}],
        {"tool-call.timeout-s": "1.5e-1"},
        release,
    )
    assert only_response(outputs).ok
    (result,) = tool_results(model)
    assert result.is_error and result.text == "tool 'blocking' timed out after 0.15 s"


def test_a_timeout_error_the_tool_raises_itself_is_a_failure_not_a_timeout() -> None:
    async def flaky(ticket: str) -> str:
        """Its backend times out.

        Args:
            ticket: Id.
        """
        raise TimeoutError("backend did not answer")

    model = ScriptedChatModelConnection(
        replies=[ChatMessage.assistant(tool_calls=[call("c1", "flaky", ticket="1")]), "ok"]
    )
    run_bounded(chat_agent(model, tools={"flaky": flaky}), [{"key": "k", "value": "go"}], {})
    (result,) = tool_results(model)
    assert result.is_error
    assert result.text == "tool 'flaky' failed: TimeoutError: backend did not answer"


def test_hung_sync_tools_do_not_block_an_instant_sync_tool_of_another_key(
    release: threading.Event,
) -> None:
    # More than the 2 tool threads (and than the loop's default executor): before, they
    # held every thread for good. Each timed-out thread is written off and replaced.
    hung_keys = [f"hung-{i}" for i in range(8)]

    def hang(ticket: str) -> str:
        """Blocks its thread until released.

        Args:
            ticket: Id.
        """
        release.wait()
        return "late"

    def instant(ticket: str) -> str:
        """Answers at once.

        Args:
            ticket: Id.
        """
        return f"ticket {ticket}: open"

    def reply(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
        if messages[-1].tool_result_block is not None:
            return "done"
        text = messages[0].text
        tool = "instant" if text == "fast" else "hang"
        return ChatMessage.assistant(tool_calls=[call(f"c-{text}", tool, ticket=text)])

    model = FunctionChatModelConnection(function=reply)
    inputs = [{"key": key, "value": key} for key in hung_keys] + [{"key": "f", "value": "fast"}]
    outputs, _ = run_bounded(
        chat_agent(model, tools={"hang": hang, "instant": instant}),
        inputs,
        {"tool-call.timeout-s": 0.1, "num-async-threads": 2},
        release,
    )

    responses = {o.key: o.value for o in outputs}
    assert set(responses) == {*hung_keys, "f"}
    assert all(isinstance(r, ChatResponseEvent) and r.ok for r in responses.values())
    results = {
        block.call_id: block
        for recorded in model.calls
        for message in recorded.messages
        if (block := message.tool_result_block) is not None
    }
    assert not results["c-fast"].is_error and results["c-fast"].text == "ticket fast: open"
    for key in hung_keys:
        assert results[f"c-{key}"].is_error
        assert results[f"c-{key}"].text == "tool 'hang' timed out after 0.1 s"


class Ticket(Tool):
    """Upstream's way to write a tool: a `Tool` subclass with a sync ``call``."""

    hang_until: Any = None
    """A `threading.Event` the call waits for (None: it answers at once)."""
    threads: list[str] = Field(default_factory=list)

    def call(self, ticket: str) -> str:
        self.threads.append(threading.current_thread().name)
        if self.hang_until is not None:
            self.hang_until.wait()
            return "late"
        return f"ticket {ticket}: open"


def _ticket_tool(name: str, hang_until: threading.Event | None = None) -> Ticket:
    schema = {"type": "object", "properties": {"ticket": {"type": "string"}}}
    metadata = ToolMetadata(name=name, description="Look a ticket up.", args_schema=schema)
    return Ticket(metadata=metadata, hang_until=hang_until)


def test_hung_sync_tool_subclasses_are_written_off_like_function_tools(
    release: threading.Event,
) -> None:
    """A `Tool` subclass's sync ``call`` runs on the tool threads too: hung calls (more than
    the threads) are written off, and an instant call of another key is answered."""
    hung_keys = [f"hung-{i}" for i in range(8)]
    hang, instant = _ticket_tool("hang", release), _ticket_tool("instant")

    def reply(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
        if messages[-1].tool_result_block is not None:
            return "done"
        text = messages[0].text
        tool = "instant" if text == "fast" else "hang"
        return ChatMessage.assistant(tool_calls=[call(f"c-{text}", tool, ticket=text)])

    model = FunctionChatModelConnection(function=reply)
    inputs = [{"key": key, "value": key} for key in hung_keys] + [{"key": "f", "value": "fast"}]
    outputs, _ = run_bounded(
        chat_agent(model, tools={"hang": hang, "instant": instant}),  # type: ignore[dict-item]
        inputs,
        {"tool-call.timeout-s": 0.1, "num-async-threads": 2},
        release,
    )

    assert all(isinstance(o.value, ChatResponseEvent) and o.value.ok for o in outputs)
    results = {
        block.call_id: block
        for recorded in model.calls
        for message in recorded.messages
        if (block := message.tool_result_block) is not None
    }
    assert not results["c-fast"].is_error and results["c-fast"].text == "ticket fast: open"
    for key in hung_keys:
        assert results[f"c-{key}"].text == "tool 'hang' timed out after 0.1 s"
    assert instant.threads and all(n.startswith("agent-tool") for n in instant.threads)


def test_a_hundred_hung_sync_tools_do_not_keep_other_keys_tools_from_running(
    release: threading.Event,
) -> None:
    """The probe's case: 100 inputs whose tool hangs (timeout 2 s) and 5 of other keys with
    a fast tool, on 2 tool threads. Extra threads start for the calls that would wait behind
    hung ones: the fast calls run before any hung call times out, and succeed."""
    hung_keys = [f"hung-{i}" for i in range(100)]
    fast_keys = [f"fast-{i}" for i in range(5)]
    timed_out_before_fast: list[bool] = []
    timeouts_seen = threading.Event()

    def hang(ticket: str) -> str:
        """Blocks its thread until released.

        Args:
            ticket: Id.
        """
        release.wait()
        return "late"

    def instant(ticket: str) -> str:
        """Answers at once.

        Args:
            ticket: Id.
        """
        timed_out_before_fast.append(timeouts_seen.is_set())
        return f"ticket {ticket}: open"

    def reply(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
        result = messages[-1].tool_result_block
        if result is not None:
            if result.is_error:
                timeouts_seen.set()
            return "done"
        text = messages[0].text
        tool = "instant" if text.startswith("fast") else "hang"
        return ChatMessage.assistant(tool_calls=[call(f"c-{text}", tool, ticket=text)])

    model = FunctionChatModelConnection(function=reply)
    inputs = [{"key": key, "value": key} for key in [*hung_keys, *fast_keys]]
    outputs, runner = run_bounded(
        chat_agent(model, tools={"hang": hang, "instant": instant}),
        inputs,
        {
            "tool-call.timeout-s": 2,
            "num-async-threads": 2,
            "tool-call.max-abandoned-threads": 128,
        },
        release,
    )

    assert all(isinstance(o.value, ChatResponseEvent) and o.value.ok for o in outputs)
    results = {
        block.call_id: block
        for recorded in model.calls
        for message in recorded.messages
        if (block := message.tool_result_block) is not None
    }
    for key in fast_keys:
        assert not results[f"c-{key}"].is_error and results[f"c-{key}"].text.endswith("open")
    assert timed_out_before_fast == [False] * 5  # each ran before any hung call timed out
    for key in hung_keys:
        assert results[f"c-{key}"].text == "tool 'hang' timed out after 2 s"
    snapshot = runner.metrics.snapshot()  # type: ignore[attr-defined]
    assert snapshot["tool"]["hang"]["threadsWrittenOff"] == 100


def test_a_call_no_thread_can_take_is_not_run_nor_reported_as_timed_out(
    release: threading.Event,
) -> None:
    """One tool thread, none may be written off: the first hung call to time out keeps the
    thread, and the other key's call (waiting for it, or made after) is not run: its result
    says so, not that it timed out."""
    runs: list[str] = []

    def hang(ticket: str) -> str:
        """Blocks its thread until released.

        Args:
            ticket: Id.
        """
        runs.append(ticket)
        release.wait()
        return "late"

    def reply(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
        if messages[-1].tool_result_block is not None:
            return "done"
        text = messages[0].text
        return ChatMessage.assistant(tool_calls=[call(f"c-{text}", "hang", ticket=text)])

    model = FunctionChatModelConnection(function=reply)
    outputs, _ = run_bounded(
        chat_agent(model, tools={"hang": hang}),
        [{"key": "a", "value": "a"}, {"key": "b", "value": "b"}],
        {"tool-call.timeout-s": 0.1, "num-async-threads": 1, "tool-call.max-abandoned-threads": 0},
        release,
    )

    assert all(isinstance(o.value, ChatResponseEvent) and o.value.ok for o in outputs)
    texts = sorted(
        block.text
        for recorded in model.calls
        for message in recorded.messages
        if (block := message.tool_result_block) is not None
    )
    assert len(runs) == 1  # the other call never ran
    assert texts == [
        "tool 'hang' timed out after 0.1 s",
        "tool 'hang' was not run: no free tool thread: each of the 1 holds a call past its "
        "timeout, and 0 more run hung or blocked calls, the most "
        "tool-call.max-abandoned-threads allows",
    ]
