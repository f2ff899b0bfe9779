"""The built-in context retrieval action: ``ContextRetrievalRequestEvent`` ->
``ContextRetrievalResponseEvent``.

Two durable calls per request, so with a durable call log a restore makes neither again:

1. the query's embedding, by the vector store's embedding model: its digest covers the
   store's name, its embedding model's, the query text and ``max_results``;
2. the store lookup with that vector: its digest covers the same.

A record made for another query, another store or another ``max_results`` at the same
place of a run (a second runner over one store, a job run again) therefore never answers
this request: the code-path-changed rule drops it and the call is made live. The calls
record plain JSON (the vector; the documents' dicts), nothing else of the store.

Many runs in flight ask at once: their calls go out batched
(`flink_agents.runtime.call_batches`: those of one turn of the event loop, and those that
come while the previous batch is out): one embedding request for the queries of one
store, one lookup for the vectors of one store and ``max_results``; a store's batches go
at least ``rag.batch-interval-s`` apart unless they hold a request of every key that asked
lately, so under load they grow and a lone key never waits. Each run still
records its own calls; a query that makes a batch fail for a reason of its own (not a
retryable one) is tried alone, so it fails only its own request.

A store that is not declared, cannot be reached, or holds vectors of another dimension
fails the request with a `VectorStoreError` naming the resource (its subclasses
`VectorStoreUnavailableError`, `VectorDimensionError`); the error strategy and
``input-failure.policy`` then apply as to any failed action. The records of a failed
request's calls are dropped, so a restart tries them again.
"""

from __future__ import annotations

import asyncio
import functools
from contextvars import ContextVar
from typing import Any

from pydantic import TypeAdapter

from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.errors import VectorStoreError, VectorStoreUnavailableError
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import Event
from flink_agents.api.redaction import redact
from flink_agents.api.resource import ResourceType
from flink_agents.api.vector_stores.vector_store import (
    BaseVectorStore,
    Document,
    VectorStoreQuery,
)
from flink_agents.plan.agent_plan import ActionSpec
from flink_agents.runtime.action_context import ActionContext, builtin_action, key_text
from flink_agents.runtime.call_batches import CallBatcher

__all__ = ["CONTEXT_RETRIEVAL_ACTION", "context_retrieval_action", "context_retrieval_spec"]

CONTEXT_RETRIEVAL_ACTION = "_context_retrieval_action"
"""Name of the built-in context retrieval action."""

_DOCUMENTS: TypeAdapter[list[Document]] = TypeAdapter(list[Document])

_EMBEDDINGS: CallBatcher[str, list[float]] = CallBatcher()
"""The query embeddings asked together, one request per store."""
_LOOKUPS: CallBatcher[tuple[list[float], str], list[dict[str, Any]]] = CallBatcher(
    item_fault=lambda exc: not isinstance(exc, VectorStoreUnavailableError)
)
"""The store lookups asked together, one per store and ``max_results``."""
_BATCHING: ContextVar[tuple[float, str | None]] = ContextVar("_BATCHING", default=(0.0, None))
"""The running request's ``rag.batch-interval-s`` and its run's key (the `CallBatcher`'s
``interval_s`` and ``caller``): not arguments of the durable calls, whose identity is what
they ask."""


def context_retrieval_spec() -> ActionSpec:
    """The context retrieval action, as a plan entry."""
    return ActionSpec(
        name=CONTEXT_RETRIEVAL_ACTION,
        event_types=(ContextRetrievalRequestEvent.EVENT_TYPE,),
        func=builtin_action(context_retrieval_action),
        config={},
        is_async=True,
    )


async def context_retrieval_action(event: Event, ctx: ActionContext) -> None:
    """Search the request's vector store and answer with what it found."""
    if not isinstance(event, ContextRetrievalRequestEvent):
        return
    name = event.vector_store
    store = _store(ctx, name)
    model = store.embedding_model_name
    first_call = ctx.next_call_index
    identity = (name, model, event.query, event.max_results)
    batching = _BATCHING.set(
        (ctx.config.get(AgentExecutionOptions.RAG_BATCH_INTERVAL), key_text(ctx.key))
    )
    try:
        embedding = await ctx.durable_execute_async(
            functools.partial(_embed_query, store), *identity
        )
        raw = await ctx.durable_execute_async(
            functools.partial(_search, store, embedding), *identity
        )
    except Exception as exc:
        # A failed request fails its run: after a restart its calls are made again.
        await ctx.forget_durable_calls(first_call)
        raise _retrieval_error(exc, name, model) from exc
    finally:
        _BATCHING.reset(batching)
    documents = _DOCUMENTS.validate_python(raw)
    response = ContextRetrievalResponseEvent(
        request_id=event.id, query=event.query, documents=documents
    )
    ctx.send_own_event(response)


def _store(ctx: ActionContext, name: str) -> BaseVectorStore:
    try:
        store = ctx.get_resource(name, ResourceType.VECTOR_STORE)
    except KeyError as exc:
        raise VectorStoreError(
            f"context retrieval: {exc.args[0] if exc.args else exc}", resource=name
        ) from None
    if not isinstance(store, BaseVectorStore):
        raise VectorStoreError(
            f"context retrieval: resource {name!r} is a {type(store).__name__}, not a vector store",
            resource=name,
        )
    return store


async def _embed_query(
    store: BaseVectorStore, name: str, model: str | None, query: str, max_results: int
) -> list[float]:
    """Durable call 1: the query's vector (the arguments after ``store`` are its identity).
    Awaited on the loop, as a chat request is: it takes no action thread, and the queries
    asked at once go in one request."""
    return await _EMBEDDINGS.submit(
        id(store), query, functools.partial(_embed_queries, store), *_BATCHING.get()
    )


async def _embed_queries(store: BaseVectorStore, queries: list[str]) -> list[list[float]]:
    try:
        vectors = await store.aembed_queries(queries)
    except VectorStoreError:
        raise
    except Exception as exc:
        failed = _EmbeddingFailed(f"{type(exc).__name__}: {exc}")
        failed.retryable = bool(getattr(exc, "retryable", False))
        raise failed from exc
    return [[float(x) for x in vector] for vector in vectors]


async def _search(
    store: BaseVectorStore,
    embedding: list[float],
    name: str,
    model: str | None,
    query: str,
    max_results: int,
) -> list[dict[str, Any]]:
    """Durable call 2: the documents nearest ``embedding``, as JSON dicts. The lookups
    asked together go in one call of the store, on a worker thread."""
    return await _LOOKUPS.submit(
        (id(store), max_results),
        (embedding, query),
        functools.partial(_search_many, store, max_results),
        *_BATCHING.get(),
    )


async def _search_many(
    store: BaseVectorStore, max_results: int, items: list[tuple[list[float], str]]
) -> list[list[dict[str, Any]]]:
    found = await asyncio.to_thread(
        store.query_embeddings,
        [embedding for embedding, _ in items],
        [VectorStoreQuery(query_text=query, limit=max_results) for _, query in items],
    )
    return [[doc.model_dump(mode="json", exclude={"embedding"}) for doc in docs] for docs in found]


class _EmbeddingFailed(Exception):
    """The embedding model failed (turned into a `VectorStoreError` naming it)."""

    retryable: bool = False
    """Whether the model's error was retryable (a batch of queries is then not split)."""


def _retrieval_error(exc: BaseException, name: str, model: str | None) -> VectorStoreError:
    """``exc`` as a `VectorStoreError` naming the resource that failed."""
    if isinstance(exc, _EmbeddingFailed) or type(exc).__name__ == "_EmbeddingFailed":
        return VectorStoreError(
            redact(f"context retrieval from {name!r}: embedding model {model!r} failed: {exc}"),
            resource=model or name,
        )
    kind = type(exc) if isinstance(exc, VectorStoreError) else VectorStoreError
    detail = exc.message if isinstance(exc, VectorStoreError) else f"{type(exc).__name__}: {exc}"
    return kind(redact(f"vector store {name!r} failed: {detail}"), resource=name)
