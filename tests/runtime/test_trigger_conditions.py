"""Condition expressions on the local runner: routing, and what a failing one does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("cel")  # the cel extra (Python 3.11+)

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext
from flink_agents.api.decorators import action
from flink_agents.runtime.errors import ActionExecutionError, TriggerConditionFailedError
from flink_agents.runtime.local_runner import AgentOutput, LocalRunner


class Scoring(Agent):
    @action(InputEvent)
    @staticmethod
    def score(event: Event, ctx: RunnerContext) -> None:
        value = event.attributes["input"]
        ctx.send_event(Event(type="scored", attributes=value))

    @action("type == 'scored' && points > 5", "type == 'scored' && vip == true")
    @staticmethod
    def high(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=f"high {event.attributes.get('points')}"))

    @action("type == 'scored' && points <= 5")
    @staticmethod
    def low(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=f"low {event.attributes['points']}"))


def run(inputs: list[Any], config: dict[str, Any] | None = None) -> list[AgentOutput]:
    return asyncio.run(LocalRunner(Scoring(), config).run(inputs))


def test_conditions_route_events_on_the_local_runner() -> None:
    outputs = run(
        [
            {"key": "a", "value": {"points": 9}},
            {"key": "b", "value": {"points": 2}},
            {"key": "c", "value": {"points": 1, "vip": True}},
        ]
    )
    assert sorted(o.value for o in outputs) == ["high 1", "high 9", "low 1", "low 2"]


def test_a_condition_that_fails_is_skipped_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    inputs = [{"key": k, "value": {"vip": True}} for k in "abc"]  # no points
    with caplog.at_level("WARNING"):
        outputs = run(inputs)
    # high's first entry and low fail (no points); high's second entry matches
    assert [o.value for o in outputs] == ["high None"] * 3
    warned = [r.getMessage() for r in caplog.records if "could not be evaluated" in r.getMessage()]
    assert len(warned) == 2  # once for each failing expression, not per event
    assert all("WARN_AND_SKIP" in w for w in warned)


def test_a_condition_that_fails_fails_the_run_under_fail() -> None:
    with pytest.raises(ActionExecutionError) as raised:
        run(
            [{"key": "a", "value": {"vip": "yes"}}],
            {"action.trigger-condition.evaluate-failure-strategy": "FAIL"},
        )
    error = raised.value
    assert isinstance(error, TriggerConditionFailedError)
    assert error.action == "high" and error.source == "type == 'scored' && points > 5"
    assert str(error).startswith(
        "trigger condition \"type == 'scored' && points > 5\": RuntimeError: Undefined variable"
    )
    assert str(error).endswith("(action 'high' on a scored event, key 'a', seq 0)")
