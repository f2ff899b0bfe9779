"""Approvals on the keyed operator's logic (`KeyedRuns` over fake keyed state and timers):
a parked run in keyed state across a restore, its requests emitted once, decisions as
inputs, timeouts on processing-time timers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from flink_agents.api import (
    AgentConfiguration,
    ApprovalRequest,
    ChatMessage,
    ChatResponseEvent,
    FunctionChatModelConnection,
    ScriptedChatModelConnection,
    ToolApproval,
    ToolCallBlock,
)
from flink_agents.runtime import approvals
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.errors import ApprovalNotPendingError
from flink_agents.runtime.input_failure import FailedInput
from flink_agents.runtime.keys import encode_key
from tests.runtime.chat_agents import chat_agent
from tests.runtime.flink.fake_flink import FakeBackend, FakeSubtask, ManualClock
from tests.runtime.test_approvals import Refunds


def refund_call(call_id: str) -> ChatMessage:
    return ChatMessage.assistant(
        tool_calls=[ToolCallBlock(id=call_id, name="refund", input={"order": "o", "amount": 1.0})]
    )


def engine(shop: Refunds, replies: list[Any], **config: Any) -> AgentEngine:
    model = ScriptedChatModelConnection(replies=replies)
    return AgentEngine(chat_agent(model, tools=shop.tools()), AgentConfiguration(config))


def answers(emitted: list[Any]) -> list[str]:
    return [o.response.text for o in emitted if isinstance(o, ChatResponseEvent)]


def requests(emitted: list[Any]) -> list[ApprovalRequest]:
    return [o for o in emitted if isinstance(o, ApprovalRequest)]


def test_a_parked_run_survives_a_restore_its_request_out_once_its_tool_run_once() -> None:
    shop = Refunds()
    sub = FakeSubtask(engine(shop, [refund_call("c1"), "b done"]))
    try:
        sub.input("a", "refund please")
        sub.input("a", "and then this")  # waits behind the parked run
        sub.input("b", "other key")
        sub.fire_polls_until(lambda: requests(sub.emitted) and answers(sub.emitted))
        sub.run_until_idle()
        assert sub.scheduler.stats.runs_parked == 1  # the operator's parkedRuns
        snapshot = sub.backend.checkpoint()
        before = list(sub.emitted)
    finally:
        sub.close()  # the task dies with the run parked
    assert answers(before) == ["b done"]
    [request] = requests(before)
    assert (request.key, request.call_id) == ("a", "c1")
    assert shop.refunded == []

    # Restored (a new engine, a model that answers the rest): the decision resumes the run.
    restored = FakeSubtask(engine(shop, ["a first done", "a second done"]), snapshot)
    try:
        restored.input("a", ToolApproval(call_id="c1", approved=True))
        restored.fire_polls_until(lambda: len(answers(restored.emitted)) == 2)
        restored.run_until_idle()
        assert restored.scheduler.stats.runs_parked == 0
        # A second decision of the same call is a clear error (policy fail).
        with pytest.raises(ApprovalNotPendingError, match="no run of this key waits"):
            restored.input("a", ToolApproval(call_id="c1", approved=True))
    finally:
        restored.close()
    assert answers(restored.emitted) == ["a first done", "a second done"]
    assert requests(restored.emitted) == []  # emitted once, before the restore
    assert shop.refunded == [("o", 1.0)]
    assert restored.backend.slices["a"].inputs == {}  # both inputs answered and gone


def test_a_decision_written_before_a_restore_is_not_lost() -> None:
    shop = Refunds()
    sub = FakeSubtask(engine(shop, [refund_call("c1")]))
    try:
        sub.input("a", "refund")
        sub.fire_polls_until(lambda: bool(requests(sub.emitted)))
        sub.run_until_idle()
        before = sub.backend.checkpoint()
    finally:
        sub.close()

    async def hangs(messages: Any, tools: Any) -> str:
        await asyncio.Event().wait()  # the task dies before the model answers
        return "never"

    hung = FunctionChatModelConnection(function=hangs)
    restored = FakeSubtask(
        AgentEngine(chat_agent(hung, tools=shop.tools()), AgentConfiguration()), before
    )
    try:
        restored.input("a", ToolApproval(call_id="c1", approved=False, reason="no"))
        snapshot = restored.backend.checkpoint()
    finally:
        restored.close()
    # Denied in a callback whose state a checkpoint took; the task died before the run
    # finished: the restored run has the decision.
    again = FakeSubtask(engine(shop, ["denied, sorry"]), snapshot)
    try:
        again.run_until_idle()  # the poll timer in state finds the decided run and resumes it
        again.fire_polls_until(lambda: bool(answers(again.emitted)))
    finally:
        again.close()
    assert answers(again.emitted) == ["denied, sorry"]
    assert shop.refunded == []


def test_an_approval_of_another_keys_call_is_a_failure_record_under_skip() -> None:
    shop = Refunds()
    sub = FakeSubtask(engine(shop, [refund_call("c1")], **{"input-failure.policy": "skip"}))
    try:
        sub.input("a", "refund")
        sub.fire_polls_until(lambda: bool(requests(sub.emitted)))
        sub.input("b", ToolApproval(call_id="c1", approved=True))
        sub.input("a", ToolApproval(call_id="zz", approved=True))
    finally:
        sub.close()
    failures = [o.record for o in sub.emitted if isinstance(o, FailedInput)]
    assert [(f["key"], f["error_type"]) for f in failures] == [
        ("b", "ApprovalNotPendingError"),
        ("a", "ApprovalNotPendingError"),
    ]
    assert shop.refunded == []


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[ManualClock]:
    manual = ManualClock()
    monkeypatch.setattr(approvals, "clock_ms", manual.now)
    yield manual


def test_the_approval_timeout_is_a_processing_time_timer_that_survives_a_restore(
    clock: ManualClock,
) -> None:
    shop = Refunds()
    config = {"tool-call.approval-timeout-s": 3600}
    sub = FakeSubtask(engine(shop, [refund_call("c1")], **config), FakeBackend(clock=clock.now))
    try:
        sub.input("a", "refund")
        sub.fire_polls_until(lambda: bool(requests(sub.emitted)))
        assert (clock.ms + 3_600_000, "a") in sub.backend.polls  # the deadline's timer
        snapshot = sub.backend.checkpoint()
    finally:
        sub.close()
    restored = FakeSubtask(engine(shop, ["timed out"], **config), snapshot)
    try:
        clock.advance(3_599_000)
        restored.fire_due_polls()  # polls, not the deadline: nothing times out yet
        assert answers(restored.emitted) == [] and restored.backend.polls
        clock.advance(1_000)
        restored.fire_polls_until(lambda: bool(answers(restored.emitted)))
    finally:
        restored.close()
    assert answers(restored.emitted) == ["timed out"]
    assert shop.refunded == []


def test_the_end_of_input_names_a_key_whose_run_is_still_parked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    shop = Refunds()
    sub = FakeSubtask(engine(shop, [refund_call("c1"), "b done"]))
    try:
        sub.input("a", "refund")
        sub.input("b", "other")
        sub.fire_polls_until(lambda: bool(requests(sub.emitted)) and bool(answers(sub.emitted)))
        with caplog.at_level("WARNING", logger="flink_agents.runtime.flink.keyed_runs"):
            sub.end_of_input()  # returns: a parked run holds no drain
    finally:
        sub.close()
    assert answers(sub.emitted) == ["b done"]
    assert [r.getMessage() for r in caplog.records if "waits for approval" in r.getMessage()] == [
        f"key {encode_key('a')}: the input ended while its run waits for approval of a tool "
        "call; the run ends with the job (docs/approvals.md)"
    ]


def test_an_approved_call_replayed_after_a_restore_is_not_made_again(tmp_path: Any) -> None:
    """Approved and run, then the task dies before a checkpoint took any of it: the run
    restored parked gets the same decision again, and the durable call log answers the
    tool call instead of making it twice."""
    from flink_agents.runtime.durable.store_url import open_durable_call_log

    shop = Refunds()
    config = AgentConfiguration({"durable-execution.store": str(tmp_path / "calls.db")})

    def durable_engine(replies: list[Any]) -> AgentEngine:
        model = ScriptedChatModelConnection(replies=replies)
        agent = chat_agent(model, tools=shop.tools())
        return AgentEngine(agent, config, call_log=open_durable_call_log(config, agent=agent))

    sub = FakeSubtask(durable_engine([refund_call("c1"), "refunded"]))
    try:
        sub.input("a", "refund")
        sub.fire_polls_until(lambda: bool(requests(sub.emitted)))
        parked = sub.backend.checkpoint()  # the last checkpoint: the run parked
        sub.input("a", ToolApproval(call_id="c1", approved=True))
        sub.fire_polls_until(lambda: bool(answers(sub.emitted)))
    finally:
        sub.close()  # dies: what came after the checkpoint is replayed
    assert shop.refunded == [("o", 1.0)]

    restored = FakeSubtask(durable_engine(["refunded"]), parked)
    try:
        restored.input("a", ToolApproval(call_id="c1", approved=True))  # replayed by the source
        restored.fire_polls_until(lambda: bool(answers(restored.emitted)))
    finally:
        restored.close()
    assert answers(restored.emitted) == ["refunded"]
    assert shop.refunded == [("o", 1.0)]  # once
