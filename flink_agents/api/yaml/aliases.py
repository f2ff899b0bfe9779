"""Short names a YAML agent file may use (upstream's `flink_agents.api.yaml.aliases`).

``trigger_conditions: [input]`` stands for `InputEvent`'s type (`EVENT_ALIASES`);
``clazz: ollama`` stands for a class path that depends on the section and the language
(`CLAZZ_ALIASES`: ``ollama`` is a chat model connection in ``chat_model_connections``
and an embedding model connection in ``embedding_model_connections``). A name that is no
alias is taken as it is: an event type, or a class path.

``type: java`` resources are wrapped by upstream in a Python class per resource type
(`JAVA_WRAPPER_CLAZZ`); there is no Java here, so such a resource is refused when the
file is loaded into an environment (`ResourceUnavailableError`, through `ResourceName`).
"""

from __future__ import annotations

from flink_agents.api._resource_names import ResourceName
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.resource import ResourceType
from flink_agents.api.yaml.specs import Language

__all__ = [
    "CLAZZ_ALIASES",
    "EVENT_ALIASES",
    "JAVA_WRAPPER_CLAZZ",
    "resolve_clazz",
    "resolve_event_type",
]

EVENT_ALIASES: dict[str, str] = {
    "input": InputEvent.EVENT_TYPE,
    "output": OutputEvent.EVENT_TYPE,
    "chat_request": ChatRequestEvent.EVENT_TYPE,
    "chat_response": ChatResponseEvent.EVENT_TYPE,
    "tool_request": ToolRequestEvent.EVENT_TYPE,
    "tool_response": ToolResponseEvent.EVENT_TYPE,
    "context_retrieval_request": ContextRetrievalRequestEvent.EVENT_TYPE,
    "context_retrieval_response": ContextRetrievalResponseEvent.EVENT_TYPE,
}
"""A whole trigger condition -> the event type it stands for."""

_CM = ResourceName.ChatModel
_EM = ResourceName.EmbeddingModel
_VS = ResourceName.VectorStore

CLAZZ_ALIASES: dict[ResourceType, dict[str, dict[str, str]]] = {
    ResourceType.CHAT_MODEL_CONNECTION: {
        "python": {
            "ollama": _CM.OLLAMA_CONNECTION,
            "openai": _CM.OPENAI_COMPLETIONS_CONNECTION,
            "anthropic": _CM.ANTHROPIC_CONNECTION,
            "tongyi": _CM.TONGYI_CONNECTION,
            "azure_openai": _CM.AZURE_OPENAI_CONNECTION,
            "vllm": _CM.VLLM_CONNECTION,
        },
        "java": {
            "ollama": _CM.Java.OLLAMA_CONNECTION,
            "openai_completions": _CM.Java.OPENAI_COMPLETIONS_CONNECTION,
            "openai_responses": _CM.Java.OPENAI_RESPONSES_CONNECTION,
            "anthropic": _CM.Java.ANTHROPIC_CONNECTION,
            "gemini": _CM.Java.GEMINI_CONNECTION,
            "azure_openai": _CM.Java.AZURE_OPENAI_CONNECTION,
            "bedrock": _CM.Java.BEDROCK_CONNECTION,
            "vllm": _CM.Java.VLLM_CONNECTION,
        },
    },
    ResourceType.CHAT_MODEL: {
        "python": {
            "ollama": _CM.OLLAMA_SETUP,
            "openai": _CM.OPENAI_COMPLETIONS_SETUP,
            "anthropic": _CM.ANTHROPIC_SETUP,
            "tongyi": _CM.TONGYI_SETUP,
            "azure_openai": _CM.AZURE_OPENAI_SETUP,
            "vllm": _CM.VLLM_SETUP,
        },
        "java": {
            "ollama": _CM.Java.OLLAMA_SETUP,
            "openai_completions": _CM.Java.OPENAI_COMPLETIONS_SETUP,
            "openai_responses": _CM.Java.OPENAI_RESPONSES_SETUP,
            "anthropic": _CM.Java.ANTHROPIC_SETUP,
            "gemini": _CM.Java.GEMINI_SETUP,
            "azure_openai": _CM.Java.AZURE_OPENAI_SETUP,
            "bedrock": _CM.Java.BEDROCK_SETUP,
            "vllm": _CM.Java.VLLM_SETUP,
        },
    },
    ResourceType.EMBEDDING_MODEL_CONNECTION: {
        "python": {
            "ollama": _EM.OLLAMA_CONNECTION,
            "openai": _EM.OPENAI_CONNECTION,
            "tongyi": _EM.TONGYI_CONNECTION,
        },
        "java": {
            "ollama": _EM.Java.OLLAMA_CONNECTION,
            "bedrock": _EM.Java.BEDROCK_CONNECTION,
        },
    },
    ResourceType.EMBEDDING_MODEL: {
        "python": {
            "ollama": _EM.OLLAMA_SETUP,
            "openai": _EM.OPENAI_SETUP,
            "tongyi": _EM.TONGYI_SETUP,
        },
        "java": {
            "ollama": _EM.Java.OLLAMA_SETUP,
            "bedrock": _EM.Java.BEDROCK_SETUP,
        },
    },
    ResourceType.VECTOR_STORE: {
        "python": {
            "chroma": _VS.CHROMA_VECTOR_STORE,
            "mem0": _VS.MEM0_VECTOR_STORE,
        },
        "java": {
            "elasticsearch": _VS.Java.ELASTICSEARCH_VECTOR_STORE,
            "opensearch": _VS.Java.OPENSEARCH_VECTOR_STORE,
            "s3_vectors": _VS.Java.S3_VECTORS_VECTOR_STORE,
            "milvus": _VS.Java.MILVUS_VECTOR_STORE,
        },
    },
    # Not in upstream's table, though its docs write ``clazz: mcp``.
    ResourceType.MCP_SERVER: {"python": {"mcp": ResourceName.MCP_SERVER}},
}
"""Resource type -> language -> alias -> class path."""

JAVA_WRAPPER_CLAZZ: dict[ResourceType, str] = {
    ResourceType.CHAT_MODEL_CONNECTION: _CM.JAVA_WRAPPER_CONNECTION,
    ResourceType.CHAT_MODEL: _CM.JAVA_WRAPPER_SETUP,
    ResourceType.EMBEDDING_MODEL_CONNECTION: _EM.JAVA_WRAPPER_CONNECTION,
    ResourceType.EMBEDDING_MODEL: _EM.JAVA_WRAPPER_SETUP,
    ResourceType.VECTOR_STORE: _VS.JAVA_WRAPPER_VECTOR_STORE,
}
"""Upstream's Python class that wraps a ``type: java`` resource, per resource type."""


def resolve_event_type(name: str) -> str:
    """The event type an alias stands for; any other trigger condition as it is."""
    return EVENT_ALIASES.get(name, name)


def resolve_clazz(name: str, resource_type: ResourceType, language: Language = "python") -> str:
    """The class path an alias of ``resource_type`` in ``language`` stands for; any other
    name as it is (a class path)."""
    return CLAZZ_ALIASES.get(resource_type, {}).get(language, {}).get(name, name)
