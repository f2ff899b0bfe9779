"""`ResourceName` as upstream: every Python name is either a class here or a clear error at
plan time that names the missing provider and what to use instead."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.api import Agent, ResourceDescriptor, ResourceType
from flink_agents.api._resource_names import CLASS_NAMES, Missing
from flink_agents.api.errors import ResourceUnavailableError
from flink_agents.api.resource import Resource, ResourceName, get_resource_class
from flink_agents.plan.agent_plan import AgentPlan


def _names(holder: type, prefix: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for attr, value in vars(holder).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, str):
            found.append((f"{prefix}.{attr}", value))
        elif isinstance(value, type):
            found.extend(_names(value, f"{prefix}.{attr}"))
    return found


ALL_NAMES = _names(ResourceName, "ResourceName")


def test_upstream_python_names_keep_upstream_values() -> None:
    chat = ResourceName.ChatModel
    assert (
        chat.OLLAMA_SETUP
        == "flink_agents.integrations.chat_models.ollama_chat_model.OllamaChatModelSetup"
    )
    assert chat.ANTHROPIC_CONNECTION == (
        "flink_agents.integrations.chat_models.anthropic.anthropic_chat_model."
        "AnthropicChatModelConnection"
    )
    assert chat.Java.OLLAMA_CONNECTION == (
        "org.apache.flink.agents.integrations.chatmodels.ollama.OllamaChatModelConnection"
    )
    assert ResourceName.MCP_SERVER == "flink_agents.integrations.mcp.mcp.MCPServer"
    assert ResourceName.VectorStore.CHROMA_VECTOR_STORE.endswith("ChromaVectorStore")


@pytest.mark.parametrize(("attr", "name"), ALL_NAMES, ids=[a for a, _ in ALL_NAMES])
def test_every_name_is_a_class_here_or_says_what_to_use(attr: str, name: str) -> None:
    assert name in CLASS_NAMES, f"{attr} has no entry in CLASS_NAMES"
    descriptor = ResourceDescriptor(clazz=name)
    try:
        cls = descriptor.resolve_class()
    except ResourceUnavailableError as caught:
        assert isinstance(CLASS_NAMES[name], Missing)
        message = str(caught)
        assert "is not available here; instead, " in message
        assert name in message
        assert caught.alternative
    else:
        assert issubclass(cls, Resource)
        embedding = ".EmbeddingModel." in attr
        if "CONNECTION" in attr:
            kind = (
                ResourceType.EMBEDDING_MODEL_CONNECTION
                if embedding
                else ResourceType.CHAT_MODEL_CONNECTION
            )
            assert cls.resource_type() is kind
        elif attr.endswith("_SETUP"):
            kind = ResourceType.EMBEDDING_MODEL if embedding else ResourceType.CHAT_MODEL
            assert cls.resource_type() is kind


def test_provider_here_maps_to_our_class() -> None:
    from flink_agents.integrations.chat_models.anthropic.anthropic_chat_model import (
        AnthropicChatModelSetup,
    )
    from flink_agents.integrations.chat_models.openai.openai_chat_model import (
        OpenAIChatModelConnection,
    )
    from flink_agents.integrations.chat_models.openai.openai_responses_chat_model import (
        OpenAIResponsesChatModelSetup,
    )

    setup = ResourceDescriptor(clazz=ResourceName.ChatModel.ANTHROPIC_SETUP, connection="claude")
    assert setup.clazz is AnthropicChatModelSetup
    connection = ResourceDescriptor(
        clazz=ResourceName.ChatModel.OPENAI_COMPLETIONS_CONNECTION, base_url="http://127.0.0.1:1"
    )
    assert connection.clazz is OpenAIChatModelConnection
    responses = ResourceDescriptor(
        clazz=ResourceName.ChatModel.OPENAI_RESPONSES_SETUP, connection="x"
    )
    assert responses.clazz is OpenAIResponsesChatModelSetup


def _agent_with(name: str, resource_type: ResourceType, **arguments: Any) -> Agent:
    return Agent().add_resource("model", resource_type, ResourceDescriptor(clazz=name, **arguments))


@pytest.mark.parametrize(
    ("name", "module", "class_name"),
    [
        (
            ResourceName.ChatModel.OLLAMA_CONNECTION,
            "ollama_chat_model",
            "OllamaChatModelConnection",
        ),
        (ResourceName.ChatModel.OLLAMA_SETUP, "ollama_chat_model", "OllamaChatModelSetup"),
        (ResourceName.ChatModel.VLLM_CONNECTION, "vllm.vllm_chat_model", "VLLMChatModelConnection"),
        (ResourceName.ChatModel.VLLM_SETUP, "vllm.vllm_chat_model", "VLLMChatModelSetup"),
        (
            ResourceName.ChatModel.AZURE_OPENAI_CONNECTION,
            "azure.azure_openai_chat_model",
            "AzureOpenAIChatModelConnection",
        ),
        (
            ResourceName.ChatModel.AZURE_OPENAI_SETUP,
            "azure.azure_openai_chat_model",
            "AzureOpenAIChatModelSetup",
        ),
        (
            ResourceName.ChatModel.TONGYI_CONNECTION,
            "tongyi_chat_model",
            "TongyiChatModelConnection",
        ),
        (ResourceName.ChatModel.TONGYI_SETUP, "tongyi_chat_model", "TongyiChatModelSetup"),
    ],
)
def test_native_adapters_resolve_at_upstreams_paths(
    name: str, module: str, class_name: str
) -> None:
    assert CLASS_NAMES[name] == name
    cls = ResourceDescriptor(clazz=name).clazz
    assert (cls.__module__, cls.__name__) == (
        f"flink_agents.integrations.chat_models.{module}",
        class_name,
    )


def test_java_names_fail_the_plan_pointing_at_the_python_class() -> None:
    agent = _agent_with(
        ResourceName.ChatModel.Java.ANTHROPIC_SETUP, ResourceType.CHAT_MODEL, connection="c"
    )
    with pytest.raises(ResourceUnavailableError, match=r"Java.*ChatModel\.ANTHROPIC_SETUP"):
        AgentPlan.from_agent(agent)
    wrapper = _agent_with(
        ResourceName.ChatModel.JAVA_WRAPPER_CONNECTION,
        ResourceType.CHAT_MODEL_CONNECTION,
        java_clazz=ResourceName.ChatModel.Java.OLLAMA_CONNECTION,
    )
    with pytest.raises(ResourceUnavailableError, match="Java chat model wrapper"):
        AgentPlan.from_agent(wrapper)


def test_a_name_declared_in_a_decorated_method_fails_the_plan() -> None:
    from flink_agents.api.decorators import chat_model_setup

    class OllamaAgent(Agent):
        @chat_model_setup
        @staticmethod
        def review_model() -> ResourceDescriptor:
            return ResourceDescriptor(
                clazz=ResourceName.ChatModel.Java.OLLAMA_SETUP, connection="ollama"
            )

    agent = OllamaAgent()  # declaring it is fine
    with pytest.raises(ResourceUnavailableError, match=r"Java.*ChatModel\.OLLAMA_SETUP"):
        AgentPlan.from_agent(agent)


def test_shared_resources_are_checked_as_well() -> None:
    shared = {
        ResourceType.CHAT_MODEL_CONNECTION: {
            "gemini": ResourceDescriptor(clazz=ResourceName.ChatModel.Java.GEMINI_CONNECTION)
        }
    }
    with pytest.raises(ResourceUnavailableError, match=r"Python class.*GEMINI_CONNECTION"):
        AgentPlan.from_agent(Agent(), shared_resources=shared)


def test_a_provider_added_to_the_table_resolves(monkeypatch: pytest.MonkeyPatch) -> None:
    # Adding an adapter is one table entry: its upstream name then builds our class.
    from flink_agents.api.chat_models.function_model import ScriptedChatModelConnection

    monkeypatch.setitem(
        CLASS_NAMES,
        ResourceName.ChatModel.OLLAMA_CONNECTION,
        "flink_agents.api.chat_models.function_model.ScriptedChatModelConnection",
    )
    descriptor = ResourceDescriptor(clazz=ResourceName.ChatModel.OLLAMA_CONNECTION, replies=["hi"])
    assert descriptor.clazz is ScriptedChatModelConnection
    agent = Agent().add_resource("ollama", ResourceType.CHAT_MODEL_CONNECTION, descriptor)
    AgentPlan.from_agent(agent)  # no error


def test_an_adapter_added_at_upstreams_path_is_found_before_its_entry_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flink_agents.api.chat_models.function_model import ScriptedChatModelConnection

    path = "flink_agents.api.chat_models.function_model.ScriptedChatModelConnection"
    monkeypatch.setitem(CLASS_NAMES, path, Missing("a provider", "something else"))
    assert ResourceDescriptor(clazz=path).clazz is ScriptedChatModelConnection
    gone = "flink_agents.integrations.chat_models.nowhere_chat_model.NowhereConnection"
    monkeypatch.setitem(CLASS_NAMES, gone, Missing("the Nowhere chat model", "stay home"))
    with pytest.raises(ResourceUnavailableError, match=r"Nowhere chat model .* stay home"):
        ResourceDescriptor(clazz=gone).resolve_class()


def test_get_resource_class() -> None:
    from flink_agents.api.prompts.prompt import LocalPrompt

    assert get_resource_class("flink_agents.api.prompts.prompt", "LocalPrompt") is LocalPrompt
    with pytest.raises(ResourceUnavailableError, match="Java vector stores"):
        get_resource_class("flink_agents.api.vector_stores.java_vector_store", "JavaVectorStore")
