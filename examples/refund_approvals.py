"""Refunds over a limit wait for a person: tool approval on the local runner or on Flink.

    python examples/refund_approvals.py            # local runner
    python examples/refund_approvals.py --flink    # a PyFlink job, decisions from a 2nd source

Customers ask for refunds (keyed by customer). The model refunds small amounts with
``issue_refund``; amounts over `LIMIT_EUR` go through ``issue_large_refund``, declared
``@tool(requires_approval=True)``: the call is not made, the customer's run parks in keyed
state and an `ApprovalRequest` goes out. A reviewer (here `review`, a rule standing in for
a person) answers with a `ToolApproval`, sent back as an input of the same key: approved,
the refund is made (once) and the model tells the customer; declined, the model reads the
reviewer's reason and says so. Other customers are never held up by a parked one.

On Flink the decisions arrive on a second source (a directory a `FileSource` watches, where
the reviewer's side drops one JSON line per decision), unioned with the refund requests
before the agent; the approval requests leave through ``to_approval_request_datastream()``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from flink_agents.api import (
    Agent,
    ApprovalRequest,
    BaseChatModelSetup,
    ChatMessage,
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    MessageRole,
    OutputEvent,
    ResourceDescriptor,
    RunnerContext,
    ToolApproval,
    ToolCallBlock,
    ToolMetadata,
    action,
    chat_model_connection,
    chat_model_setup,
    tool,
)

LIMIT_EUR = 100.0
"""Refunds up to this amount need nobody's approval."""
REVIEWER_LIMIT_EUR = 500.0
"""What the reviewer approves at most (the rule standing in for a person)."""

REQUESTS = [
    {"key": "cust-1", "value": "Order 1001 arrived broken, please refund 30 EUR."},
    {"key": "cust-2", "value": "Please refund 250 EUR for order 2002, it never came."},
    {"key": "cust-3", "value": "I want 900 EUR back for order 3003."},
    {"key": "cust-2", "value": "And refund 20 EUR of shipping on order 2002."},
]


class RefundAgent(Agent):
    """Asks the model what to do with each refund request; outputs its reply."""

    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        request = event.attributes["input"]
        if isinstance(request, dict):  # a record from a stream: {"key": ..., "value": ...}
            request = request["value"]
        ctx.send_event(
            ChatRequestEvent(
                model="refund_model",
                messages=[
                    ChatMessage.system(
                        f"You handle refund requests. Use issue_refund up to {LIMIT_EUR:g} "
                        "EUR and issue_large_refund above it."
                    ),
                    ChatMessage.user(str(request)),
                ],
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def reply(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ChatResponseEvent)
        text = event.response.text if event.response is not None else ""
        ctx.send_event(OutputEvent(output={"customer": str(ctx.key), "reply": text}))

    @tool
    @staticmethod
    def issue_refund(order_id: str, amount_eur: float) -> str:
        """Refund a small amount at once.

        Args:
            order_id: The order number.
            amount_eur: The amount, in euros (at most the limit).
        """
        if amount_eur > LIMIT_EUR:
            return f"refused: {amount_eur:g} EUR is over {LIMIT_EUR:g}; use issue_large_refund"
        return f"refunded {amount_eur:g} EUR on order {order_id}"

    @tool(requires_approval=True)
    @staticmethod
    def issue_large_refund(order_id: str, amount_eur: float) -> str:
        """Refund an amount over the limit (a person approves each call first).

        Args:
            order_id: The order number.
            amount_eur: The amount, in euros.
        """
        return f"refunded {amount_eur:g} EUR on order {order_id} (approved)"

    @chat_model_connection
    @staticmethod
    def offline() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=FunctionChatModelConnection, function=offline_model)

    @chat_model_setup
    @staticmethod
    def refund_model() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=BaseChatModelSetup,
            connection="offline",
            tools=["issue_refund", "issue_large_refund"],
        )


def offline_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    """A rule-based stand-in for a model: picks the refund tool, then reports its result."""
    results = [m.tool_result_block for m in messages if m.tool_result_block is not None]
    if results:
        result = results[-1]
        if result.is_error:
            return f"Sorry, we could not refund this: {result.text}"
        return f"Done: {result.text}."
    request = next(m.text for m in reversed(messages) if m.role is MessageRole.USER)
    amount = float(re.search(r"(\d+) EUR", request).group(1))  # type: ignore[union-attr]
    order = re.search(r"order (\d+)", request, re.IGNORECASE).group(1)  # type: ignore[union-attr]
    name = "issue_refund" if amount <= LIMIT_EUR else "issue_large_refund"
    call = ToolCallBlock(
        id=f"call-{order}-{int(amount)}", name=name, input={"order_id": order, "amount_eur": amount}
    )
    return ChatMessage.assistant(tool_calls=[call])


def review(request: ApprovalRequest) -> ToolApproval:
    """The reviewer's decision on one request (a person, in a real deployment)."""
    amount = float(request.arguments["amount_eur"])
    if amount <= REVIEWER_LIMIT_EUR:
        return ToolApproval(call_id=request.call_id, approved=True, key=request.key)
    reason = f"{amount:g} EUR is more than a reviewer may approve; call the customer"
    return ToolApproval(call_id=request.call_id, approved=False, reason=reason, key=request.key)


def run_locally() -> list[dict[str, Any]]:
    """On the local runner: run the requests, review what waits, send the decisions."""
    from flink_agents.runtime.local_runner import LocalRunner

    async def main() -> list[dict[str, Any]]:
        runner = LocalRunner(RefundAgent())
        try:
            outputs = await runner.run(REQUESTS)  # small refunds done; large ones parked
            decisions = [{"key": r.key, "value": review(r)} for r in runner.approval_requests()]
            outputs += await runner.run(decisions)  # the parked runs go on
            return [o.value for o in outputs]
        finally:
            runner.close()

    return asyncio.run(main())


def _decision_line(approval: ToolApproval) -> str:
    return approval.model_dump_json()


def _approval_of(line: str) -> ToolApproval:
    return ToolApproval.model_validate_json(line)


def _same(record: Any) -> Any:
    return record


def _key_of(record: Any) -> Any:
    """One key selector for both streams: a decision names its key."""
    return record.key if isinstance(record, ToolApproval) else record["key"]


def run_on_flink() -> list[dict[str, Any]]:
    """As a PyFlink job: requests from a collection, decisions from a watched directory;
    this client plays the reviewer (it reads the approval requests the job sends and
    drops its decisions into the directory)."""
    from pyflink.common import Duration, Types, WatermarkStrategy
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    decisions_dir = Path(tempfile.mkdtemp(prefix="refund-decisions-"))
    env = create_stream_execution_environment()
    env.set_parallelism(1)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    requests = env.from_collection(REQUESTS).map(_same, output_type=Types.PICKLED_BYTE_ARRAY())
    decision_files = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(decisions_dir)
    ).monitor_continuously(Duration.of_millis(100))
    decisions = env.from_source(
        decision_files.build(), WatermarkStrategy.no_watermarks(), "decisions"
    ).map(_approval_of, output_type=Types.PICKLED_BYTE_ARRAY())
    applied = agents_env.from_datastream(requests.union(decisions), key_selector=_key_of).apply(
        RefundAgent()
    )
    outputs = applied.to_datastream().union(applied.to_approval_request_datastream())
    replies: list[dict[str, Any]] = []
    # The decisions source never ends: leaving the `with` block cancels the job.
    with outputs.execute_and_collect("refund-approvals") as results:
        for item in results:
            if isinstance(item, ApprovalRequest):
                name = f"{uuid.uuid4().hex}.json"
                staged = decisions_dir / f".{name}"  # hidden until complete
                staged.write_text(_decision_line(review(item)) + "\n")
                staged.rename(decisions_dir / name)
                continue
            replies.append(item)
            if len(replies) == len(REQUESTS):
                break
    return replies


def main() -> None:
    replies = run_on_flink() if "--flink" in sys.argv else run_locally()
    for reply in sorted(replies, key=lambda r: r["customer"]):
        print(f"{reply['customer']}: {json.dumps(reply['reply'])}")


if __name__ == "__main__":
    main()
