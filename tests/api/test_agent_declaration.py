"""Declaring agents: decorators, add_action / add_resource, and the compiled plan."""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle
import pytest

from flink_agents.api import (
    Agent,
    BaseChatModelSetup,
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    OutputEvent,
    Prompt,
    ResourceDescriptor,
    ResourceType,
    RunnerContext,
    ToolRequestEvent,
    ToolResponseEvent,
    action,
    chat_model_connection,
    chat_model_setup,
    prompt,
    tool,
)
from flink_agents.plan import ActionSpec, AgentPlan


def echo_model(messages: Any, tools: Any) -> str:
    return "ok"


class TriageAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def start(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ChatRequestEvent(model="triage_model", messages=[]))

    @action(ChatResponseEvent, "custom_event")
    @staticmethod
    async def finish(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output="done"))

    @tool
    @staticmethod
    def lookup(ticket: str) -> str:
        """Look a ticket up.

        Args:
            ticket: The ticket id.
        """
        return ticket

    @chat_model_connection
    @staticmethod
    def local_model() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=FunctionChatModelConnection, function=echo_model)

    @chat_model_setup
    @staticmethod
    def triage_model() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=BaseChatModelSetup, connection="local_model", tools=["lookup"]
        )

    @prompt
    @staticmethod
    def triage_prompt() -> Prompt:
        return Prompt.from_text("Triage {ticket}")


class UrgentTriageAgent(TriageAgent):
    @action(InputEvent)
    @staticmethod
    def start(event: Event, ctx: RunnerContext) -> None:  # overrides the parent's action
        ctx.send_event(OutputEvent(output="urgent"))


def test_decorated_actions_and_resources_are_collected() -> None:
    agent = TriageAgent()
    assert list(agent.actions) == ["start", "finish"]
    assert agent.actions["start"].trigger_conditions == ["_input_event"]
    assert agent.actions["finish"].trigger_conditions == ["_chat_response_event", "custom_event"]
    assert agent.actions["start"].func.as_callable() is TriageAgent.start
    assert agent.actions["start"].config is None
    resources = agent.resources
    assert resources[ResourceType.TOOL]["lookup"] is TriageAgent.lookup
    assert resources[ResourceType.CHAT_MODEL_CONNECTION]["local_model"] == ResourceDescriptor(
        clazz=FunctionChatModelConnection, function=echo_model
    )
    assert isinstance(resources[ResourceType.CHAT_MODEL]["triage_model"], ResourceDescriptor)
    assert resources[ResourceType.PROMPT]["triage_prompt"] == Prompt.from_text("Triage {ticket}")


def test_subclass_overrides_an_action() -> None:
    agent = UrgentTriageAgent()
    assert agent.actions["start"].func.as_callable() is UrgentTriageAgent.start
    assert list(agent.actions) == ["finish", "start"]


def test_decorating_an_instance_method_is_refused() -> None:
    class Broken(Agent):
        @action(InputEvent)
        def start(self, event: Event, ctx: RunnerContext) -> None: ...

    with pytest.raises(TypeError, match="staticmethod"):
        Broken()


def test_resource_method_must_return_a_descriptor() -> None:
    class Broken(Agent):
        @chat_model_setup
        @staticmethod
        def model() -> str:
            return "not a descriptor"

    with pytest.raises(TypeError, match="must return a ResourceDescriptor"):
        Broken()


def test_action_needs_event_types() -> None:
    with pytest.raises(TypeError, match="action trigger condition must be a string, got "):
        action(int)  # type: ignore[arg-type]


def test_add_action_and_add_resource() -> None:
    def start(event: Event, ctx: RunnerContext) -> None: ...

    agent = (
        Agent()
        .add_action("start", InputEvent, start, threshold=0.5)
        .add_action("other", ["my_event", ChatResponseEvent], start)
        .add_resource("p", ResourceType.PROMPT, Prompt.from_text("x"))
        .add_resource("lookup", ResourceType.TOOL, TriageAgent.lookup)
    )
    assert agent.actions["start"].config == {"threshold": 0.5}
    assert agent.actions["other"].trigger_conditions == ["my_event", ChatResponseEvent]
    plan = AgentPlan.from_agent(agent)
    assert plan.actions["other"].event_types == ("my_event", "_chat_response_event")
    with pytest.raises(ValueError, match="already defined"):
        agent.add_action("start", InputEvent, start)
    with pytest.raises(ValueError, match="already defined"):
        agent.add_resource("p", ResourceType.PROMPT, Prompt.from_text("y"))
    with pytest.raises(TypeError, match="expected a ResourceDescriptor"):
        agent.add_resource("q", ResourceType.PROMPT, "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not callable"):
        agent.add_action("bad", InputEvent, "nope")  # type: ignore[arg-type]


def test_plan_has_triggers_and_resources() -> None:
    plan = AgentPlan.from_agent(TriageAgent())
    assert list(plan.actions) == ["start", "finish"]
    assert [s.name for s in plan.actions_for("_chat_response_event")] == ["finish"]
    assert [s.name for s in plan.actions_for("custom_event")] == ["finish"]
    # The plan knows nothing of the runtime's built-in actions.
    assert plan.actions_for(ChatRequestEvent.EVENT_TYPE) == ()
    assert plan.actions_for("nothing") == ()
    assert plan.actions["start"].is_async is False
    assert plan.actions["finish"].is_async is True
    assert plan.resource_spec("lookup", ResourceType.TOOL) is TriageAgent.lookup
    with pytest.raises(KeyError, match="no chat_model resource named 'missing'"):
        plan.resource_spec("missing", ResourceType.CHAT_MODEL)


async def _runtime_chat(event: Event, ctx: RunnerContext) -> None: ...


RUNTIME_CHAT = ActionSpec(
    name="_runtime_chat",
    event_types=(ChatRequestEvent.EVENT_TYPE, ToolResponseEvent.EVENT_TYPE),
    func=_runtime_chat,
    config={},
    is_async=True,
)


def test_runtime_actions_come_first_and_share_triggers() -> None:
    plan = AgentPlan.from_agent(TriageAgent(), runtime_actions=[RUNTIME_CHAT])
    assert list(plan.actions) == ["_runtime_chat", "start", "finish"]
    assert plan.actions_for(ChatRequestEvent.EVENT_TYPE) == (RUNTIME_CHAT,)
    assert plan.actions_for(ToolResponseEvent.EVENT_TYPE) == (RUNTIME_CHAT,)
    assert plan.actions_for(ToolRequestEvent.EVENT_TYPE) == ()


def test_plan_merges_shared_resources_agent_wins() -> None:
    shared = {
        ResourceType.PROMPT: {
            "triage_prompt": Prompt.from_text("shared"),
            "extra": Prompt.from_text("extra"),
        }
    }
    plan = AgentPlan.from_agent(TriageAgent(), shared_resources=shared)
    assert plan.resource_spec("triage_prompt", ResourceType.PROMPT) == Prompt.from_text(
        "Triage {ticket}"
    )
    assert plan.resource_spec("extra", ResourceType.PROMPT) == Prompt.from_text("extra")


def test_reserved_action_names() -> None:
    agent = Agent().add_action(RUNTIME_CHAT.name, InputEvent, TriageAgent.start)
    assert list(AgentPlan.from_agent(agent).actions) == [RUNTIME_CHAT.name]
    with pytest.raises(ValueError, match="'_runtime_chat' is reserved"):
        AgentPlan.from_agent(agent, runtime_actions=[RUNTIME_CHAT])


def test_plan_pickles() -> None:
    plan = AgentPlan.from_agent(TriageAgent())
    copy = pickle.loads(pickle.dumps(plan))
    assert list(copy.actions) == list(plan.actions)
    assert copy.actions["start"].func is TriageAgent.start

    def local_action(event: Event, ctx: RunnerContext) -> None: ...

    local = AgentPlan.from_agent(Agent().add_action("a", InputEvent, local_action))
    restored = cloudpickle.loads(cloudpickle.dumps(local))
    assert restored.actions["a"].func.__name__ == "local_action"


def test_an_unknown_option_of_a_dotted_path_descriptor_fails_the_plan() -> None:
    from flink_agents.api import ResourceDescriptor, ResourceType, UnknownOptionError
    from flink_agents.plan.agent_plan import AgentPlan

    agent = Agent()
    agent.add_resource(
        "openai",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(
            clazz="flink_agents.integrations.chat_models.openai.openai_chat_model."
            "OpenAIChatModelConnection",
            api_bse_url="http://127.0.0.1:1",
        ),
    )
    with pytest.raises(UnknownOptionError, match="api_bse_url"):
        AgentPlan.from_agent(agent)
