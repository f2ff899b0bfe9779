"""Benchmark of retrieval-augmented answers on a local mini-cluster (thread mode, parallelism 1).

Every line is a job of `flink_runtime.py`'s shape (a source of `--records` inputs over
`--keys` keys, the agent operator, a map stamping the time); throughput is records over
the time between the first and the last stamped output. The model and the embedding
model are the OpenAI adapters (the real SDK) against this bench's provider in this
process (`mock_answer` on the benches' `fake_provider.FakeProvider`: the answers of
`examples/mock_model_server.py`, given at once over kept-alive connections). Lines:

- ``one-action``: an agent whose one action sends the input back (no model);
- ``chat``: a chat round trip (input -> chat request -> response -> output), the same
  prompt without context: the agent without retrieval;
- ``chroma``: the same agent retrieving first: input -> ``ContextRetrievalRequestEvent``
  (the built-in action embeds the question through the provider and looks it up in
  an embedded Chroma store of `--documents` documents) -> the top three in the prompt ->
  chat round trip -> output;
- ``pgvector``: the same with `PgVectorStore` (``--postgres-url``, else
  ``FLINK_AGENTS_TEST_POSTGRES_URL``: ``tools/postgres/start.sh``); skipped without one;
- ``chroma-local``, ``pgvector-local``: the same two, the question embedded by the local
  WordLlama model in the process instead of the provider (what the store and the
  runtime cost, without an embedding request);
- ``chroma-httpx``, ``pgvector-httpx``: the first two with the embedding connection on the
  SDK's httpx client (``http_transport="httpx"``) instead of its aiohttp one (the default,
  which every other line has, the chat connection of every line too).

The lines take turns (`--runs` each, the best kept). Printed per line: records/s,
us/record, the ratio to the ``chat`` line's records/s and, for the retrieval lines, the
cost of the retrieval step (us/record over the chat line's) as a ratio to the cost of a
chat round trip (the chat line's us/record over the one-action line's).

    flock /tmp/flink.lock python tools/bench/rag.py --records 400 --keys 100
    flock /tmp/flink.lock python tools/bench/rag.py --lines chat,chroma --runs 3

Target (issue 32): the retrieval step costs at most half of a chat round trip (ratio <= 0.5).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]  # the other benches; examples/

import cloudpickle  # noqa: E402
import flink_runtime  # noqa: E402
from fake_provider import FakeProvider, Reply, json_reply  # noqa: E402
from flink_runtime import one_action_agent, run_agent, throughput  # noqa: E402

from examples.mock_model_server import (  # noqa: E402
    embedding_of,
    embeddings_reply_to,
    reply_to,
)
from flink_agents.api.agents.agent import Agent  # noqa: E402
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent  # noqa: E402
from flink_agents.api.events.context_retrieval_event import (  # noqa: E402
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import Event, InputEvent, OutputEvent  # noqa: E402
from flink_agents.api.message import ChatMessage  # noqa: E402
from flink_agents.api.resource import ResourceDescriptor, ResourceName, ResourceType  # noqa: E402
from flink_agents.api.runner_context import RunnerContext  # noqa: E402
from flink_agents.api.vector_stores.vector_store import Document  # noqa: E402

# The job's functions from the other bench go with the job (Flink's Python workers do not
# have tools/bench on their path).
cloudpickle.register_pickle_by_value(flink_runtime)

DIMENSIONS = 64
"""The embeddings' length (the mock server's default)."""
MAX_RESULTS = 3
"""Documents retrieved per question."""
TOPICS = ("refund", "shipping", "password", "invoice", "warranty", "delivery", "account", "order")

# ------------------------------------------------------------------ the provider


async def mock_answer(path: str, body: dict[str, Any]) -> Reply:
    """The mock server's bodies (`reply_to`, `embeddings_reply_to`), given at once: served
    by the benches' `FakeProvider`, a provider whose own cost hardly shows (the example
    mock server takes a thread and a connection per request)."""
    if path.endswith("/embeddings"):
        status, answer = embeddings_reply_to(body)
        return json_reply(answer, status)
    return json_reply(reply_to(body))


# ------------------------------------------------------------------ the agents


def question(record: dict[str, Any]) -> str:
    topic = TOPICS[(int(record["key"][1:]) + record["n"]) % len(TOPICS)]
    return f"How do I get help with my {topic} number {record['n']}?"


def prompt(query: str, context: str) -> str:
    return f"Context:\n{context}\n\nQuestion: {query}\nAnswer from the context."


async def ask_directly(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    ctx.sensory_memory["record"] = record
    message = ChatMessage.user(prompt(question(record), ""))
    ctx.send_event(ChatRequestEvent(model="bench_model", messages=[message]))


async def look_up(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    ctx.sensory_memory["record"] = record
    ctx.send_event(
        ContextRetrievalRequestEvent(
            query=question(record), vector_store="kb", max_results=MAX_RESULTS
        )
    )


async def ask_with_context(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ContextRetrievalResponseEvent)
    context = "\n".join(f"{i + 1}. {doc.content}" for i, doc in enumerate(event.documents))
    message = ChatMessage.user(prompt(event.query, context))
    ctx.send_event(ChatRequestEvent(model="bench_model", messages=[message]))


async def answer(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ChatResponseEvent)
    record = dict(ctx.sensory_memory["record"])
    record["answer"] = event.response.text if event.response is not None else None
    ctx.send_event(OutputEvent(output=record))


def _models(agent: Agent, base_url: str, embedding_transport: str | None = None) -> Agent:
    """The chat and embedding models of the mock server at ``base_url`` (OpenAI adapters;
    the embedding connection's ``http_transport``: ``embedding_transport``)."""
    agent.add_resource(
        "bench_connection",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(
            clazz=ResourceName.ChatModel.OPENAI_COMPLETIONS_CONNECTION,
            base_url=base_url,
            api_key="sk-bench",
        ),
    )
    agent.add_resource(
        "bench_model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(
            clazz=ResourceName.ChatModel.OPENAI_COMPLETIONS_SETUP, connection="bench_connection"
        ),
    )
    agent.add_resource(
        "embedding_connection",
        ResourceType.EMBEDDING_MODEL_CONNECTION,
        ResourceDescriptor(
            clazz=ResourceName.EmbeddingModel.OPENAI_CONNECTION,
            base_url=base_url,
            api_key="sk-bench",
            http_transport=embedding_transport,
        ),
    )
    agent.add_resource(
        "embedder",
        ResourceType.EMBEDDING_MODEL,
        ResourceDescriptor(
            clazz=ResourceName.EmbeddingModel.OPENAI_SETUP,
            connection="embedding_connection",
            model="text-embedding-3-small",
            dimensions=DIMENSIONS,
        ),
    )
    return agent


def chat_agent(base_url: str) -> Agent:
    """The agent without retrieval."""
    agent = Agent()
    agent.add_action("ask", [InputEvent], ask_directly)
    agent.add_action("answer", [ChatResponseEvent], answer)
    return _models(agent, base_url)


def rag_agent(
    base_url: str, store: ResourceDescriptor, embedding_transport: str | None = None
) -> Agent:
    """The agent retrieving from ``store`` (named ``kb``) first."""
    agent = Agent()
    agent.add_action("look_up", [InputEvent], look_up)
    agent.add_action("ask", [ContextRetrievalResponseEvent], ask_with_context)
    agent.add_action("answer", [ChatResponseEvent], answer)
    agent.add_resource("kb", ResourceType.VECTOR_STORE, store)
    agent.add_resource(
        "local_connection",
        ResourceType.EMBEDDING_MODEL_CONNECTION,
        ResourceDescriptor(clazz=ResourceName.EmbeddingModel.WORDLLAMA_CONNECTION),
    )
    agent.add_resource(
        "local_embedder",
        ResourceType.EMBEDDING_MODEL,
        ResourceDescriptor(
            clazz=ResourceName.EmbeddingModel.WORDLLAMA_SETUP, connection="local_connection"
        ),
    )
    return _models(agent, base_url, embedding_transport)


# ------------------------------------------------------------------ the knowledge base


def documents(count: int, local: bool) -> list[Document]:
    """``count`` short support documents, embedded as the provider embeds them (``local``:
    as the local WordLlama model does)."""
    texts = []
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        texts.append(f"Article {i}: for help with a {topic}, open the {topic} page, step {i}.")
    if local:
        from flink_agents.integrations.embedding_models.local.wordllama_embedding_model import (
            WordLlamaEmbeddingModelConnection,
        )

        vectors: Any = WordLlamaEmbeddingModelConnection().embed(texts)
    else:
        vectors = [embedding_of(text, DIMENSIONS) for text in texts]
    return [
        Document(id=f"doc{i}", content=text, embedding=vector)
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]


def _embedder(local: bool) -> str:
    return "local_embedder" if local else "embedder"


def chroma_store(directory: str, count: int, local: bool) -> ResourceDescriptor:
    from flink_agents.integrations.vector_stores.chroma.chroma_vector_store import (
        ChromaVectorStore,
    )

    collection = f"bench_kb_{_embedder(local)}"
    filler = ChromaVectorStore(persist_directory=directory, collection=collection)
    filler.add(documents(count, local))
    filler.close()
    return ResourceDescriptor(
        clazz=ResourceName.VectorStore.CHROMA_VECTOR_STORE,
        embedding_model=_embedder(local),
        persist_directory=directory,
        collection=collection,
    )


def pgvector_store(url: str, table: str, count: int, local: bool) -> ResourceDescriptor:
    from flink_agents.integrations.vector_stores.pgvector.pgvector_vector_store import (
        PgVectorStore,
    )

    collection = f"bench_kb_{_embedder(local)}"
    PgVectorStore(url=url, table=table, collection=collection).add(documents(count, local))
    return ResourceDescriptor(
        clazz=ResourceName.VectorStore.PGVECTOR_VECTOR_STORE,
        embedding_model=_embedder(local),
        url=url,
        table=table,
        collection=collection,
    )


def drop_tables(url: str, table: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as connection:
        for name in (table, f"{table}_collections"):
            connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


# ------------------------------------------------------------------ the run

LINES = (
    "one-action",
    "chat",
    "chroma",
    "pgvector",
    "chroma-local",
    "pgvector-local",
    "chroma-httpx",
    "pgvector-httpx",
)
"""The lines, by the names `--lines` takes."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark of retrieval-augmented answers.")
    parser.add_argument("--records", type=int, default=400)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--documents", type=int, default=200, help="in the knowledge base")
    parser.add_argument("--max-in-flight", type=int, default=100)
    parser.add_argument("--runs", type=int, default=2, help="runs per line; best kept")
    parser.add_argument("--lines", default=",".join(LINES), help=f"of {','.join(LINES)}")
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("FLINK_AGENTS_TEST_POSTGRES_URL"),
        help="PostgreSQL with pgvector (default: FLINK_AGENTS_TEST_POSTGRES_URL)",
    )
    args = parser.parse_args(argv)
    names = [name for name in args.lines.split(",") if name]
    if set(names) - set(LINES):
        parser.error(f"unknown lines: {sorted(set(names) - set(LINES))}")
    if not args.postgres_url and any(name.startswith("pgvector") for name in names):
        print("pgvector: no --postgres-url nor FLINK_AGENTS_TEST_POSTGRES_URL: skipped")
        names = [name for name in names if not name.startswith("pgvector")]
    # The ratios need the chat and one-action lines.
    names = list(dict.fromkeys(["one-action", "chat", *names]))
    table = f"bench_rag_{uuid.uuid4().hex[:8]}"
    with (
        tempfile.TemporaryDirectory(prefix="bench-rag-") as directory,
        FakeProvider(mock_answer) as server,
    ):
        try:
            lines: dict[str, Callable[[], Agent]] = {
                "one-action": one_action_agent,
                "chat": lambda: chat_agent(server.base_url),
            }
            stores: dict[tuple[bool, bool], ResourceDescriptor] = {}  # filled once each
            for name in names:
                if name.startswith(("chroma", "pgvector")):
                    local = name.endswith("-local")
                    kind = (name.startswith("chroma"), local)
                    if kind in stores:
                        store = stores[kind]
                    elif name.startswith("chroma"):
                        chroma = str(Path(directory) / "chroma")
                        store = stores[kind] = chroma_store(chroma, args.documents, local)
                    else:
                        store = stores[kind] = pgvector_store(
                            args.postgres_url, table, args.documents, local
                        )
                    transport = "httpx" if name.endswith("-httpx") else None
                    lines[name] = functools.partial(rag_agent, server.base_url, store, transport)
            return _measure(args, names, lines)
        finally:
            if any(name.startswith("pgvector") for name in names):
                drop_tables(args.postgres_url, table)


def _measure(
    args: argparse.Namespace, names: list[str], lines: dict[str, Callable[[], Agent]]
) -> int:
    print(
        f"python {sys.version.split()[0]}, {args.records} records over {args.keys} keys, "
        f"thread mode, parallelism 1, max in flight {args.max_in_flight}; chat and embedding "
        f"models: a 0 ms provider through the OpenAI adapters; {args.documents} "
        f"documents, top {MAX_RESULTS}; {args.runs} runs per line, taking turns, best kept"
    )
    rates: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.runs):
        for name in names:
            outputs = run_agent(
                args.records, args.keys, 0, 0.0, args.max_in_flight, agent=lines[name]()
            )
            if len(outputs) != args.records:
                raise RuntimeError(f"{name}: {len(outputs)} outputs for {args.records} inputs")
            if (
                name.startswith(("chroma", "pgvector"))
                and not name.endswith("-local")
                and not all("Article" in o["answer"] for o in outputs)
            ):
                raise RuntimeError(f"{name}: an answer without retrieved context")
            rates[name].append(throughput(outputs))
    best = {name: max(found) for name, found in rates.items()}
    us = {name: 1e6 / rate for name, rate in best.items()}
    round_trip = us["chat"] - us["one-action"]
    for name in names:
        line = (
            f"    {name:14s} {best[name]:6.0f} answers/s  {us[name]:7.1f} us/record  "
            f"ratio to chat {best[name] / best['chat']:.2f}"
        )
        if name.startswith(("chroma", "pgvector")):
            retrieval = us[name] - us["chat"]
            share = retrieval / round_trip
            line += f"  retrieval {retrieval:.0f} us = {share:.2f} of a chat round trip"
        runs = " / ".join(f"{r:.0f}" for r in rates[name])
        print(f"{line}  (runs: {runs})")
    print(f"    chat round trip: {round_trip:.0f} us/record; target: retrieval <= 0.5 of it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
