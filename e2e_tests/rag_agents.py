"""The retrieval-augmented agent of the context retrieval e2e test (no tests here).

Each input asks the built-in context retrieval action for the documents nearest its query
in a `PgVectorStore` (one store for every subtask); the answer action outputs the ids found,
and fails once, for one chosen input, after the retrieval's calls were recorded. The
embedding model and the store append a line per call they make to a file of the test's, so
the test counts the calls every worker process made.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.vector_stores.vector_store import Document, VectorStoreQuery
from flink_agents.integrations.vector_stores.pgvector.pgvector_vector_store import (
    PgVectorStore,
)
from tests.integrations.vector_stores.words_embedding import WordsEmbeddingSetup

__all__ = ["CountedPgVectorStore", "CountedWordsEmbedding", "RetrievalAgent"]


def _log(path: str, line: str) -> None:
    with open(path, "a") as f:
        f.write(f"{line}\t{os.getpid()}\n")


class CountedWordsEmbedding(WordsEmbeddingSetup):
    """`WordsEmbeddingSetup` that logs each text it embeds to ``log_path``."""

    log_path: str

    def embed(self, text: Any, **kwargs: Any) -> Any:
        if isinstance(text, str):
            _log(self.log_path, f"embed\t{text}")
            return super().embed(text, **kwargs)
        return [self.embed(one, **kwargs) for one in text]


class CountedPgVectorStore(PgVectorStore):
    """`PgVectorStore` that logs each lookup (by its query's text) to ``log_path``."""

    log_path: str

    def query_embeddings(
        self, embeddings: list[list[float]], queries: list[VectorStoreQuery]
    ) -> list[list[Document]]:
        for query in queries:
            _log(self.log_path, f"search\t{query.query_text}")
        return super().query_embeddings(embeddings, queries)


def _ask(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    ctx.sensory_memory["record"] = record
    query = f"{record['topic']} question {record['key']} {record['n']}"
    ctx.send_event(ContextRetrievalRequestEvent(query=query, vector_store="kb", max_results=1))


def _answer(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ContextRetrievalResponseEvent)
    record = ctx.sensory_memory["record"]
    marker = Path(str(ctx.config.get("e2e.trace-dir"))) / "failed-once"
    if event.query == ctx.config.get("e2e.fail-on") and not marker.exists():
        marker.write_text(f"{time.time():.6f}")
        raise RuntimeError(f"injected failure after the retrieval of {event.query!r}")
    ctx.send_event(
        OutputEvent(
            output={
                "key": record["key"],
                "n": record["n"],
                "query": event.query,
                "ids": [d.id for d in event.documents],
            }
        )
    )


class RetrievalAgent(Agent):
    """One context retrieval per input, from a pgvector store."""

    def __init__(self, url: str, table: str, log_path: str) -> None:
        super().__init__()
        self.add_action("ask", [InputEvent], _ask)
        self.add_action("answer", [ContextRetrievalResponseEvent], _answer)
        self.add_resource(
            "embedder",
            ResourceType.EMBEDDING_MODEL,
            ResourceDescriptor(clazz=CountedWordsEmbedding, log_path=log_path),
        )
        self.add_resource(
            "kb",
            ResourceType.VECTOR_STORE,
            ResourceDescriptor(
                clazz=CountedPgVectorStore,
                url=url,
                table=table,
                embedding_model="embedder",
                log_path=log_path,
            ),
        )
