"""`Agent.add_action` and `agent.actions` as upstream: ``(trigger_conditions, func, config)``
with the function as a `PythonFunction`; triggers checked when the plan is built."""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle
import pytest

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext
from flink_agents.api.errors import ResourceUnavailableError
from flink_agents.api.events.event_type import EventType
from flink_agents.api.function import JavaFunction, PythonFunction
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.local_runner import LocalExecutionEnvironment


def echo(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=event.input))  # type: ignore[attr-defined]


class Handlers:
    @staticmethod
    def shout(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=str(event.input).upper()))  # type: ignore[attr-defined]


def test_a_function_is_kept_as_a_python_function() -> None:
    agent = Agent().add_action(name="act", trigger_conditions=[InputEvent.EVENT_TYPE], func=echo)
    trigger_conditions, stored, config = agent.actions["act"]
    assert trigger_conditions == ["_input_event"]
    assert isinstance(stored, PythonFunction)
    assert (stored.module, stored.qualname) == (__name__, "echo")
    assert stored.as_callable() is echo
    assert config is None


def test_a_python_function_descriptor_is_stored_as_given() -> None:
    descriptor = PythonFunction(module=__name__, qualname="Handlers.shout")
    agent = Agent().add_action("act", [EventType.InputEvent], descriptor)
    _, stored, _ = agent.actions["act"]
    assert stored is descriptor
    assert descriptor.as_callable() is Handlers.shout  # imported by name
    plan = AgentPlan.from_agent(agent)
    assert plan.actions["act"].func is Handlers.shout


def test_config_names_and_chaining() -> None:
    agent = Agent()
    assert agent.add_action("act", ["_input_event"], echo, retry=3, timeout_sec=10) is agent
    assert agent.actions["act"].config == {"retry": 3, "timeout_sec": 10}
    with pytest.raises(ValueError, match="act"):
        agent.add_action("act", ["_input_event"], echo)
    with pytest.raises(TypeError, match="not callable"):
        agent.add_action("bad", ["_input_event"], "echo")  # type: ignore[arg-type]


def test_triggers_are_kept_raw_and_checked_by_the_plan() -> None:
    raw = ["evt_a", "attributes.ready == true"]
    agent = Agent().add_action("act", raw, echo)
    assert agent.actions["act"].trigger_conditions == raw
    assert [c.source for c in AgentPlan.from_agent(agent).actions["act"].conditions] == [raw[1]]
    broken = Agent().add_action("act", ["evt_a", "attributes.ready =="], echo)
    with pytest.raises(ValueError, match=r"^action 'act': invalid trigger condition"):
        AgentPlan.from_agent(broken)
    empty = Agent().add_action("act", [], echo)
    assert empty.actions["act"].trigger_conditions == []
    with pytest.raises(ValueError, match="at least one event type"):
        AgentPlan.from_agent(empty)


def test_classes_constants_and_strings_all_trigger() -> None:
    agent = Agent().add_action("act", [InputEvent, EventType.OutputEvent, "'order:created'"], echo)
    plan = AgentPlan.from_agent(agent)
    assert plan.actions["act"].event_types == ("_input_event", "_output_event", "order:created")


def test_a_java_function_is_kept_but_fails_the_plan() -> None:
    java = JavaFunction.for_action("com.example.Handlers", "handle")
    assert java.parameter_types == [
        "org.apache.flink.agents.api.Event",
        "org.apache.flink.agents.api.context.RunnerContext",
    ]
    agent = Agent().add_action("act", ["_input_event"], java)
    assert agent.actions["act"].func is java
    with pytest.raises(ResourceUnavailableError, match=r"com\.example\.Handlers\.handle"):
        AgentPlan.from_agent(agent)


def test_a_closure_runs_and_the_agent_pickles() -> None:
    suffix = "!"

    def exclaim(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=f"{event.input}{suffix}"))  # type: ignore[attr-defined]

    agent = Agent().add_action("exclaim", [InputEvent], exclaim)
    _, stored, _ = agent.actions["exclaim"]
    assert isinstance(stored, PythonFunction)
    assert stored.qualname.endswith("<locals>.exclaim")
    restored = cloudpickle.loads(cloudpickle.dumps(agent))
    env = LocalExecutionEnvironment()
    out = env.from_list([{"key": "k", "value": "hi"}]).apply(restored).to_list()
    env.execute()
    assert out == [{"k": "hi!"}]


def test_python_function_equality_and_pickling() -> None:
    made = PythonFunction.from_callable(echo)
    named = PythonFunction(module=__name__, qualname="echo")
    assert made == named
    assert hash(made) == hash(named)
    copy = pickle.loads(pickle.dumps(made))
    assert copy.as_callable() is echo
    with pytest.raises(ValueError, match="cannot be imported by name"):
        PythonFunction(module=__name__, qualname="f.<locals>.g").as_callable()


def test_decorated_actions_are_listed_with_upstreams_shape() -> None:
    from flink_agents.api.decorators import action

    class Declared(Agent):
        @action(EventType.InputEvent)
        @staticmethod
        def start(event: Event, ctx: RunnerContext) -> Any:
            return None

    triggers, function, config = Declared().actions["start"]
    assert triggers == ["_input_event"]
    assert function.as_callable() is Declared.start
    assert config is None
