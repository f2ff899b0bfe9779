"""What upstream's agents do that runs here as there: `UUID` keys, a sync
`durable_execute` in an `async` action."""

from __future__ import annotations

import uuid

import pytest

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext, action
from flink_agents.runtime.flink.environment import keyed_input
from flink_agents.runtime.keys import agent_key
from tests.runtime.chat_agents import run_local

KEY = uuid.UUID(int=5)


class EchoKey(Agent):
    @action(InputEvent)
    @staticmethod
    def echo(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=[ctx.key, event.input]))


def test_uuid_keys_are_the_keys_of_their_text_on_every_runner() -> None:
    outputs, _ = run_local(EchoKey(), [{"key": KEY, "value": 1}, {"key": str(KEY), "value": 2}])
    assert [(o.key, o.value) for o in outputs] == [
        (str(KEY), [str(KEY), 1]),
        (str(KEY), [str(KEY), 2]),
    ]
    assert keyed_input(lambda r: r["id"], {"id": KEY})[0] == f'"{KEY}"'
    assert agent_key(("a", KEY)) == ("a", str(KEY))


def test_a_sync_durable_execute_in_an_async_action_runs_as_upstreams(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def add_one(n: int) -> int:
        calls.append(n)
        return n + 1

    class Counter(Agent):
        @action(InputEvent)
        @staticmethod
        async def count_with_a_sync_durable_call(event: Event, ctx: RunnerContext) -> None:
            ctx.send_event(OutputEvent(output=ctx.durable_execute(add_one, event.input)))

    with caplog.at_level("WARNING"):
        outputs, _ = run_local(Counter(), [{"key": "a", "value": 1}, {"key": "b", "value": 5}])
    assert sorted(o.value for o in outputs) == [2, 6] and sorted(calls) == [1, 5]
    warned = [r.getMessage() for r in caplog.records if "runs on the event loop" in r.getMessage()]
    assert len(warned) == 1 and "durable_execute_async" in warned[0]
