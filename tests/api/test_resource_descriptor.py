"""`ResourceType` and `ResourceDescriptor` as upstream: upstream's members, and every form
of naming a descriptor's class."""

from __future__ import annotations

import pickle

import pytest

from flink_agents.api import Agent, Prompt, ResourceDescriptor, ResourceType, UnknownOptionError
from flink_agents.api.chat_models.function_model import ScriptedChatModelConnection
from flink_agents.plan.agent_plan import AgentPlan

SCRIPTED = "flink_agents.api.chat_models.function_model.ScriptedChatModelConnection"


def test_resource_type_has_upstreams_members() -> None:
    assert {t.name: t.value for t in ResourceType} == {
        "CHAT_MODEL": "chat_model",
        "CHAT_MODEL_CONNECTION": "chat_model_connection",
        "TOOL": "tool",
        "EMBEDDING_MODEL": "embedding_model",
        "EMBEDDING_MODEL_CONNECTION": "embedding_model_connection",
        "VECTOR_STORE": "vector_store",
        "PROMPT": "prompt",
        "MCP_SERVER": "mcp_server",
        "SKILLS": "skills",
    }
    assert ResourceType("vector_store") is ResourceType.VECTOR_STORE


# ------------------------------------------------------------------ descriptor forms


def test_every_way_to_name_the_class_gives_the_same_descriptor() -> None:
    as_class = ResourceDescriptor(clazz=ScriptedChatModelConnection, replies=["a"])
    as_path = ResourceDescriptor(clazz=SCRIPTED, replies=["a"])
    as_parts = ResourceDescriptor(
        target_module="flink_agents.api.chat_models.function_model",
        target_clazz="ScriptedChatModelConnection",
        arguments={"replies": ["a"]},
    )
    positional = ResourceDescriptor(ScriptedChatModelConnection, replies=["a"])
    assert as_class == as_path == as_parts == positional
    assert hash(as_class) == hash(as_path) == hash(as_parts)
    for descriptor in (as_class, as_path, as_parts):
        assert descriptor.clazz is ScriptedChatModelConnection
        assert descriptor.target_module == "flink_agents.api.chat_models.function_model"
        assert descriptor.target_clazz == "ScriptedChatModelConnection"
        assert descriptor.arguments == {"replies": ["a"]}
    assert as_class != ResourceDescriptor(clazz=SCRIPTED, replies=["b"])


def test_arguments_and_keywords_merge_keywords_win() -> None:
    descriptor = ResourceDescriptor(
        clazz=SCRIPTED, arguments={"replies": ["x"], "model": "m"}, replies=["y"]
    )
    assert descriptor.arguments == {"replies": ["y"], "model": "m"}


def test_the_class_must_be_named_once() -> None:
    with pytest.raises(ValueError, match="needs the resource class"):
        ResourceDescriptor(arguments={"a": 1})
    with pytest.raises(ValueError, match="needs the resource class"):
        ResourceDescriptor(target_module="m")
    with pytest.raises(ValueError, match="not both"):
        ResourceDescriptor(clazz=SCRIPTED, target_module="m", target_clazz="C")


def test_unknown_options_fail_the_plan_in_every_form() -> None:
    with pytest.raises(UnknownOptionError, match="repiles"):
        ResourceDescriptor(clazz=ScriptedChatModelConnection, repiles=[])  # a class: at once
    parts = ResourceDescriptor(
        target_module="flink_agents.api.chat_models.function_model",
        target_clazz="ScriptedChatModelConnection",
        arguments={"repiles": []},
    )
    agent = Agent().add_resource("m", ResourceType.CHAT_MODEL_CONNECTION, parts)
    with pytest.raises(UnknownOptionError, match="did you mean 'replies'"):
        AgentPlan.from_agent(agent)


def test_upstreams_name_keyword_is_taken_and_ignored() -> None:
    built = ResourceDescriptor(clazz=SCRIPTED, name="model", replies=["hi"]).build()
    assert isinstance(built, ScriptedChatModelConnection)
    assert "name" not in built.model_dump()


def test_a_descriptor_builds_and_pickles() -> None:
    descriptor = ResourceDescriptor(clazz=SCRIPTED, replies=["hi"])
    built = descriptor.build()
    assert isinstance(built, ScriptedChatModelConnection)
    copy = pickle.loads(pickle.dumps(descriptor))
    assert copy == descriptor
    assert copy.clazz is ScriptedChatModelConnection


def test_a_class_that_is_no_resource_is_refused() -> None:
    with pytest.raises(TypeError, match="not a Resource class"):
        ResourceDescriptor(clazz="collections.OrderedDict").resolve_class()


def test_prompt_resources_still_take_instances() -> None:
    agent = Agent().add_resource("p", ResourceType.PROMPT, Prompt.from_text("hi {x}"))
    plan = AgentPlan.from_agent(agent)
    assert plan.resource_spec("p", ResourceType.PROMPT) == Prompt.from_text("hi {x}")
