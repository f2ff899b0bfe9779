"""Upstream's Java wrapper classes exist at its paths and are refused: when an agent's plan
is built (naming the class and the migration page), and when one is made."""

from __future__ import annotations

import importlib

import pytest

from flink_agents.api import Agent, ResourceDescriptor, ResourceType
from flink_agents.api._java_wrappers import JavaResourceWrapper
from flink_agents.api.errors import ResourceUnavailableError
from flink_agents.api.resource import Resource, ResourceName
from flink_agents.plan.agent_plan import AgentPlan

WRAPPERS = [
    (ResourceName.ChatModel.JAVA_WRAPPER_CONNECTION, ResourceType.CHAT_MODEL_CONNECTION),
    (ResourceName.ChatModel.JAVA_WRAPPER_SETUP, ResourceType.CHAT_MODEL),
    (ResourceName.EmbeddingModel.JAVA_WRAPPER_CONNECTION, ResourceType.EMBEDDING_MODEL_CONNECTION),
    (ResourceName.EmbeddingModel.JAVA_WRAPPER_SETUP, ResourceType.EMBEDDING_MODEL),
    (ResourceName.VectorStore.JAVA_WRAPPER_VECTOR_STORE, ResourceType.VECTOR_STORE),
    (
        ResourceName.VectorStore.JAVA_WRAPPER_COLLECTION_MANAGEABLE_VECTOR_STORE,
        ResourceType.VECTOR_STORE,
    ),
]


def _class(path: str) -> type:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(("path", "resource_type"), WRAPPERS, ids=lambda v: str(v))
def test_a_declared_java_wrapper_fails_the_plan_naming_it(
    path: str, resource_type: ResourceType
) -> None:
    cls = _class(path)
    assert issubclass(cls, Resource) and issubclass(cls, JavaResourceWrapper)
    assert cls.resource_type() is resource_type
    for clazz in (path, cls):  # by name or by class
        agent = Agent().add_resource(
            "r", resource_type, ResourceDescriptor(clazz=clazz, java_clazz="org.x.Y")
        )
        with pytest.raises(ResourceUnavailableError) as caught:
            AgentPlan.from_agent(agent)
        message = str(caught.value)
        assert path in message and "no Java runtime" in message
        assert "docs/migrating-from-flink-agents.md" in message


@pytest.mark.parametrize(("path", "resource_type"), WRAPPERS, ids=lambda v: str(v))
def test_a_java_wrapper_cannot_be_made(path: str, resource_type: ResourceType) -> None:
    with pytest.raises(ResourceUnavailableError, match="no Java runtime"):
        _class(path)(java_clazz="org.x.Y")
