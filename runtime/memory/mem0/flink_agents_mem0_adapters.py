"""The agent's chat model, embedding model and vector store as mem0 sees them.

mem0's ``Memory`` talks to an LLM (``generate_response``), an embedder (``embed``) and a
vector store (``insert`` / ``search`` / ``get`` / ``list`` / ``update`` / ``delete``).
`FlinkAgentsLLM`, `FlinkAgentsEmbedding` and `FlinkAgentsMem0VectorStore` put the agent's
resources behind those interfaces, and `agent_memory` builds a ``Memory`` on them without
mem0's factories: nothing of mem0's own providers is created, so mem0 reaches no server
but the agent's own.

mem0 is imported with its telemetry off (`flink_agents.api.memory._mem0.import_mem0`):
it opens no connection of its own.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar, Literal

from flink_agents.api.memory._mem0 import import_mem0
from flink_agents.api.message import ChatMessage, MessageRole

__all__ = [
    "FlinkAgentsEmbedding",
    "FlinkAgentsLLM",
    "FlinkAgentsMem0VectorStore",
    "OutputData",
    "agent_memory",
]


class OutputData:
    """One record as mem0 reads it from a vector store (``id``, ``score``, ``payload``)."""

    __slots__ = ("id", "payload", "score")

    def __init__(self, id: str | None, score: float | None, payload: dict[str, Any] | None) -> None:
        self.id = id
        self.score = score
        self.payload = payload


class FlinkAgentsLLM:
    """mem0's LLM: the agent's chat model setup (its ``chat``)."""

    def __init__(self, chat_model: Any, metric_records: Any = None) -> None:
        self._chat_model = chat_model
        self._metric_records = metric_records

    def generate_response(
        self,
        messages: list[dict[str, str]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str = "auto",
        **kwargs: Any,
    ) -> str:
        """The model's answer to mem0's messages, as text (mem0 parses the JSON in it)."""
        chat_messages = [
            ChatMessage(role=MessageRole(message["role"]), content=message["content"])
            for message in messages
        ]
        response = self._chat_model.chat(messages=chat_messages)
        extra = getattr(response, "extra_args", None)
        if self._metric_records is not None and extra:
            self._metric_records.put(extra)
        return response.content


class FlinkAgentsEmbedding:
    """mem0's embedder: the agent's embedding model setup (its ``embed``)."""

    def __init__(self, embedding_model: Any) -> None:
        self._embedding_model = embedding_model

    def embed(
        self, text: str, memory_action: Literal["add", "search", "update"] | None = None
    ) -> list[float]:
        """The embedding of ``text``."""
        return list(self._embedding_model.embed(text))


def _payload(document: Any) -> dict[str, Any]:
    """A document as mem0's payload: its metadata, and its text under ``data``."""
    payload = dict(document.metadata or {})
    payload.setdefault("data", document.content)
    return payload


class FlinkAgentsMem0VectorStore:
    """mem0's vector store: one collection of the agent's collection-managing vector store.

    mem0 hands over vectors it computed, so the store's embedding hooks
    (``_add_embedding``, ``_query_embedding``, ``_update_embedding``) are called, not its
    text API. Filters (mem0's scope: ``user_id``, ``agent_id``, ``run_id``, and the
    caller's metadata) go to the store unchanged."""

    DEFAULT_COLLECTION: ClassVar[str] = "flink_agents_mem0_ltm"

    def __init__(self, vector_store: Any) -> None:
        self._store = vector_store
        self.collection_name: str = (
            getattr(vector_store, "collection", None) or self.DEFAULT_COLLECTION
        )
        vector_store.create_collection_if_not_exists(self.collection_name)

    def _document(self, id: str, vector: list[float] | None, payload: dict[str, Any]) -> Any:
        from flink_agents.api.vector_stores.vector_store import Document

        return Document(id=id, content=payload.get("data", ""), metadata=payload, embedding=vector)

    def create_col(self, name: str, vector_size: int | None = None, distance: Any = None) -> None:
        """Use (and create when missing) the collection ``name``."""
        self.collection_name = name
        self._store.create_collection_if_not_exists(name)

    def insert(
        self,
        vectors: list[list[float]],
        payloads: list[dict[str, Any]] | None = None,
        ids: list[str] | None = None,
    ) -> None:
        """Store records with their vectors."""
        payloads = payloads if payloads is not None else [{} for _ in vectors]
        ids = ids if ids is not None else [str(uuid.uuid4()) for _ in vectors]
        documents = [
            self._document(id, vector, dict(payload or {}))
            for id, vector, payload in zip(ids, vectors, payloads, strict=True)
        ]
        self._store._add_embedding(
            documents=documents,
            collection_name=self.collection_name,
            **self._store.store_kwargs,
        )

    def search(
        self,
        query: str,
        vectors: list[float] | list[list[float]],
        limit: int = 5,
        filters: dict[str, Any] | None = None,
    ) -> list[OutputData]:
        """The records closest to the query vector."""
        embedding = vectors[0] if vectors and isinstance(vectors[0], list) else vectors
        documents = self._store._query_embedding(
            embedding=embedding,
            limit=limit,
            collection_name=self.collection_name,
            filters=filters or None,
            **self._store.store_kwargs,
        )
        return [OutputData(doc.id, doc.score, _payload(doc)) for doc in documents]

    def get(self, vector_id: str) -> OutputData | None:
        """The record ``vector_id``, or None."""
        documents = self._store.get(ids=[vector_id], collection_name=self.collection_name)
        if not documents:
            return None
        return OutputData(documents[0].id, None, _payload(documents[0]))

    def list(
        self, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[list[OutputData]]:
        """The records matching ``filters`` (one list in a list, as mem0 reads it)."""
        documents = self._store.get(
            collection_name=self.collection_name, filters=filters or None, limit=limit
        )
        return [[OutputData(doc.id, None, _payload(doc)) for doc in documents]]

    def update(
        self,
        vector_id: str,
        vector: list[float] | None = None,
        payload: dict[str, Any] | None = None,
    ) -> None:
        """Replace a record's vector and/or payload (what is not given is kept)."""
        if vector is None or payload is None:
            existing = self._store.get(ids=[vector_id], collection_name=self.collection_name)
            if not existing:
                raise ValueError(
                    f"no record {vector_id!r} in the collection {self.collection_name!r}"
                )
            payload = payload if payload is not None else _payload(existing[0])
            vector = vector if vector is not None else existing[0].embedding
        self._store._update_embedding(
            documents=[self._document(vector_id, vector, dict(payload))],
            collection_name=self.collection_name,
            **self._store.store_kwargs,
        )

    def delete(self, vector_id: str) -> None:
        """Delete the record ``vector_id``."""
        self._store.delete(ids=[vector_id], collection_name=self.collection_name)

    def list_cols(self) -> list[str]:
        """The collection in use (mem0 asks for the list, never uses it)."""
        return [self.collection_name]

    def col_info(self) -> dict[str, Any]:
        """The collection's name."""
        return {"name": self.collection_name}

    def delete_col(self) -> None:
        """Delete the collection in use."""
        self._store.delete_collection(self.collection_name)

    def reset(self) -> None:
        """Empty the collection in use."""
        self._store.delete_collection(self.collection_name)
        self._store.create_collection_if_not_exists(self.collection_name)


def agent_memory(
    chat_model: Any, embedding_model: Any, vector_store: Any, metric_records: Any = None
) -> Any:
    """A mem0 ``Memory`` on the agent's chat model, embedding model and vector store.

    Its change history is kept in memory (an in-memory SQLite database), not in a file:
    the items themselves live in the vector store."""
    main = import_mem0()
    from mem0.configs.base import MemoryConfig

    config = MemoryConfig(history_db_path=":memory:")

    class AgentMemory(main.Memory):  # type: ignore[misc, name-defined]
        """mem0's ``Memory`` with the agent's resources instead of mem0's providers."""

        def __init__(self) -> None:  # mem0's sets the same attributes from its factories
            self.config = config
            self.custom_fact_extraction_prompt = config.custom_fact_extraction_prompt
            self.custom_update_memory_prompt = config.custom_update_memory_prompt
            self.embedding_model = FlinkAgentsEmbedding(embedding_model)
            self.vector_store = FlinkAgentsMem0VectorStore(vector_store)
            self.llm = FlinkAgentsLLM(chat_model, metric_records)
            self.db = main.SQLiteManager(config.history_db_path)
            self.collection_name = self.vector_store.collection_name
            self.api_version = config.version
            self.reranker = None
            self.enable_graph = False
            self.graph = None

    return AgentMemory()
