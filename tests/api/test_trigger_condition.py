"""Condition expressions as triggers: checked when the plan is built, evaluated per event."""

from __future__ import annotations

import pickle
import sys
from typing import ClassVar

import cloudpickle
import pytest

pytest.importorskip("cel")  # the cel extra (Python 3.11+)
from pydantic import BaseModel

from flink_agents.api import Agent, Event, RunnerContext
from flink_agents.api.decorators import action
from flink_agents.api.errors import TriggerConditionError
from flink_agents.api.events.event import InputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.plan import AgentPlan
from flink_agents.plan.agent_plan import ActionSpec
from flink_agents.plan.trigger_condition import TriggerCondition


def noop(event: Event, ctx: RunnerContext) -> None: ...


def plan_of(**actions: list[str]) -> AgentPlan:
    agent = Agent()
    for name, triggers in actions.items():
        agent.add_action(name, triggers, noop)
    return AgentPlan.from_agent(agent)


class Failures:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Exception]] = []

    def __call__(self, spec: ActionSpec, condition: TriggerCondition, exc: Exception) -> None:
        self.seen.append((spec.name, condition.source, exc))


def matched(plan: AgentPlan, event: Event, failures: Failures | None = None) -> list[str]:
    return [s.name for s in plan.actions_for_event(event, failures or Failures())]


@pytest.mark.parametrize(
    ("expression", "category", "fragment"),
    [
        ("score >", "syntax", "score >"),
        ("has(1)", "syntax", "has()"),
        ("(ready)", "unsupported_construct", "standalone path"),
        ("( order . paid )", "unsupported_construct", "standalone path"),
        ("EventType.InputEvent", "unsupported_construct", "type == EventType.InputEvent"),
        ("items.exists(i, i > 3)", "unsupported_construct", "'exists'"),
        ("[1].map(v, v * 2) == [2]", "unsupported_construct", "'map'"),
        ("type == EventType.NoSuchEvent", "unknown_event_type", "EventType.NoSuchEvent"),
        ("shout(name)", "type_check", "'shout'"),
        ("name.lowerAscii() == 'a'", "type_check", "'lowerAscii'"),  # an extension, not core
        ("7", "type_check", "Boolean result, not int"),
        ("'order placed'", "type_check", "Boolean result, not str"),
        ("null", "type_check", "Boolean result"),
        ("attributes[field] == 1", "referenced_attributes", "whole 'attributes' map"),
        ("size(attributes) > 0", "referenced_attributes", "whole 'attributes' map"),
        ("attributes == {}", "referenced_attributes", "whole 'attributes' map"),
    ],
)
def test_an_expression_that_cannot_be_used_fails_the_plan(
    expression: str, category: str, fragment: str
) -> None:
    with pytest.raises(TriggerConditionError) as raised:
        plan_of(gate=[f"  {expression}  "])
    error = raised.value
    assert (error.action, error.source, error.category) == ("gate", expression, category)
    assert str(error).startswith(
        f"action 'gate': invalid trigger condition expression {expression!r}"
    )
    assert fragment in str(error)


def test_the_decorator_accepts_expressions_and_the_plan_checks_them() -> None:
    class Gated(Agent):
        @action("type == EventType.InputEvent &&")
        @staticmethod
        def gate(event: Event, ctx: RunnerContext) -> None: ...

    with pytest.raises(TriggerConditionError, match=r"^action 'gate': "):
        AgentPlan.from_agent(Gated())


@pytest.mark.parametrize(
    ("expression", "event", "expected"),
    [
        ("type == EventType.InputEvent", InputEvent(input="x"), True),
        ("type == EventType.OutputEvent", InputEvent(input="x"), False),
        ("type == 'order' && score > 5", Event(type="order", score=7), True),
        ("type == 'order' && score > 5", Event(type="order", score=5), False),
        ("attributes.score >= 5.5", Event(type="t", score=6), True),  # int against double
        (
            "attributes['www.example.com'].ip == '10.0.0.1'",
            Event(type="t", attributes={"www.example.com": {"ip": "10.0.0.1"}}),
            True,
        ),
        ("'vip' in attributes", Event(type="t", vip=None), True),
        ("'vip' in attributes", Event(type="t"), False),
        ("has(vip)", Event(type="t", vip=False), True),
        ("has(vip)", Event(type="t"), False),
        ("has(order.customer.tier)", Event(type="t", order={"customer": {"tier": "gold"}}), True),
        ("has(order.customer.tier)", Event(type="t", order={"customer": {}}), False),
        ("has(order.customer.tier)", Event(type="t"), False),  # no step: false, no error
        ("has(attributes.order.total)", Event(type="t", order={}), False),
        ("tags[1] == 'b' && size(tags) == 2", Event(type="t", tags=("a", "b")), True),
        ("type == 'order'", Event(type="order", attributes={"type": "spoofed"}), True),
        ("user.name.startsWith('al')", Event(type="t", user={"name": "alice"}), True),
        ("id == 'e-1'", Event(type="t", id="e-1"), True),
        ("true", Event(type="anything"), True),
        ("false", Event(type="anything"), False),
        # a string containing what looks like has(x) or attributes is left alone
        ("note == 'has(x) and attributes'", Event(type="t", note="has(x) and attributes"), True),
    ],
)
def test_conditions_match_events(expression: str, event: Event, expected: bool) -> None:
    failures = Failures()
    assert matched(plan_of(gate=[expression]), event, failures) == (["gate"] if expected else [])
    assert failures.seen == []


class Customer(BaseModel):
    tier: str


def test_a_model_attribute_is_read_as_its_json_form() -> None:
    event = Event(type="t", customer=Customer(tier="gold"))
    assert matched(plan_of(gate=["customer.tier == 'gold'"]), event) == ["gate"]


def test_entries_combine_with_or_and_type_matches_come_first_once() -> None:
    plan = plan_of(
        by_condition=["type == EventType.InputEvent"],
        both=["_input_event", "type == EventType.InputEvent", "score > 100"],
        by_name=[" '_input_event' "],
        either=["score > 100", "score < 0"],
    )
    event = InputEvent(input="x")
    event.attributes["score"] = -1
    assert matched(plan, event) == ["both", "by_name", "by_condition", "either"]
    assert plan.may_trigger("anything") and not plan_of(a=["x"]).may_trigger("y")


def test_a_condition_that_cannot_be_evaluated_is_false_and_reported() -> None:
    plan = plan_of(
        gate=["score > 5"], typed=["t"], words=["note + 1 == 2"], odd=["1 == 1 ? score : true"]
    )
    failures = Failures()
    assert matched(plan, Event(type="t", note="x"), failures) == ["typed"]
    assert [(name, source) for name, source, _ in failures.seen] == [
        ("gate", "score > 5"),  # no attribute score
        ("words", "note + 1 == 2"),  # string + int
        ("odd", "1 == 1 ? score : true"),  # not a Boolean (score missing first)
    ]
    failures = Failures()
    assert matched(plan, Event(type="u", score=9, note="x"), failures) == ["gate"]
    assert [type(e).__name__ for _, _, e in failures.seen] == ["TypeError", "TypeError"]
    assert "not a Boolean" in str(failures.seen[1][2])


def test_an_attribute_of_no_json_form_is_an_evaluation_failure() -> None:
    failures = Failures()
    event = Event(type="t")
    event.attributes["blob"] = object()  # an Event refuses it when made or assigned
    assert matched(plan_of(gate=["blob == 1"]), event, failures) == []
    assert "cannot be used in a condition" in str(failures.seen[0][2])


def test_a_handler_may_raise_instead() -> None:
    class Stop(Exception):
        pass

    def fail(spec: ActionSpec, condition: TriggerCondition, exc: Exception) -> None:
        raise Stop(condition.source) from exc

    with pytest.raises(Stop, match="score > 5"):
        plan_of(gate=["score > 5"]).actions_for_event(Event(type="t"), fail)


def test_a_plan_with_conditions_pickles_and_matches_the_same_where_unpickled() -> None:
    plan = plan_of(gate=["type == EventType.ToolRequestEvent || has(urgent)"])
    for copy in (
        pickle.loads(cloudpickle.dumps(plan)),
        pickle.loads(pickle.dumps(plan.actions["gate"].conditions[0])),
    ):
        condition = (
            copy if isinstance(copy, TriggerCondition) else copy.actions["gate"].conditions[0]
        )
        for event, expected in [
            (Event(type=EventType.ToolRequestEvent), True),
            (Event(type="t", urgent=1), True),
            (Event(type="t"), False),
        ]:
            assert condition.matches(event) is expected
            assert condition.matches(event) is expected  # pure: the same every time


class Scored(Event):
    EVENT_TYPE: ClassVar[str] = "scored"


def test_class_triggers_are_unchanged_next_to_conditions() -> None:
    plan = plan_of(by_class=[Scored], gate=["type == 'scored' && points > 1"])  # type: ignore[list-item]
    assert matched(plan, Scored(attributes={"points": 2})) == ["by_class", "gate"]
    assert matched(plan, Scored(attributes={"points": 1})) == ["by_class"]
    assert plan.actions_for("scored") == (plan.actions["by_class"],)


def test_without_the_cel_extra_an_expression_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cel", None)  # import cel raises ImportError
    with pytest.raises(ImportError, match=r"'gate'.*pyflink-agents\[cel\]"):
        plan_of(gate=["score > 5"])
    assert plan_of(by_name=["score"]).actions["by_name"].event_types == ("score",)
