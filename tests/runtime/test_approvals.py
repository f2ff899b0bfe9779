"""Human approval of tool calls on the local runner: parked runs, decisions, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from flink_agents.api import (
    AgentsExecutionEnvironment,
    ApprovalRequest,
    ChatMessage,
    ChatResponseEvent,
    ScriptedChatModelConnection,
    Tool,
    ToolApproval,
    ToolCallBlock,
    tool,
)
from flink_agents.runtime import approvals
from flink_agents.runtime.errors import ApprovalNotPendingError
from flink_agents.runtime.local_runner import AgentOutput, LocalRunner
from tests.runtime.chat_agents import chat_agent

SKIP = {"input-failure.policy": "skip"}


def call(call_id: str, name: str, **arguments: Any) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name=name, input=arguments)


class Refunds:
    """A refund tool that needs approval, a lookup that does not; both count calls."""

    def __init__(self) -> None:
        self.refunded: list[tuple[str, float]] = []
        self.looked_up: list[str] = []

        @tool(requires_approval=True)
        def refund(order: str, amount: float) -> str:
            """Refund an order.

            Args:
                order: Order id.
                amount: Amount.
            """
            self.refunded.append((order, amount))
            return f"refunded {amount} on {order}"

        def lookup(order: str) -> str:
            """Look an order up.

            Args:
                order: Order id.
            """
            self.looked_up.append(order)
            return f"order {order}: delivered"

        self.refund = refund
        self.lookup = lookup

    def tools(self) -> dict[str, Any]:
        return {"refund": self.refund, "lookup": self.lookup}


def run(runner: LocalRunner, inputs: Sequence[Mapping[str, Any]]) -> list[AgentOutput]:
    return asyncio.run(asyncio.wait_for(runner.run(inputs), 10))


def texts_sent(model: ScriptedChatModelConnection, turn: int) -> list[tuple[bool, str]]:
    """(is_error, text) of the tool results the model was sent in call ``turn``."""
    blocks = [m.tool_result_block for m in model.calls[turn].messages]
    return [(b.is_error, b.text) for b in blocks if b is not None]


def refund_model(*calls: ToolCallBlock, answer: str = "done") -> ScriptedChatModelConnection:
    return ScriptedChatModelConnection(
        replies=[ChatMessage.assistant(tool_calls=list(calls)), answer]
    )


def test_an_approved_call_runs_once_after_the_approval_and_the_loop_goes_on() -> None:
    shop = Refunds()
    model = refund_model(call("c1", "refund", order="o-1", amount=120.0))
    runner = LocalRunner(chat_agent(model, tools=shop.tools()))
    try:
        assert run(runner, [{"key": "alice", "value": "refund o-1"}]) == []
        assert shop.refunded == []  # not called: parked
        [request] = runner.approval_requests_sent
        assert isinstance(request, ApprovalRequest)
        assert (request.key, request.call_id, request.tool) == ("alice", "c1", "refund")
        assert request.arguments == {"order": "o-1", "amount": 120.0}
        assert runner.approval_requests() == [request]
        outputs = run(
            runner, [{"key": "alice", "value": ToolApproval(call_id="c1", approved=True)}]
        )
        assert shop.refunded == [("o-1", 120.0)]
        [output] = outputs
        assert isinstance(output.value, ChatResponseEvent) and output.value.ok
        assert (output.key, output.seq) == ("alice", 0)
        assert texts_sent(model, 1) == [(False, "refunded 120.0 on o-1")]
        assert runner.approval_requests() == []
        assert len(runner.approval_requests_sent) == 1  # asked once
        assert runner.errors == []
        assert runner.metrics.get_counter("approvalRequests").get_count() == 1
        assert runner.metrics.get_histogram("approvalLatencyMs").get_count() == 1
    finally:
        runner.close()


def test_a_denied_call_never_runs_and_the_model_reads_who_declined_and_why() -> None:
    shop = Refunds()
    model = refund_model(call("c1", "refund", order="o-1", amount=900.0), answer="declined")
    runner = LocalRunner(chat_agent(model, tools=shop.tools()))
    try:
        run(runner, [{"key": "k", "value": "refund"}])
        decision = ToolApproval(call_id="c1", approved=False, reason="over the limit")
        [output] = run(runner, [{"key": "k", "value": decision}])
        assert shop.refunded == []
        assert output.value.ok
        [(is_error, text)] = texts_sent(model, 1)
        assert is_error
        assert (
            text == "tool 'refund' was not run: a person declined this call; reason: over the limit"
        )
    finally:
        runner.close()


def test_calls_of_one_turn_are_asked_together_and_run_when_all_are_decided() -> None:
    shop = Refunds()
    model = refund_model(
        call("c1", "refund", order="o-1", amount=10.0),
        call("c2", "lookup", order="o-2"),
        call("c3", "refund", order="o-3", amount=30.0),
    )
    runner = LocalRunner(chat_agent(model, tools=shop.tools()))
    try:
        run(runner, [{"key": "k", "value": "go"}])
        requests = runner.approval_requests_sent
        assert [r.call_id for r in requests] == ["c1", "c3"]
        assert len({r.request_id for r in requests}) == 1
        assert run(runner, [{"key": "k", "value": ToolApproval(call_id="c3", approved=True)}]) == []
        assert shop.refunded == [] and shop.looked_up == []  # c1 still undecided: none runs
        assert [r.call_id for r in runner.approval_requests()] == ["c1"]
        decision = ToolApproval(call_id="c1", approved=False, reason="no")
        [output] = run(runner, [{"key": "k", "value": decision}])
        assert output.value.ok
        assert shop.refunded == [("o-3", 30.0)] and shop.looked_up == ["o-2"]
        results = texts_sent(model, 1)
        assert [r[0] for r in results] == [True, False, False]
    finally:
        runner.close()


def test_a_parked_key_holds_its_later_inputs_and_other_keys_go_on() -> None:
    shop = Refunds()
    replies: list[Any] = [
        ChatMessage.assistant(tool_calls=[call("c1", "refund", order="o", amount=1.0)]),
        "b answered",
        "a second answered",
        "a first answered",
    ]
    model = ScriptedChatModelConnection(replies=replies)
    runner = LocalRunner(chat_agent(model, tools=shop.tools()))
    try:
        inputs = [
            {"key": "a", "value": "first"},
            {"key": "a", "value": "second"},
            {"key": "b", "value": "other"},
        ]
        outputs = run(runner, inputs)
        assert [(o.key, o.value.response.text) for o in outputs] == [("b", "b answered")]
        # The decision goes ahead of the waiting input: the parked run first, then "second".
        model.replies[2], model.replies[3] = model.replies[3], model.replies[2]
        outputs = run(runner, [{"key": "a", "value": ToolApproval(call_id="c1", approved=True)}])
        assert [(o.key, o.seq, o.value.response.text) for o in outputs] == [
            ("a", 0, "a first answered"),
            ("a", 1, "a second answered"),
        ]
    finally:
        runner.close()


@pytest.mark.parametrize(
    ("key", "call_id", "why"),
    [
        ("k", "nope", "no such call"),
        ("other", "c1", "no run of this key waits"),
    ],
)
def test_an_approval_for_no_pending_call_is_a_failure_record_under_skip(
    key: str, call_id: str, why: str
) -> None:
    shop = Refunds()
    model = refund_model(call("c1", "refund", order="o", amount=5.0))
    runner = LocalRunner(chat_agent(model, tools=shop.tools()), SKIP)
    try:
        run(runner, [{"key": "k", "value": "go"}])
        decision = ToolApproval(call_id=call_id, approved=True)
        named = ToolApproval(call_id="c1", approved=True, key="other")  # sent under "k"
        assert run(runner, [{"key": key, "value": decision}, {"key": "k", "value": named}]) == []
        record, wrong_key = runner.errors
        assert "it names another key" in wrong_key["message"]
        assert record["error_type"] == "ApprovalNotPendingError"
        assert why in record["message"] and record["key"] == key
        assert shop.refunded == []  # never resumed the run
        assert [r.call_id for r in runner.approval_requests()] == ["c1"]
    finally:
        runner.close()


def test_a_second_decision_of_a_call_is_a_failure_record_and_a_clear_error_under_fail() -> None:
    shop = Refunds()
    model = refund_model(call("c1", "refund", order="o", amount=5.0))
    runner = LocalRunner(chat_agent(model, tools=shop.tools()), SKIP)
    try:
        run(runner, [{"key": "k", "value": "go"}])
        decision = ToolApproval(call_id="c1", approved=True)
        assert len(run(runner, [{"key": "k", "value": decision}])) == 1
        assert run(runner, [{"key": "k", "value": decision}]) == []
        [record] = runner.errors
        assert record["error_type"] == "ApprovalNotPendingError"
        assert shop.refunded == [("o", 5.0)]
    finally:
        runner.close()

    model = refund_model(call("c1", "refund", order="o", amount=5.0))
    runner = LocalRunner(chat_agent(model, tools=Refunds().tools()))
    try:
        run(runner, [{"key": "k", "value": "go"}])
        with pytest.raises(ApprovalNotPendingError, match=r"'c9'.*no such call"):
            run(runner, [{"key": "k", "value": ToolApproval(call_id="c9", approved=True)}])
    finally:
        runner.close()


@pytest.fixture
def jumping_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """`approvals.clock_ms` reads the list's last value (tests move it)."""
    now = [1_000_000]
    monkeypatch.setattr(approvals, "clock_ms", lambda: now[-1])
    yield now


def test_past_the_approval_timeout_the_call_counts_as_denied(jumping_clock: list[int]) -> None:
    shop = Refunds()
    model = refund_model(call("c1", "refund", order="o", amount=5.0), answer="timed out")
    config = {"tool-call.approval-timeout-s": 60}
    runner = LocalRunner(chat_agent(model, tools=shop.tools()), config)
    try:
        decided = asyncio.Event()

        async def inputs() -> Any:
            yield {"key": "k", "value": "go"}
            await decided.wait()  # the stream goes on: its timer may fire

        async def main() -> list[AgentOutput]:
            outputs: list[AgentOutput] = []
            stream = runner.stream(inputs())
            reader = asyncio.ensure_future(anext(stream))
            while not runner.approval_requests_sent:  # parked: the timer waits for 60 s
                await asyncio.sleep(0)
            jumping_clock.append(jumping_clock[-1] + 59_000)
            await asyncio.sleep(0.01)
            assert not reader.done()  # looked again at 59 s: not yet
            jumping_clock.append(jumping_clock[-1] + 2_000)
            outputs.append(await reader)
            decided.set()
            outputs += [o async for o in stream]
            return outputs

        # The loop's timer is set for the seconds left by the clock: cut its long delays,
        # so it looks at the test's clock soon (and again, if it is not time yet).
        [output] = asyncio.run(_with_fast_timers(main()))
        assert shop.refunded == []
        [(is_error, text)] = texts_sent(model, 1)
        assert is_error and text == (
            "tool 'refund' was not run: no decision came within tool-call.approval-timeout-s"
        )
        assert runner.metrics.get_counter("approvalTimeouts").get_count() == 1
        assert output.value.ok
    finally:
        runner.close()


def test_a_deadline_that_passed_between_two_streams_applies_when_the_next_starts(
    jumping_clock: list[int],
) -> None:
    shop = Refunds()
    model = refund_model(call("c1", "refund", order="o", amount=5.0), answer="timed out")
    runner = LocalRunner(
        chat_agent(model, tools=shop.tools()), {"tool-call.approval-timeout-s": 60}
    )
    try:
        assert run(runner, [{"key": "k", "value": "go"}]) == []  # the stream does not wait
        jumping_clock.append(jumping_clock[-1] + 61_000)
        [output] = run(runner, [])
        assert output.value.ok and shop.refunded == []
        assert runner.approval_requests() == []
    finally:
        runner.close()


async def _with_fast_timers(main: Any) -> Any:
    """Run ``main`` with the loop's ``call_later`` delays of 0.5 s and more cut to 5 ms:
    the runner's approval timer then looks at the test's clock soon, and again after it
    if the clock says it is not time yet."""
    loop = asyncio.get_running_loop()
    original = loop.call_later

    def call_later(delay: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        return original(0.005 if delay >= 0.5 else delay, callback, *args, **kwargs)

    loop.call_later = call_later  # type: ignore[method-assign]
    try:
        return await main
    finally:
        loop.call_later = original  # type: ignore[method-assign]


def test_arguments_are_redacted_and_named_tools_need_approval_too() -> None:
    shop = Refunds()
    image = "data:image/png;base64," + "A" * 400
    model = refund_model(call("c1", "lookup", order=image))
    config = {"tool-call.approval-required-tools": "lookup"}
    runner = LocalRunner(chat_agent(model, tools=shop.tools()), config)
    try:
        run(runner, [{"key": "k", "value": "go"}])
        [request] = runner.approval_requests_sent
        assert request.tool == "lookup"
        assert "AAAA" not in request.arguments["order"]
        assert shop.looked_up == []
        run(runner, [{"key": "k", "value": ToolApproval(call_id="c1", approved=True)}])
        assert shop.looked_up == [image]  # the tool gets the model's arguments
    finally:
        runner.close()


def test_tool_from_callable_takes_requires_approval() -> None:
    def plain(x: int) -> int:
        """Plain.

        Args:
            x: X.
        """
        return x

    assert Tool.from_callable(plain, requires_approval=True).requires_approval
    assert not Tool.from_callable(plain).requires_approval


def test_the_environment_lists_the_requests_and_a_decision_in_the_same_input_resumes() -> None:
    shop = Refunds()
    model = refund_model(call("c1", "refund", order="o", amount=5.0))
    env = AgentsExecutionEnvironment.get_execution_environment()
    decided = asyncio.Event()

    async def inputs() -> Any:
        yield {"key": "k", "value": "go"}
        await decided.wait()
        yield {"key": "k", "value": ToolApproval(call_id="c1", approved=True)}

    builder = env.from_iterable(inputs()).apply(chat_agent(model, tools=shop.tools()))

    async def main() -> None:
        task = asyncio.ensure_future(env.execute_async())
        while not builder.runner.approval_requests():
            await asyncio.sleep(0)
        decided.set()
        await asyncio.wait_for(task, 10)

    asyncio.run(main())
    assert [r.call_id for r in builder.to_approval_request_list()] == ["c1"]
    assert len(builder.to_list()) == 1 and shop.refunded == [("o", 5.0)]


def test_a_decision_right_as_the_run_parks_starts_one_driver() -> None:
    """A decision taken the moment the parked run is published (before the task that
    parked it has returned: on Flink the operator thread can be that fast) resumes the run
    once: one task drives it, its tool runs once, it finishes once."""
    from flink_agents.api import AgentConfiguration
    from flink_agents.runtime.agent_engine import AgentEngine
    from flink_agents.runtime.scheduler import KeyQueue, RunScheduler

    shop = Refunds()
    model = refund_model(call("c1", "refund", order="o", amount=5.0))
    engine = AgentEngine(chat_agent(model, tools=shop.tools()), AgentConfiguration())
    decided: list[bool] = []

    def on_progress(queue: KeyQueue) -> None:
        if queue.parked and not decided:
            decided.append(
                scheduler.decide(queue, queue.key, ToolApproval(call_id="c1", approved=True))
            )

    scheduler = RunScheduler(engine, on_progress=on_progress)

    async def main() -> list[list[Any]]:
        queue = scheduler.create('"k"', "k")
        scheduler.submit(queue, "go")
        while queue.busy or queue.parked or not queue.finished:
            await asyncio.sleep(0.001)
        return scheduler.take(queue).finished

    try:
        finished = asyncio.run(asyncio.wait_for(main(), 10))
    finally:
        engine.close()
    assert decided == [True]
    assert shop.refunded == [("o", 5.0)]
    [outputs] = finished
    assert [type(o).__name__ for o in outputs] == ["ApprovalRequest", "ChatResponseEvent"]
