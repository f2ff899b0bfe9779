"""Upstream's API tests that match messages and forms (its `api/tests/test_decorators.py`,
`test_memory_event.py`, `test_event.py`), as written there."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from pyflink.common import Row

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action, tool
from flink_agents.api.errors import ResourceUnavailableError
from flink_agents.api.events.event import Event, InputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.api.events.memory_event import MemoryEvent, ShortTermWriteEvent
from flink_agents.api.function import JavaFunction, PythonFunction
from flink_agents.api.runner_context import RunnerContext
from flink_agents.plan.agent_plan import AgentPlan


def test_action_decorator_with_cross_language_target() -> None:
    target = JavaFunction.for_action("com.example.Handlers", "handle")

    @action(EventType.InputEvent, target=target)
    def stub(event: Event, ctx: RunnerContext) -> None:
        raise NotImplementedError("cross-language stub")

    assert stub._trigger_conditions == (InputEvent.EVENT_TYPE,)  # pyright: ignore[reportFunctionMemberAccess]
    assert stub._target is target  # pyright: ignore[reportFunctionMemberAccess]


def test_action_decorator_rejects_non_function_target() -> None:
    with pytest.raises(TypeError, match="api-layer Function descriptor"):
        action(EventType.InputEvent, target="not a function")


@pytest.mark.parametrize(
    ("bad", "word"),
    [
        (JavaFunction(qualname="", method_name="handle", parameter_types=[]), "qualname"),
        (JavaFunction(qualname="com.example.X", method_name="", parameter_types=[]), "method_name"),
        (PythonFunction(module="", qualname="handle"), "module"),
        (PythonFunction(module="pkg.mod", qualname=""), "qualname"),
    ],
)
def test_action_decorator_rejects_targets_with_empty_names(bad: Any, word: str) -> None:
    with pytest.raises(ValueError, match=word):

        @action(EventType.InputEvent, target=bad)
        def my_named_stub(event: Event, ctx: RunnerContext) -> None:
            pass

    with pytest.raises(ValueError, match="my_named_stub"):

        @action(EventType.InputEvent, target=bad)
        def my_named_stub(event: Event, ctx: RunnerContext) -> None:
            pass


def handled_elsewhere(event: Event, ctx: RunnerContext) -> None:
    """The body a PythonFunction target names."""


def test_a_python_target_is_the_actions_body_and_a_java_one_fails_the_plan() -> None:
    class Python(Agent):
        @action(InputEvent, target=PythonFunction(module=__name__, qualname="handled_elsewhere"))
        @staticmethod
        def stub(event: Event, ctx: RunnerContext) -> None:
            raise NotImplementedError

    plan = AgentPlan.from_agent(Python())
    assert plan.actions_for(InputEvent.EVENT_TYPE)[0].func is handled_elsewhere

    class Java(Agent):
        @action(InputEvent, target=JavaFunction.for_action("com.example.Handlers", "handle"))
        @staticmethod
        def stub(event: Event, ctx: RunnerContext) -> None:
            raise NotImplementedError

    with pytest.raises(ResourceUnavailableError, match=r"com\.example\.Handlers\.handle"):
        AgentPlan.from_agent(Java())


@pytest.mark.parametrize("spec", ["tenant.id", 3])
def test_tool_decorator_rejects_unsupported_injected_arg_specs(spec: Any) -> None:
    with pytest.raises(TypeError, match="Unsupported injected arg spec"):

        @tool(injected_args={"tenant_id": spec})
        def query_order(order_id: str, tenant_id: str) -> str:
            return f"{tenant_id}:{order_id}"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_memory_values_are_rejected(value: float) -> None:
    with pytest.raises(ValueError, match="JSON serializable"):
        ShortTermWriteEvent(key="k", value={"bad": value})


def test_from_event_rejects_non_memory_type() -> None:
    generic = Event(type="_input_event", attributes={"key": "k", "value": {}})
    with pytest.raises(ValueError, match="Not a memory event type"):
        MemoryEvent.from_event(generic)


def test_event_json_serialization_with_row() -> None:
    row_data = {"a": 1, "b": "test", "c": [1, 2, 3]}
    event = InputEvent(input={"row_data": Row(row_data), "nested": {"inner": Row(x=42)}})
    parsed = json.loads(event.model_dump_json())
    assert parsed["attributes"]["input"]["row_data"] == {"type": "Row", "values": [row_data]}
    assert parsed["attributes"]["input"]["nested"]["inner"] == {
        "type": "Row",
        "values": [42],
        "fields": ["x"],
    }

    def custom_fallback(obj: Any) -> dict[str, Any]:
        return {"custom_type": "CustomRow", "data": obj._values}

    custom = json.loads(event.model_dump_json(fallback=custom_fallback))
    assert custom["attributes"]["input"]["row_data"]["custom_type"] == "CustomRow"
    assert Event.from_json(event.to_json()).attributes["input"]["nested"]["inner"] == Row(x=42)


def test_event_ids_are_uuids_given_as_uuids_or_their_text() -> None:
    given = uuid.uuid4()
    source = uuid.uuid4()
    event = Event(type="x", id=given, upstream_event_id=str(source))
    assert (event.id, event.upstream_event_id) == (given, source)
    assert isinstance(event.upstream_event_id, uuid.UUID)
