"""`EventType` constants and what an action may listen to (`@action`, `Agent.add_action`)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from flink_agents.api.decorators import ACTION_MARK, action
from flink_agents.api.events import (
    AgentRunBeginEvent,
    ChatRequestEvent,
    ChatResponseEvent,
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
    Event,
    InputEvent,
    LongTermGetEvent,
    LongTermSearchEvent,
    LongTermUpdateEvent,
    OutputEvent,
    SensoryReadEvent,
    SensoryWriteEvent,
    ShortTermReadEvent,
    ShortTermWriteEvent,
    ToolRequestEvent,
    ToolResponseEvent,
)
from flink_agents.api.events.event_type import (
    EventType,
    TriggerExpression,
    classify_trigger,
    classify_triggers,
    event_type_name,
    trigger_event_types,
)
from flink_agents.api.runner_context import RunnerContext


class OrderChecked(Event):
    EVENT_TYPE: ClassVar[str] = "order.checked"


UPSTREAM_VALUES = {
    "InputEvent": "_input_event",
    "OutputEvent": "_output_event",
    "ChatRequestEvent": "_chat_request_event",
    "ChatResponseEvent": "_chat_response_event",
    "ToolRequestEvent": "_tool_request_event",
    "ToolResponseEvent": "_tool_response_event",
    "ContextRetrievalRequestEvent": "_context_retrieval_request_event",
    "ContextRetrievalResponseEvent": "_context_retrieval_response_event",
    "ShortTermWriteEvent": "_short_term_write_event",
    "ShortTermReadEvent": "_short_term_read_event",
    "SensoryWriteEvent": "_sensory_write_event",
    "SensoryReadEvent": "_sensory_read_event",
    "LongTermUpdateEvent": "_long_term_update_event",
    "LongTermGetEvent": "_long_term_get_event",
    "LongTermSearchEvent": "_long_term_search_event",
    "AgentRunBeginEvent": "_agent_run_begin_event",
}


def test_event_type_has_upstreams_members_and_values() -> None:
    members = {k: v for k, v in vars(EventType).items() if not k.startswith("_")}
    assert members == UPSTREAM_VALUES
    assert all(type(v) is str for v in members.values())  # plain strings, as upstream


def test_event_type_constants_are_the_classes_types() -> None:
    classes = [
        InputEvent,
        OutputEvent,
        ChatRequestEvent,
        ChatResponseEvent,
        ToolRequestEvent,
        ToolResponseEvent,
        ContextRetrievalRequestEvent,
        ContextRetrievalResponseEvent,
        ShortTermWriteEvent,
        ShortTermReadEvent,
        SensoryWriteEvent,
        SensoryReadEvent,
        LongTermUpdateEvent,
        LongTermGetEvent,
        LongTermSearchEvent,
        AgentRunBeginEvent,
    ]
    for cls in classes:
        assert getattr(EventType, cls.__name__) == cls.EVENT_TYPE


@pytest.mark.parametrize(
    ("trigger", "expected"),
    [
        (EventType.InputEvent, "_input_event"),
        (InputEvent, "_input_event"),
        ("_input_event", "_input_event"),
        (OrderChecked, "order.checked"),
        ("order.checked", "order.checked"),
        ("order-created", "order-created"),
        ("my_event", "my_event"),
        ("'order:created'", "order:created"),  # quoted, as upstream
        ('"true"', "true"),
        ("'EventType.custom'", "EventType.custom"),
        ("  order.checked\t", "order.checked"),  # trimmed, as upstream
        (" 'order-created.v1' ", "order-created.v1"),
    ],
)
def test_a_trigger_is_an_event_type(trigger: type[Event] | str, expected: str) -> None:
    assert event_type_name(trigger) == expected


@pytest.mark.parametrize(
    ("trigger", "message"),
    [
        ("", "cannot be empty"),
        ("  ", "cannot be empty"),
        ("type == EventType.InputEvent && score > 5", "is a condition expression"),
        ("order:created", "is a condition expression"),
        ("'has space'", "is a condition expression"),
        ("''", "is a condition expression"),
        ("EventType.InputEvent", "pass the constant EventType.InputEvent"),
        ("EventType.Nope", "is a condition expression, not an event type$"),
    ],
)
def test_what_is_no_event_type_name_is_refused_by_event_type_name(
    trigger: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        event_type_name(trigger)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("trigger", "expected"),
    [
        ("in", "in"),  # a keyword of CEL, but no literal: a name, as upstream
        ("a-b.c_d", "a-b.c_d"),
        ("\t'x y'", TriggerExpression("'x y'")),  # whitespace inside: a string literal
        ("true", TriggerExpression("true")),
        (" null ", TriggerExpression("null")),
        ("'null'", "null"),
        ("EventType.ToolRequestEvent", TriggerExpression("EventType.ToolRequestEvent")),
        ("score > 5", TriggerExpression("score > 5")),
        ('"a\\"b"', TriggerExpression('"a\\"b"')),  # an escape: no quoted name
        ("9lives", TriggerExpression("9lives")),
    ],
)
def test_classify_trigger_tells_names_from_expressions(
    trigger: str, expected: str | TriggerExpression
) -> None:
    assert classify_trigger(trigger) == expected


def test_classify_triggers_splits_and_dedupes() -> None:
    assert classify_triggers([InputEvent, " x > 1", "b", "x > 1", "'b'"]) == (
        ("_input_event", "b"),
        ("x > 1",),
    )


@pytest.mark.parametrize("trigger", [42, None, str, object()])
def test_a_trigger_of_another_kind_is_a_type_error(trigger: object) -> None:
    with pytest.raises(TypeError, match=r"^action trigger condition must be a string, got "):
        event_type_name(trigger)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="trigger condition must be a string"):  # upstream's
        action(trigger)  # type: ignore[arg-type]


def test_long_term_memory_events_can_be_listened_to() -> None:
    assert event_type_name(EventType.LongTermUpdateEvent) == LongTermUpdateEvent.EVENT_TYPE
    assert event_type_name(LongTermSearchEvent) == LongTermSearchEvent.EVENT_TYPE


def test_trigger_event_types_keeps_order_drops_repeats_and_names_the_owner() -> None:
    assert trigger_event_types([InputEvent, "b", EventType.InputEvent, "'b'"]) == [
        "_input_event",
        "b",
    ]
    assert trigger_event_types(InputEvent) == ["_input_event"]
    assert trigger_event_types("x") == ["x"]
    with pytest.raises(ValueError, match=r"^action 'start': an action needs at least one"):
        trigger_event_types([], owner="action 'start'")
    with pytest.raises(
        TypeError, match=r"^action 'start': action trigger condition must be a string, got 3$"
    ):
        trigger_event_types([3], owner="action 'start'")  # type: ignore[list-item]


def test_action_takes_event_type_members_strings_and_classes() -> None:
    @action(EventType.InputEvent, ChatResponseEvent, "'order:created'")
    def handle(event: Event, ctx: RunnerContext) -> None: ...

    # kept as upstream's strings (a class as its type), so the plan reads them again alike
    assert getattr(handle, ACTION_MARK) == [
        "_input_event",
        "_chat_response_event",
        "'order:created'",
    ]
    assert handle._trigger_conditions == (  # type: ignore[attr-defined]
        "_input_event",
        "_chat_response_event",
        "'order:created'",
    )


def test_no_trigger_or_a_blank_one_is_refused_when_the_plan_is_built() -> None:
    from flink_agents.api.agents.agent import Agent
    from flink_agents.plan import AgentPlan

    for triggers, why in (((), "an action needs at least one"), ((" ",), "cannot be empty")):

        class Silent(Agent):
            @action(*triggers)  # as upstream: accepted when declared
            @staticmethod
            def handle(event: Event, ctx: RunnerContext) -> None: ...

        with pytest.raises(ValueError, match=rf"^action 'handle': .*{why}"):
            AgentPlan.from_agent(Silent())


def test_action_refuses_what_cannot_run_here_when_declared() -> None:
    with pytest.raises(TypeError, match="must be an api-layer Function descriptor, got str"):
        action(EventType.InputEvent, target="com.example.Handlers#handle")


def test_a_decorated_quoted_name_reaches_the_plan() -> None:
    from flink_agents.api.agents.agent import Agent
    from flink_agents.plan import AgentPlan

    class Orders(Agent):
        @action("'order:created'", " order.paid ", OrderChecked)
        @staticmethod
        def handle(event: Event, ctx: RunnerContext) -> None: ...

    plan = AgentPlan.from_agent(Orders())
    assert plan.actions["handle"].event_types == ("order:created", "order.paid", "order.checked")
