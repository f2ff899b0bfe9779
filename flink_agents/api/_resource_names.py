"""`ResourceName`: upstream's class names for resources, and what each one is here.

Apache Flink Agents names its resource implementations by class path
(``ResourceName.ChatModel.OLLAMA_SETUP``). The constants below keep upstream's names and
values, so an agent written for upstream runs unchanged. `CLASS_NAMES` says what each
value is here: the path of the class that implements it, or `Missing` (the provider is not
implemented here, and what to use instead). Resolving a missing one raises
`ResourceUnavailableError` when the plan is built.

An adapter added at upstream's module path is found there even while its entry still says
`Missing`; one added elsewhere replaces its entry with the path of its class (or adds a
constant and an entry, for a provider upstream does not name).
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

from flink_agents.api.errors import ResourceUnavailableError

__all__ = ["CLASS_NAMES", "Missing", "ResourceName", "class_name_here"]

_CHAT = "flink_agents.integrations.chat_models"
_EMBEDDING = "flink_agents.integrations.embedding_models"
_VECTOR = "flink_agents.integrations.vector_stores"
_JAVA_CHAT = "org.apache.flink.agents.integrations.chatmodels"
_JAVA_EMBEDDING = "org.apache.flink.agents.integrations.embeddingmodels"
_JAVA_VECTOR = "org.apache.flink.agents.integrations.vectorstores"


class ResourceName:
    """Class names of resource implementations, for ``ResourceDescriptor(clazz=...)``.

    ``ResourceName.<Type>.<PROVIDER>_<KIND>`` names a Python class,
    ``ResourceName.<Type>.Java.<PROVIDER>_<KIND>`` a Java one (for upstream's Java wrapper;
    there is no Java here). The values are upstream's; `CLASS_NAMES` maps each to its
    class here, and one whose provider is not here fails the plan with
    `ResourceUnavailableError`, which names the nearest working alternative.
    """

    class ChatModel:
        """Chat model connections and setups."""

        ANTHROPIC_CONNECTION = (
            f"{_CHAT}.anthropic.anthropic_chat_model.AnthropicChatModelConnection"
        )
        ANTHROPIC_SETUP = f"{_CHAT}.anthropic.anthropic_chat_model.AnthropicChatModelSetup"
        AZURE_OPENAI_CONNECTION = (
            f"{_CHAT}.azure.azure_openai_chat_model.AzureOpenAIChatModelConnection"
        )
        AZURE_OPENAI_SETUP = f"{_CHAT}.azure.azure_openai_chat_model.AzureOpenAIChatModelSetup"
        BEDROCK_CONNECTION = f"{_CHAT}.bedrock.bedrock_chat_model.BedrockChatModelConnection"
        """Not in upstream's Python names (upstream has it in Java only)."""
        BEDROCK_SETUP = f"{_CHAT}.bedrock.bedrock_chat_model.BedrockChatModelSetup"
        """Not in upstream's Python names (upstream has it in Java only)."""
        GEMINI_CONNECTION = f"{_CHAT}.gemini.gemini_chat_model.GeminiChatModelConnection"
        """Not in upstream's Python names (upstream has it in Java only)."""
        GEMINI_SETUP = f"{_CHAT}.gemini.gemini_chat_model.GeminiChatModelSetup"
        """Not in upstream's Python names (upstream has it in Java only)."""
        OLLAMA_CONNECTION = f"{_CHAT}.ollama_chat_model.OllamaChatModelConnection"
        OLLAMA_SETUP = f"{_CHAT}.ollama_chat_model.OllamaChatModelSetup"
        OPENAI_COMPLETIONS_CONNECTION = (
            f"{_CHAT}.openai.openai_chat_model.OpenAIChatModelConnection"
        )
        OPENAI_COMPLETIONS_SETUP = f"{_CHAT}.openai.openai_chat_model.OpenAIChatModelSetup"
        OPENAI_RESPONSES_CONNECTION = (
            f"{_CHAT}.openai.openai_responses_chat_model.OpenAIResponsesChatModelConnection"
        )
        """Not in upstream's Python names (upstream has it in Java only)."""
        OPENAI_RESPONSES_SETUP = (
            f"{_CHAT}.openai.openai_responses_chat_model.OpenAIResponsesChatModelSetup"
        )
        """Not in upstream's Python names (upstream has it in Java only)."""
        TONGYI_CONNECTION = f"{_CHAT}.tongyi_chat_model.TongyiChatModelConnection"
        TONGYI_SETUP = f"{_CHAT}.tongyi_chat_model.TongyiChatModelSetup"
        VLLM_CONNECTION = f"{_CHAT}.vllm.vllm_chat_model.VLLMChatModelConnection"
        VLLM_SETUP = f"{_CHAT}.vllm.vllm_chat_model.VLLMChatModelSetup"
        JAVA_WRAPPER_CONNECTION = (
            "flink_agents.api.chat_models.java_chat_model.JavaChatModelConnection"
        )
        JAVA_WRAPPER_SETUP = "flink_agents.api.chat_models.java_chat_model.JavaChatModelSetup"

        class Java:
            """Java chat models (upstream wraps them with ``JAVA_WRAPPER_*``)."""

            ANTHROPIC_CONNECTION = f"{_JAVA_CHAT}.anthropic.AnthropicChatModelConnection"
            ANTHROPIC_SETUP = f"{_JAVA_CHAT}.anthropic.AnthropicChatModelSetup"
            BEDROCK_CONNECTION = f"{_JAVA_CHAT}.bedrock.BedrockChatModelConnection"
            BEDROCK_SETUP = f"{_JAVA_CHAT}.bedrock.BedrockChatModelSetup"
            GEMINI_CONNECTION = f"{_JAVA_CHAT}.gemini.GeminiChatModelConnection"
            GEMINI_SETUP = f"{_JAVA_CHAT}.gemini.GeminiChatModelSetup"
            OLLAMA_CONNECTION = f"{_JAVA_CHAT}.ollama.OllamaChatModelConnection"
            OLLAMA_SETUP = f"{_JAVA_CHAT}.ollama.OllamaChatModelSetup"
            OPENAI_COMPLETIONS_CONNECTION = f"{_JAVA_CHAT}.openai.OpenAICompletionsConnection"
            OPENAI_COMPLETIONS_SETUP = f"{_JAVA_CHAT}.openai.OpenAICompletionsSetup"
            OPENAI_RESPONSES_CONNECTION = f"{_JAVA_CHAT}.openai.OpenAIResponsesModelConnection"
            OPENAI_RESPONSES_SETUP = f"{_JAVA_CHAT}.openai.OpenAIResponsesModelSetup"
            AZURE_OPENAI_CONNECTION = f"{_JAVA_CHAT}.openai.AzureOpenAIChatModelConnection"
            AZURE_OPENAI_SETUP = f"{_JAVA_CHAT}.openai.AzureOpenAIChatModelSetup"
            VLLM_CONNECTION = f"{_JAVA_CHAT}.openai.VLLMChatModelConnection"
            VLLM_SETUP = f"{_JAVA_CHAT}.openai.VLLMChatModelSetup"

    class EmbeddingModel:
        """Embedding model connections and setups."""

        OLLAMA_CONNECTION = (
            f"{_EMBEDDING}.local.ollama_embedding_model.OllamaEmbeddingModelConnection"
        )
        OLLAMA_SETUP = f"{_EMBEDDING}.local.ollama_embedding_model.OllamaEmbeddingModelSetup"
        OPENAI_CONNECTION = f"{_EMBEDDING}.openai_embedding_model.OpenAIEmbeddingModelConnection"
        OPENAI_SETUP = f"{_EMBEDDING}.openai_embedding_model.OpenAIEmbeddingModelSetup"
        TONGYI_CONNECTION = f"{_EMBEDDING}.tongyi_embedding_model.TongyiEmbeddingModelConnection"
        TONGYI_SETUP = f"{_EMBEDDING}.tongyi_embedding_model.TongyiEmbeddingModelSetup"
        WORDLLAMA_CONNECTION = (
            f"{_EMBEDDING}.local.wordllama_embedding_model.WordLlamaEmbeddingModelConnection"
        )
        """Not in upstream's names: a model in the process, no server, no download
        (the ``local-embeddings`` extra)."""
        WORDLLAMA_SETUP = (
            f"{_EMBEDDING}.local.wordllama_embedding_model.WordLlamaEmbeddingModelSetup"
        )
        """Not in upstream's names (see ``WORDLLAMA_CONNECTION``)."""
        JAVA_WRAPPER_CONNECTION = (
            "flink_agents.api.embedding_models.java_embedding_model.JavaEmbeddingModelConnection"
        )
        JAVA_WRAPPER_SETUP = (
            "flink_agents.api.embedding_models.java_embedding_model.JavaEmbeddingModelSetup"
        )

        class Java:
            """Java embedding models."""

            OLLAMA_CONNECTION = f"{_JAVA_EMBEDDING}.ollama.OllamaEmbeddingModelConnection"
            OLLAMA_SETUP = f"{_JAVA_EMBEDDING}.ollama.OllamaEmbeddingModelSetup"
            BEDROCK_CONNECTION = f"{_JAVA_EMBEDDING}.bedrock.BedrockEmbeddingModelConnection"
            BEDROCK_SETUP = f"{_JAVA_EMBEDDING}.bedrock.BedrockEmbeddingModelSetup"

    class VectorStore:
        """Vector stores."""

        CHROMA_VECTOR_STORE = f"{_VECTOR}.chroma.chroma_vector_store.ChromaVectorStore"
        PGVECTOR_VECTOR_STORE = f"{_VECTOR}.pgvector.pgvector_vector_store.PgVectorStore"
        """Not in upstream's names: PostgreSQL with pgvector, shared by every subtask."""
        MEM0_VECTOR_STORE = f"{_VECTOR}.mem0.mem0_vector_store.Mem0VectorStore"
        JAVA_WRAPPER_VECTOR_STORE = (
            "flink_agents.api.vector_stores.java_vector_store.JavaVectorStore"
        )
        JAVA_WRAPPER_COLLECTION_MANAGEABLE_VECTOR_STORE = (
            "flink_agents.api.vector_stores.java_vector_store.JavaCollectionManageableVectorStore"
        )

        class Java:
            """Java vector stores."""

            ELASTICSEARCH_VECTOR_STORE = f"{_JAVA_VECTOR}.elasticsearch.ElasticsearchVectorStore"
            OPENSEARCH_VECTOR_STORE = f"{_JAVA_VECTOR}.opensearch.OpenSearchVectorStore"
            S3_VECTORS_VECTOR_STORE = f"{_JAVA_VECTOR}.s3vectors.S3VectorsVectorStore"
            MILVUS_VECTOR_STORE = f"{_JAVA_VECTOR}.milvus.MilvusVectorStore"

    MCP_SERVER = "flink_agents.integrations.mcp.mcp.MCPServer"
    """An MCP server: its tools and prompts become the agent's."""


class Missing(NamedTuple):
    """A resource implementation upstream has and this project does not."""

    what: str
    """What is missing, as the error names it."""
    alternative: str
    """What to use instead."""


_CM = ResourceName.ChatModel
_EM = ResourceName.EmbeddingModel
_VS = ResourceName.VectorStore


def _java(kind: str, python_name: str | None) -> Missing:
    instead = (
        f"use the Python class ResourceName.{python_name}"
        if python_name
        else "use a Python resource (see ResourceName)"
    )
    return Missing(f"the Java {kind} (there is no Java runtime here)", instead)


_JAVA_WRAPPER = Missing(
    "the Java chat model wrapper (there is no Java runtime here)",
    "use the Python connection and setup of the provider: ResourceName.ChatModel."
    "ANTHROPIC_*, OPENAI_COMPLETIONS_*, OPENAI_RESPONSES_*, AZURE_OPENAI_*, OLLAMA_*, "
    "VLLM_*, TONGYI_*, GEMINI_* or BEDROCK_* (other OpenAI-compatible servers through "
    "OPENAI_COMPLETIONS_* with a base_url)",
)
_JAVA_EMBEDDING_WRAPPER = Missing(
    "the Java embedding model wrapper (there is no Java runtime here)",
    "use the Python connection and setup of the provider: ResourceName.EmbeddingModel."
    "OPENAI_*, OLLAMA_* or TONGYI_*",
)
_NO_JAVA_VECTOR_STORE = Missing(
    "Java vector stores (there is no Java runtime here)",
    "use ResourceName.VectorStore.CHROMA_VECTOR_STORE (embedded) or PGVECTOR_VECTOR_STORE "
    "(PostgreSQL with pgvector, for clusters)",
)
_NO_MEM0_VECTOR_STORE = Missing(
    "the mem0 vector store",
    "use ResourceName.VectorStore.CHROMA_VECTOR_STORE or PGVECTOR_VECTOR_STORE",
)

CLASS_NAMES: dict[str, str | Missing] = {
    # Chat models with a provider here: the same class path.
    _CM.ANTHROPIC_CONNECTION: _CM.ANTHROPIC_CONNECTION,
    _CM.ANTHROPIC_SETUP: _CM.ANTHROPIC_SETUP,
    _CM.OPENAI_COMPLETIONS_CONNECTION: _CM.OPENAI_COMPLETIONS_CONNECTION,
    _CM.OPENAI_COMPLETIONS_SETUP: _CM.OPENAI_COMPLETIONS_SETUP,
    _CM.OPENAI_RESPONSES_CONNECTION: _CM.OPENAI_RESPONSES_CONNECTION,
    _CM.OPENAI_RESPONSES_SETUP: _CM.OPENAI_RESPONSES_SETUP,
    **{
        name: name
        for name in (
            _CM.OLLAMA_CONNECTION,
            _CM.OLLAMA_SETUP,
            _CM.VLLM_CONNECTION,
            _CM.VLLM_SETUP,
            _CM.AZURE_OPENAI_CONNECTION,
            _CM.AZURE_OPENAI_SETUP,
            _CM.TONGYI_CONNECTION,
            _CM.TONGYI_SETUP,
            _CM.GEMINI_CONNECTION,
            _CM.GEMINI_SETUP,
            _CM.BEDROCK_CONNECTION,
            _CM.BEDROCK_SETUP,
        )
    },
    # Chat models without one (yet): what to use instead.
    _CM.JAVA_WRAPPER_CONNECTION: _JAVA_WRAPPER,
    _CM.JAVA_WRAPPER_SETUP: _JAVA_WRAPPER,
    _CM.Java.ANTHROPIC_CONNECTION: _java("chat model", "ChatModel.ANTHROPIC_CONNECTION"),
    _CM.Java.ANTHROPIC_SETUP: _java("chat model", "ChatModel.ANTHROPIC_SETUP"),
    _CM.Java.OPENAI_COMPLETIONS_CONNECTION: _java(
        "chat model", "ChatModel.OPENAI_COMPLETIONS_CONNECTION"
    ),
    _CM.Java.OPENAI_COMPLETIONS_SETUP: _java("chat model", "ChatModel.OPENAI_COMPLETIONS_SETUP"),
    _CM.Java.OPENAI_RESPONSES_CONNECTION: _java(
        "chat model", "ChatModel.OPENAI_RESPONSES_CONNECTION"
    ),
    _CM.Java.OPENAI_RESPONSES_SETUP: _java("chat model", "ChatModel.OPENAI_RESPONSES_SETUP"),
    _CM.Java.OLLAMA_CONNECTION: _java("chat model", "ChatModel.OLLAMA_CONNECTION"),
    _CM.Java.OLLAMA_SETUP: _java("chat model", "ChatModel.OLLAMA_SETUP"),
    _CM.Java.VLLM_CONNECTION: _java("chat model", "ChatModel.VLLM_CONNECTION"),
    _CM.Java.VLLM_SETUP: _java("chat model", "ChatModel.VLLM_SETUP"),
    _CM.Java.AZURE_OPENAI_CONNECTION: _java("chat model", "ChatModel.AZURE_OPENAI_CONNECTION"),
    _CM.Java.AZURE_OPENAI_SETUP: _java("chat model", "ChatModel.AZURE_OPENAI_SETUP"),
    _CM.Java.GEMINI_CONNECTION: _java("chat model", "ChatModel.GEMINI_CONNECTION"),
    _CM.Java.GEMINI_SETUP: _java("chat model", "ChatModel.GEMINI_SETUP"),
    _CM.Java.BEDROCK_CONNECTION: _java("chat model", "ChatModel.BEDROCK_CONNECTION"),
    _CM.Java.BEDROCK_SETUP: _java("chat model", "ChatModel.BEDROCK_SETUP"),
    # Embedding models: the same class path.
    **{
        name: name
        for name in (
            _EM.OLLAMA_CONNECTION,
            _EM.OLLAMA_SETUP,
            _EM.OPENAI_CONNECTION,
            _EM.OPENAI_SETUP,
            _EM.TONGYI_CONNECTION,
            _EM.TONGYI_SETUP,
            _EM.WORDLLAMA_CONNECTION,
            _EM.WORDLLAMA_SETUP,
        )
    },
    _EM.JAVA_WRAPPER_CONNECTION: _JAVA_EMBEDDING_WRAPPER,
    _EM.JAVA_WRAPPER_SETUP: _JAVA_EMBEDDING_WRAPPER,
    _EM.Java.OLLAMA_CONNECTION: _java("embedding model", "EmbeddingModel.OLLAMA_CONNECTION"),
    _EM.Java.OLLAMA_SETUP: _java("embedding model", "EmbeddingModel.OLLAMA_SETUP"),
    _EM.Java.BEDROCK_CONNECTION: _java("embedding model", None),
    _EM.Java.BEDROCK_SETUP: _java("embedding model", None),
    # Vector stores: Chroma and pgvector here; mem0's at upstream's path when it is added.
    _VS.CHROMA_VECTOR_STORE: _VS.CHROMA_VECTOR_STORE,
    _VS.PGVECTOR_VECTOR_STORE: _VS.PGVECTOR_VECTOR_STORE,
    _VS.MEM0_VECTOR_STORE: _NO_MEM0_VECTOR_STORE,
    **dict.fromkeys(
        [
            _VS.JAVA_WRAPPER_VECTOR_STORE,
            _VS.JAVA_WRAPPER_COLLECTION_MANAGEABLE_VECTOR_STORE,
            _VS.Java.ELASTICSEARCH_VECTOR_STORE,
            _VS.Java.OPENSEARCH_VECTOR_STORE,
            _VS.Java.S3_VECTORS_VECTOR_STORE,
            _VS.Java.MILVUS_VECTOR_STORE,
        ],
        _NO_JAVA_VECTOR_STORE,
    ),
    # MCP: the same class path (flink_agents.integrations.mcp).
    ResourceName.MCP_SERVER: ResourceName.MCP_SERVER,
}
"""Upstream class name -> the class path here, or what is `Missing`."""


def class_name_here(name: str) -> str:
    """The class path ``name`` stands for here: itself unless `CLASS_NAMES` maps it;
    `ResourceUnavailableError` when it names something this project does not have (an
    entry says `Missing` and there is no such module here)."""
    entry = CLASS_NAMES.get(name, name)
    if isinstance(entry, Missing):
        if _module_here(name):
            return name  # the adapter has been added at upstream's path
        raise ResourceUnavailableError(f"{entry.what} ({name})", entry.alternative)
    return entry


def _module_here(name: str) -> bool:
    """Whether the module of class path ``name`` exists here (an adapter whose SDK is not
    installed raises its `ImportError`, which says what to install)."""
    module = name.rpartition(".")[0]
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module == missing or module.startswith(missing + "."):
            return False
        raise
    return True
