"""The built-in chat and tool actions: the loop, its history, limits, errors and retries."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.api import (
    Agent,
    AgentConfiguration,
    AgentExecutionOptions,
    ChatMessage,
    ChatModelError,
    ChatResult,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    OutputEvent,
    Prompt,
    ResourceType,
    RunnerContext,
    ScriptedChatModelConnection,
    TextBlock,
    ToolCallBlock,
    ToolMetadata,
    ToolRequestEvent,
    ToolResponseEvent,
    ToolResultBlock,
    UnsupportedContentBlockError,
    Usage,
)
from flink_agents.runtime import builtin_actions
from flink_agents.runtime.builtin_actions import parse_structured_output, retry_delay
from flink_agents.runtime.durable import DurableCallLog, SqliteActionStateStore
from flink_agents.runtime.errors import ActionExecutionError, StructuredOutputError
from flink_agents.runtime.local_runner import AgentOutput, LocalRunner
from flink_agents.runtime.metrics import InMemoryMetricGroup
from tests.runtime.chat_agents import chat_agent, only_response, run_local


def call(call_id: str, name: str, **arguments: Any) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name=name, input=arguments)


def lookup(ticket: str) -> str:
    """Look a ticket up.

    Args:
        ticket: The ticket id.
    """
    return f"ticket {ticket}: open"


def priority(ticket: str) -> dict[str, Any]:
    """The ticket's priority.

    Args:
        ticket: The ticket id.
    """
    return {"ticket": ticket, "priority": 2}


class Triage(BaseModel):
    label: str
    priority: int


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Retry waits, recorded instead of slept."""
    recorded: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(builtin_actions, "_sleep", fake_sleep)
    return recorded


# ---------------------------------------------------------------------------- the loop


def test_tool_round_trip_history_holds_messages_only() -> None:
    first = ChatResult(
        message=ChatMessage.assistant(
            "Checking.",
            tool_calls=[call("c1", "lookup", ticket="T1"), call("c2", "priority", ticket="T1")],
        ),
        response_id="resp-1",
        usage=Usage(input_tokens=12, output_tokens=5),
        finish_reason="tool_calls",
        metadata={"raw_finish_reason": "tool_use"},
    )
    final = ChatResult(
        message=ChatMessage.assistant("T1 is open, priority 2."),
        response_id="resp-2",
        usage=Usage(input_tokens=30, output_tokens=8),
        finish_reason="stop",
    )
    model = ScriptedChatModelConnection(replies=[first, final])
    outputs, _ = run_local(
        chat_agent(model, tools={"lookup": lookup, "priority": priority}),
        [{"key": "k", "value": "What about T1?"}],
    )
    response = only_response(outputs)

    assert len(model.calls) == 2
    assert model.calls[0].messages == [ChatMessage.user("What about T1?")]
    assert [t.name for t in model.calls[0].tools] == ["lookup", "priority"]
    assert model.calls[0].params == {"model": "test-model"}
    # Second call: request messages, the assistant message, one tool message per call in
    # call order; no usage, ids or finish reasons anywhere in history.
    assert model.calls[1].messages == [
        ChatMessage.user("What about T1?"),
        first.message,
        ChatMessage.tool_result(
            ToolResultBlock(call_id="c1", content=[TextBlock(text="ticket T1: open")])
        ),
        ChatMessage.tool_result(
            ToolResultBlock(call_id="c2", content=[TextBlock(text='{"ticket":"T1","priority":2}')])
        ),
    ]
    assert all(m.metadata == {} for m in model.calls[1].messages)

    assert response.ok
    assert response.response == final.message
    assert response.result == final  # the last call's envelope
    assert response.structured_output is None


class ToolsInFlight:
    """Two async tools that record how many of their calls are in flight at once."""

    def __init__(self, wait_for_both: bool) -> None:
        self.in_flight = 0
        self.max_in_flight = 0
        self.log: list[str] = []
        self._both = asyncio.Event()
        self._wait_for_both = wait_for_both

    async def _call(self, name: str, ticket: str) -> str:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.log.append(f"start {name}")
        if self.in_flight == 2:
            self._both.set()
        try:
            if self._wait_for_both:
                # Answers once both calls are in flight: one after the other, it would not.
                await asyncio.wait_for(self._both.wait(), 10)
            else:
                for _ in range(3):  # gives another call, if one was started, time to start
                    await asyncio.sleep(0)
        finally:
            self.log.append(f"end {name}")
            self.in_flight -= 1
        return f"{name} {ticket}"

    def tools(self) -> dict[str, Any]:
        async def slow(ticket: str) -> str:
            """Slow lookup.

            Args:
                ticket: Id.
            """
            return await self._call("slow", ticket)

        async def fast(ticket: str) -> str:
            """Fast lookup.

            Args:
                ticket: Id.
            """
            return await self._call("fast", ticket)

        return {"slow": slow, "fast": fast}


def test_tool_messages_follow_call_order_and_calls_run_concurrently() -> None:
    def two_calls() -> ScriptedChatModelConnection:
        return ScriptedChatModelConnection(
            replies=[
                ChatMessage.assistant(
                    tool_calls=[call("a", "slow", ticket="1"), call("b", "fast", ticket="2")]
                ),
                "done",
            ]
        )

    model = two_calls()
    parallel = ToolsInFlight(wait_for_both=True)
    run_local(chat_agent(model, tools=parallel.tools()), [{"key": "k", "value": "x"}])
    assert parallel.max_in_flight == 2
    results = [m.tool_result_block for m in model.calls[1].messages[2:]]
    assert [(r.call_id, r.text) for r in results if r] == [("a", "slow 1"), ("b", "fast 2")]

    model = two_calls()
    serial = ToolsInFlight(wait_for_both=False)
    run_local(
        chat_agent(model, tools=serial.tools()),
        [{"key": "k", "value": "x"}],
        {"tool-call.parallel": False},
    )
    assert serial.max_in_flight == 1
    assert serial.log == ["start slow", "end slow", "start fast", "end fast"]
    results = [m.tool_result_block for m in model.calls[1].messages[2:]]
    assert [(r.call_id, r.text) for r in results if r] == [("a", "slow 1"), ("b", "fast 2")]


def test_missing_unavailable_and_raising_tools_become_error_results() -> None:
    def broken(ticket: str) -> str:
        """Always fails.

        Args:
            ticket: Id.
        """
        raise RuntimeError(f"database down for {ticket}")

    model = ScriptedChatModelConnection(
        replies=[
            ChatMessage.assistant(
                tool_calls=[
                    call("c1", "nonexistent", ticket="1"),
                    call("c2", "broken", ticket="2"),
                    call("c3", "secret", ticket="3"),
                    call("c4", "lookup", wrong_arg="4"),
                    call("c5", "lookup", ticket="5"),
                ]
            ),
            "Sorry, some tools failed.",
        ]
    )
    agent = chat_agent(model, tools={"broken": broken, "lookup": lookup})
    agent.add_resource("secret", ResourceType.TOOL, lookup)  # exists, but not the model's tool
    outputs, _ = run_local(agent, [{"key": "k", "value": "go"}])
    assert only_response(outputs).ok  # the job goes on

    results = [m.tool_result_block for m in model.calls[1].messages[2:]]
    assert [r.call_id for r in results if r] == ["c1", "c2", "c3", "c4", "c5"]
    errors = {r.call_id: r.text for r in results if r and r.is_error}
    assert set(errors) == {"c1", "c2", "c3", "c4"}
    assert "'nonexistent' does not exist" in errors["c1"]
    assert "RuntimeError: database down for 2" in errors["c2"]
    assert "'secret' is not available" in errors["c3"]
    assert "ValidationError" in errors["c4"]
    assert results[4] is not None and results[4].text == "ticket 5: open"


def test_model_call_limit_ends_with_an_error_response() -> None:
    counter = {"n": 0}

    def always_tools(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage:
        counter["n"] += 1
        return ChatMessage.assistant(tool_calls=[call(f"c{counter['n']}", "lookup", ticket="x")])

    model = FunctionChatModelConnection(function=always_tools)
    tool_runs: list[str] = []

    def counted_lookup(ticket: str) -> str:
        """Lookup.

        Args:
            ticket: Id.
        """
        tool_runs.append(ticket)
        return "open"

    outputs, _ = run_local(
        chat_agent(model, tools={"lookup": counted_lookup}),
        [{"key": "k", "value": "loop forever"}, {"key": "k", "value": "again"}],
        {"chat.max-model-calls": 3},
    )
    assert len(outputs) == 2  # the job went on to the next input
    response = outputs[0].value
    assert response.error is not None and response.error.kind == "max_model_calls"
    assert "3 model calls" in response.error.message
    assert response.response is not None and response.response.tool_calls  # the last message
    assert len(model.calls) == 6
    assert len(tool_runs) == 4  # the third call's tools never ran


def test_tool_calls_past_the_per_turn_limit_are_not_run_and_get_an_error_result() -> None:
    runs: list[str] = []

    def counted_lookup(ticket: str) -> str:
        """Lookup.

        Args:
            ticket: Id.
        """
        runs.append(ticket)
        return f"ticket {ticket}: open"

    model = ScriptedChatModelConnection(
        replies=[
            ChatMessage.assistant(
                tool_calls=[call(f"c{i}", "lookup", ticket=str(i)) for i in range(5)]
            ),
            "Three looked up, two refused.",
        ]
    )
    outputs, runner = run_local(
        chat_agent(model, tools={"lookup": counted_lookup}),
        [{"key": "k", "value": "go"}],
        {"tool-call.max-per-turn": 3},
    )
    response = only_response(outputs)
    assert response.ok and response.response is not None  # the loop went on
    assert response.response.text == "Three looked up, two refused."
    assert sorted(runs) == ["0", "1", "2"]  # the calls past the limit never ran
    results = [m.tool_result_block for m in model.calls[1].messages[2:]]
    assert [r.call_id for r in results if r] == ["c0", "c1", "c2", "c3", "c4"]  # one per call
    assert [r.text for r in results[:3] if r] == [f"ticket {i}: open" for i in range(3)]
    for refused in results[3:]:
        assert refused is not None and refused.is_error
        assert refused.text == (
            "tool 'lookup' not run: 5 tool calls in one turn, more than the 3 allowed "
            "(tool-call.max-per-turn); make fewer calls per turn"
        )
    snapshot = runner.metrics.snapshot()  # type: ignore[attr-defined]
    assert snapshot["tool"]["lookup"]["calls"] == 3  # only the calls that ran


def test_the_per_turn_limit_defaults_to_64_and_must_be_positive() -> None:
    assert AgentConfiguration().get(AgentExecutionOptions.TOOL_CALL_MAX_PER_TURN) == 64
    for bad in ("0", -1, "many"):
        with pytest.raises(ValueError, match=r"tool-call\.max-per-turn"):
            AgentConfiguration({"tool-call.max-per-turn": bad})


def test_structured_output_is_parsed_and_history_keeps_the_text() -> None:
    text = 'Here you go:\n```json\n{"label": "billing", "priority": 1}\n```'
    model = ScriptedChatModelConnection(replies=[text])
    outputs, _ = run_local(chat_agent(model, output_schema=Triage), [{"key": "k", "value": "x"}])
    response = only_response(outputs)
    assert response.structured_output == Triage(label="billing", priority=1)
    assert response.response is not None and response.response.text == text


def test_unparsable_structured_output_is_an_error_or_fails_the_run() -> None:
    model = ScriptedChatModelConnection(replies=['{"label": "billing"}'])
    outputs, _ = run_local(chat_agent(model, output_schema=Triage), [{"key": "k", "value": "x"}])
    response = only_response(outputs)
    assert response.error is not None and response.error.kind == "structured_output"
    assert "Triage" in response.error.message
    assert response.response is not None and response.response.text == '{"label": "billing"}'

    model = ScriptedChatModelConnection(replies=["no json"])
    with pytest.raises(ActionExecutionError) as raised:
        run_local(
            chat_agent(model, output_schema=Triage),
            [{"key": "k", "value": "x"}],
            {"error-handling-strategy": "fail"},
        )
    assert isinstance(raised.value.__cause__, StructuredOutputError)


def test_parse_structured_output_candidates() -> None:
    assert parse_structured_output('{"label": "a", "priority": 3}', Triage) == Triage(
        label="a", priority=3
    )
    parsed = parse_structured_output('Sure! {"label": "a", "priority": 3} Bye.', Triage)
    assert parsed == Triage(label="a", priority=3)
    with pytest.raises(StructuredOutputError):
        parse_structured_output("", Triage)


def test_setup_prompt_comes_before_the_request_messages() -> None:
    model = ScriptedChatModelConnection(replies=["ok"])
    prompt = Prompt.from_text("You handle {team} tickets.")
    run_local(
        chat_agent(model, prompt=prompt, prompt_args={"team": "billing"}),
        [{"key": "k", "value": "hello"}],
    )
    assert model.calls[0].messages == [
        ChatMessage.system("You handle billing tickets."),
        ChatMessage.user("hello"),
    ]


# ---------------------------------------------------------------------------- errors, retries


def retryable(retry_after: float | None = None) -> ChatModelError:
    return ChatModelError(
        "rate limited", status_code=429, retryable=True, retry_after=retry_after, kind="rate_limit"
    )


def test_retryable_errors_are_retried_with_backoff_and_retry_after(sleeps: list[float]) -> None:
    model = ScriptedChatModelConnection(replies=[retryable(), retryable(retry_after=2.5), "ok"])
    outputs, runner = run_local(
        chat_agent(model),
        [{"key": "k", "value": "x"}],
        {"retry-wait-interval": 0.1, "max-retries": 3},
    )
    response = only_response(outputs)
    assert response.ok and response.response is not None and response.response.text == "ok"
    assert len(model.calls) == 3
    assert len(sleeps) == 2
    assert 0.05 <= sleeps[0] <= 0.1  # base * 2**0, jittered down to half at most
    assert sleeps[1] >= 2.5  # the server's retry-after is honoured
    metrics = runner.metrics
    assert isinstance(metrics, InMemoryMetricGroup)
    model_metrics = metrics.snapshot()["chatModel"]["test-model"]
    assert model_metrics["retries"] == 2
    assert model_metrics["errors"] == 2
    assert model_metrics["errorsByKind"] == {"rate_limit": 2}
    assert model_metrics["calls"] == 1


def test_retry_delay_grows_exponentially_within_bounds() -> None:
    for attempt in range(6):
        delay = retry_delay(attempt, 1.0, 10.0)
        expected = min(10.0, 2.0**attempt)
        assert expected / 2 <= delay <= expected
    assert retry_delay(0, 1.0, 10.0, retry_after=7.0) == 7.0  # longer than the backoff
    assert retry_delay(0, 1.0, 10.0, retry_after=30.0) == 10.0  # capped


def test_retries_exhausted_emit_an_error_response(sleeps: list[float]) -> None:
    model = ScriptedChatModelConnection(replies=[retryable(), retryable(), retryable()])
    outputs, _ = run_local(chat_agent(model), [{"key": "k", "value": "x"}], {"max-retries": 2})
    response = only_response(outputs)
    assert response.error is not None
    assert response.error.kind == "rate_limit"
    assert response.error.retryable is True
    assert response.error.status_code == 429
    assert response.error.attempts == 3
    assert response.response is None
    assert len(sleeps) == 2


def test_non_retryable_errors_are_not_retried(sleeps: list[float]) -> None:
    bad = ChatModelError("bad request", status_code=400, retryable=False, kind="bad_request")
    model = ScriptedChatModelConnection(replies=[bad])
    outputs, _ = run_local(chat_agent(model), [{"key": "k", "value": "x"}])
    response = only_response(outputs)
    assert response.error is not None and response.error.kind == "bad_request"
    assert response.error.attempts == 1
    assert sleeps == []


def test_unsupported_content_is_a_non_retryable_error(sleeps: list[float]) -> None:
    unsupported = UnsupportedContentBlockError("audio", "not accepted", provider="anthropic")
    model = ScriptedChatModelConnection(replies=[unsupported])
    outputs, _ = run_local(chat_agent(model), [{"key": "k", "value": "x"}])
    error = only_response(outputs).error
    assert (
        error is not None and error.kind == "unsupported_content" and error.provider == "anthropic"
    )
    assert sleeps == []


def test_ignore_strategy_does_not_retry(sleeps: list[float]) -> None:
    model = ScriptedChatModelConnection(replies=[retryable()])
    outputs, _ = run_local(
        chat_agent(model), [{"key": "k", "value": "x"}], {"error-handling-strategy": "ignore"}
    )
    error = only_response(outputs).error
    assert error is not None and error.kind == "rate_limit" and error.attempts == 1
    assert sleeps == []


def test_fail_strategy_fails_the_run() -> None:
    model = ScriptedChatModelConnection(replies=[retryable(retry_after=1.0)])
    with pytest.raises(ActionExecutionError) as raised:
        run_local(
            chat_agent(model), [{"key": "k", "value": "x"}], {"error-handling-strategy": "fail"}
        )
    cause = raised.value.__cause__
    assert isinstance(cause, ChatModelError)
    assert cause.retryable and cause.status_code == 429 and cause.retry_after == 1.0


def test_a_retry_wait_does_not_block_other_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    others_answered = asyncio.Event()
    answered: list[str] = []
    waits: list[float] = []

    async def wait_until_the_others_are_answered(seconds: float) -> None:
        waits.append(seconds)
        # The retry wait ends once every other key has its answer: a wait that held
        # them up would never end (and fail the run).
        await asyncio.wait_for(others_answered.wait(), 10)

    monkeypatch.setattr(builtin_actions, "_sleep", wait_until_the_others_are_answered)

    def reply(messages: list[ChatMessage], tools: list[ToolMetadata]) -> str:
        text = messages[0].text
        if text == "slow" and not waits:
            raise retryable(retry_after=0.4)
        if text == "fast":
            answered.append(text)
            if len(answered) == 5:
                others_answered.set()
        return f"answer to {text}"

    model = FunctionChatModelConnection(function=reply)
    outputs, _ = run_local(
        chat_agent(model),
        [{"key": "a", "value": "slow"}] + [{"key": f"b{i}", "value": "fast"} for i in range(5)],
    )
    # "a" waited (at least retry-after), and the other keys got their answers meanwhile.
    assert len(waits) == 1 and waits[0] >= 0.4
    assert sorted(o.key for o in outputs) == ["a", "b0", "b1", "b2", "b3", "b4"]
    assert only_response([o for o in outputs if o.key == "a"]).response == ChatMessage.assistant(
        "answer to slow"
    )


# ---------------------------------------------------------------------------- metrics


def test_usage_metrics_count_known_values_and_skip_unknown_ones() -> None:
    replies = [
        ChatResult(
            message=ChatMessage.assistant("a"),
            usage=Usage(input_tokens=10, output_tokens=0, reasoning_tokens=4),
        ),
        ChatResult(
            message=ChatMessage.assistant("b"), usage=Usage(input_tokens=5, cache_read_tokens=3)
        ),
    ]
    model = ScriptedChatModelConnection(replies=replies)
    _, runner = run_local(
        chat_agent(model), [{"key": "k", "value": "1"}, {"key": "k", "value": "2"}]
    )
    metrics = runner.metrics
    assert isinstance(metrics, InMemoryMetricGroup)
    m = metrics.snapshot()["chatModel"]["test-model"]
    assert m["calls"] == 2
    assert m["inputTokens"] == 15
    assert m["outputTokens"] == 0  # a reported zero is counted
    assert m["outputTokensUnknown"] == 1
    assert m["reasoningTokens"] == 4
    assert m["reasoningTokensUnknown"] == 1
    assert m["cacheReadTokens"] == 3
    assert m["cacheWriteTokensUnknown"] == 2
    assert "cacheWriteTokens" not in m  # never reported: never counted as zero
    assert m["callLatencyMs"]["count"] == 2


# ---------------------------------------------------------------------------- tool events


def test_tool_requests_from_user_actions_run_any_agent_tool() -> None:
    async def start(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ToolRequestEvent(tool_calls=[call("u1", "lookup", ticket="9")]))

    async def finish(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ToolResponseEvent)
        ctx.send_event(
            OutputEvent(
                output=[r.model_dump(include={"call_id", "success"}) for r in event.responses]
            )
        )

    agent = (
        Agent()
        .add_action("start", InputEvent, start)
        .add_action("finish", ToolResponseEvent, finish)
        .add_resource("lookup", ResourceType.TOOL, lookup)
    )
    outputs, _ = run_local(agent, [{"key": "k", "value": None}])
    assert [o.value for o in outputs] == [[{"call_id": "u1", "success": True}]]


# ---------------------------------------------------------------------------- durable calls


def _run_once(agent: Agent, log: DurableCallLog, value: Any) -> list[AgentOutput]:
    """One input on a fresh local runner (so key "k" starts at seq 0) over ``log``."""
    runner = LocalRunner(agent, call_log=log)
    outputs = asyncio.run(runner.run([{"key": "k", "value": value}]))
    runner.close()
    return outputs


def test_a_durable_model_call_answers_only_the_question_it_was_asked(tmp_path: Any) -> None:
    asked: list[str] = []

    def model(messages: list[ChatMessage], tools: list[Any]) -> str:
        asked.append(messages[-1].text)
        return f"answer to {messages[-1].text}"

    agent = chat_agent(FunctionChatModelConnection(function=model))
    log = DurableCallLog(SqliteActionStateStore(tmp_path / "calls.db"))

    def ask(question: str) -> str:
        response = only_response(_run_once(agent, log, question)).response
        assert response is not None
        return response.text

    # Two runs at the same key and seq (and so the same request id and turn) over one store.
    assert ask("What is the weather?") == "answer to What is the weather?"
    assert ask("Cancel my order #42") == "answer to Cancel my order #42"
    assert asked == ["What is the weather?", "Cancel my order #42"]
    # The same request replays its recorded answer.
    assert ask("Cancel my order #42") == "answer to Cancel my order #42"
    assert len(asked) == 2
    log.close()


def test_a_durable_tool_call_is_identified_by_its_name_and_arguments(tmp_path: Any) -> None:
    looked_up: list[str] = []

    def lookup_counted(ticket: str) -> str:
        """Look a ticket up.

        Args:
            ticket: The ticket id.
        """
        looked_up.append(f"lookup {ticket}")
        return f"ticket {ticket}: open"

    def priority_counted(ticket: str) -> str:
        """The ticket's priority.

        Args:
            ticket: The ticket id.
        """
        looked_up.append(f"priority {ticket}")
        return f"ticket {ticket}: 2"

    async def start(event: Event, ctx: RunnerContext) -> None:
        name, ticket = event.attributes["input"]
        # The same call id every time: only the name or the arguments differ.
        ctx.send_event(ToolRequestEvent(tool_calls=[call("c1", name, ticket=ticket)]))

    async def finish(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ToolResponseEvent)
        ctx.send_event(OutputEvent(output=[r.to_result_block().text for r in event.responses]))

    agent = (
        Agent()
        .add_action("start", InputEvent, start)
        .add_action("finish", ToolResponseEvent, finish)
        .add_resource("lookup", ResourceType.TOOL, lookup_counted)
        .add_resource("priority", ResourceType.TOOL, priority_counted)
    )
    log = DurableCallLog(SqliteActionStateStore(tmp_path / "calls.db"))

    def answer(name: str, ticket: str) -> Any:
        outputs = _run_once(agent, log, [name, ticket])
        assert len(outputs) == 1
        return outputs[0].value

    assert answer("lookup", "7") == ["ticket 7: open"]
    assert answer("lookup", "8") == ["ticket 8: open"]  # other arguments: runs
    assert answer("priority", "8") == ["ticket 8: 2"]  # another tool: runs
    assert looked_up == ["lookup 7", "lookup 8", "priority 8"]
    assert answer("priority", "8") == ["ticket 8: 2"]  # the same call: replayed
    assert len(looked_up) == 3
    log.close()
