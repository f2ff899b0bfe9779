"""The built-in context retrieval action on the local runner: a RAG step over a real
embedded Chroma store, its durable calls, and its refusals."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("chromadb", reason="the chroma extra is not installed")

from flink_agents.api import (
    Agent,
    AgentsExecutionEnvironment,
    Event,
    InputEvent,
    OutputEvent,
    ResourceDescriptor,
    ResourceType,
    RunnerContext,
)
from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.errors import ChatModelError, VectorDimensionError, VectorStoreError
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.resource import ResourceName
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.integrations.vector_stores.chroma.chroma_vector_store import (
    ChromaVectorStore,
)
from flink_agents.runtime.call_batches import CallBatcher
from flink_agents.runtime.errors import ActionExecutionError
from tests.integrations.vector_stores.words_embedding import WordsEmbeddingSetup
from tests.runtime.chat_agents import run_local

KNOWLEDGE = [
    Document(id="refunds", content="refund policy"),
    Document(id="shipping", content="shipping delay"),
    Document(id="passwords", content="password reset"),
]


def _knowledge_base(directory: Path) -> None:
    store = ChromaVectorStore(persist_directory=str(directory), collection="kb_test")
    store.embedding_model = WordsEmbeddingSetup()
    store.add([d.model_copy() for d in KNOWLEDGE])


class DownEmbedding(WordsEmbeddingSetup):
    """An embedding model whose provider is down."""

    def embed(self, text: Any, **kwargs: Any) -> Any:
        raise ChatModelError("connection refused", retryable=True, kind="connection")


def rag_agent(
    directory: Path,
    *,
    store: str = "kb",
    dimension: int = 6,
    auto_create: bool = True,
    embedding: type[WordsEmbeddingSetup] = WordsEmbeddingSetup,
    async_ask: bool = False,
) -> Agent:
    """Each input is a question; the output is (question, ids of the 2 nearest docs).
    ``async_ask``: the first action is an ``async def``, so every key's request is sent in
    the same turn of the loop (as with many runs in flight)."""

    def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(
            ContextRetrievalRequestEvent(query=str(event.input), vector_store=store, max_results=2)
        )

    async def ask_async(event: Event, ctx: RunnerContext) -> None:
        ask(event, ctx)

    def answer(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ContextRetrievalResponseEvent)
        ctx.send_event(OutputEvent(output=(event.query, [d.id for d in event.documents])))

    agent = Agent()
    agent.add_action("ask", [InputEvent], ask_async if async_ask else ask)
    agent.add_action("answer", [ContextRetrievalResponseEvent], answer)
    agent.add_resource(
        "embedder",
        ResourceType.EMBEDDING_MODEL,
        ResourceDescriptor(clazz=embedding, dimension=dimension),
    )
    agent.add_resource(
        "kb",
        ResourceType.VECTOR_STORE,
        ResourceDescriptor(
            clazz=ResourceName.VectorStore.CHROMA_VECTOR_STORE,
            embedding_model="embedder",
            persist_directory=str(directory),
            collection="kb_test",
            auto_create_collection=auto_create,
        ),
    )
    return agent


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    directory = tmp_path / "kb"
    _knowledge_base(directory)
    WordsEmbeddingSetup.embedded.clear()
    return directory


def _answers(outputs: list[Any]) -> dict[Any, Any]:
    return {o.key: o.value for o in outputs}


def test_each_key_gets_the_documents_nearest_its_own_query(kb: Path) -> None:
    outputs, _ = run_local(
        rag_agent(kb),
        [
            {"key": "alice", "value": "refund please"},
            {"key": "bob", "value": "my password"},
        ],
    )
    answers = _answers(outputs)
    assert answers["alice"][0] == "refund please" and answers["alice"][1][0] == "refunds"
    assert answers["bob"][0] == "my password" and answers["bob"][1][0] == "passwords"
    assert len(answers["alice"][1]) == 2
    assert sorted(WordsEmbeddingSetup.embedded) == ["my password", "refund please"]


def _run_with_store(
    agent: Agent, url: str, inputs: list[dict[str, Any]], config: dict[str, Any] | None = None
) -> list[Any]:
    env = AgentsExecutionEnvironment.get_execution_environment(
        config={"durable-execution.store": url, **(config or {})}
    )
    results = env.from_list(inputs).apply(agent).to_list()
    env.execute()
    return [v for r in results for v in r.values()]


def test_a_rerun_replays_the_embedding_and_the_lookup(kb: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/calls.db"
    inputs = [{"key": "alice", "value": "refund please"}]
    first = _run_with_store(rag_agent(kb), url, inputs)
    assert WordsEmbeddingSetup.embedded == ["refund please"]
    # The store changes after the recorded lookup: a replay answers from the record.
    ChromaVectorStore(persist_directory=str(kb), collection="kb_test").delete(ids=["refunds"])
    again = _run_with_store(rag_agent(kb), url, inputs)
    assert again == first and first[0][1][0] == "refunds"
    assert WordsEmbeddingSetup.embedded == ["refund please"]  # not embedded again


def test_a_recorded_answer_never_answers_another_query(kb: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/calls.db"
    _run_with_store(rag_agent(kb), url, [{"key": "alice", "value": "refund please"}])
    # Same key, same place in its run, another question: made live, not replayed.
    [(query, ids)] = _run_with_store(rag_agent(kb), url, [{"key": "alice", "value": "my password"}])
    assert query == "my password" and ids[0] == "passwords"
    assert WordsEmbeddingSetup.embedded == ["refund please", "my password"]


def test_a_rerun_with_another_batch_interval_replays_its_records(kb: Path, tmp_path: Path) -> None:
    # How far apart batches go is not part of what a call asks: changing it between two
    # runs of a job makes no recorded call again.
    url = f"sqlite:///{tmp_path}/calls.db"
    inputs = [{"key": "alice", "value": "refund please"}]
    first = _run_with_store(rag_agent(kb), url, inputs, {"rag.batch-interval-s": 0.0})
    again = _run_with_store(rag_agent(kb), url, inputs, {"rag.batch-interval-s": 0.5})
    assert again == first
    assert WordsEmbeddingSetup.embedded == ["refund please"]


def test_the_batch_interval_option_spaces_the_stores_batches(
    kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    intervals: list[float] = []
    callers: list[Any] = []
    submit = CallBatcher.submit

    async def recording(
        self: CallBatcher[Any, Any],
        group: Any,
        item: Any,
        call: Any,
        interval_s: float = 0.0,
        caller: Any = None,
    ) -> Any:
        intervals.append(interval_s)
        callers.append(caller)
        return await submit(self, group, item, call, interval_s, caller)

    monkeypatch.setattr(CallBatcher, "submit", recording)
    inputs = [{"key": "alice", "value": "refund please"}]
    run_local(rag_agent(kb), inputs, {AgentExecutionOptions.RAG_BATCH_INTERVAL.key: 0.25})
    assert intervals == [0.25, 0.25]  # the embedding request and the lookup
    intervals.clear()
    run_local(rag_agent(kb), inputs)
    assert intervals == [0.02, 0.02]  # the default
    assert callers == ["alice"] * 4  # each run's calls come one after another


def test_an_empty_query_is_refused_at_the_door() -> None:
    with pytest.raises(ValueError, match="non-empty query"):
        ContextRetrievalRequestEvent(query="  ", vector_store="kb")
    with pytest.raises(ValueError, match="max_results"):
        ContextRetrievalRequestEvent(query="q", vector_store="kb", max_results=0)


def test_events_keep_upstream_fields_through_json() -> None:
    request = ContextRetrievalRequestEvent(query="q", vector_store="kb")
    assert request.max_results == 3
    back = Event.from_json(request.to_json())
    assert isinstance(back, ContextRetrievalRequestEvent) and back.query == "q"
    response = ContextRetrievalResponseEvent(
        request_id=request.id, query="q", documents=[Document(content="c", score=0.5)]
    )
    again = Event.from_json(response.to_json())
    assert isinstance(again, ContextRetrievalResponseEvent)
    assert again.request_id == request.id and again.documents[0].score == 0.5


def test_a_missing_store_fails_the_request_naming_it(kb: Path) -> None:
    with pytest.raises(ActionExecutionError) as failed:
        run_local(rag_agent(kb, store="nowhere"), [{"key": "a", "value": "refund"}])
    error = failed.value.__cause__
    assert isinstance(error, VectorStoreError) and error.resource == "nowhere"
    assert "nowhere" in str(error)


def test_wrong_dimension_vectors_fail_the_request_naming_the_store(kb: Path) -> None:
    with pytest.raises(ActionExecutionError) as failed:
        run_local(rag_agent(kb, dimension=4), [{"key": "a", "value": "refund"}])
    error = failed.value.__cause__
    assert isinstance(error, VectorDimensionError) and error.resource == "kb"
    assert "'kb'" in str(error) and "dimension" in str(error)


def test_a_failed_lookup_is_made_again_after_a_restart(tmp_path: Path) -> None:
    """The store is not there yet (its collection is missing): the request fails, and its
    recorded calls are dropped, so the job run again looks the store up live."""
    url = f"sqlite:///{tmp_path}/calls.db"
    directory = tmp_path / "kb"
    inputs = [{"key": "alice", "value": "refund please"}]
    with pytest.raises(ActionExecutionError) as failed:
        _run_with_store(rag_agent(directory, auto_create=False), url, inputs)
    assert isinstance(failed.value.__cause__, VectorStoreError)
    assert "kb_test" in str(failed.value.__cause__)
    _knowledge_base(directory)
    [(_, ids)] = _run_with_store(rag_agent(directory, auto_create=False), url, inputs)
    assert ids[0] == "refunds"


def test_an_embedding_model_that_is_down_fails_the_request_naming_it(kb: Path) -> None:
    with pytest.raises(ActionExecutionError) as failed:
        run_local(rag_agent(kb, embedding=DownEmbedding), [{"key": "a", "value": "refund"}])
    error = failed.value.__cause__
    assert isinstance(error, VectorStoreError) and error.resource == "embedder"
    assert "'embedder'" in str(error) and "connection refused" in str(error)


class GatedEmbedding(WordsEmbeddingSetup):
    """An embedding model whose calls wait until two are in flight at once (or 10 s)."""

    in_flight: ClassVar[int] = 0
    most: ClassVar[int] = 0
    lock: ClassVar[threading.Lock] = threading.Lock()
    two: ClassVar[threading.Event] = threading.Event()

    def _enter(self) -> None:
        with GatedEmbedding.lock:
            GatedEmbedding.in_flight += 1
            GatedEmbedding.most = max(GatedEmbedding.most, GatedEmbedding.in_flight)
            if GatedEmbedding.in_flight >= 2:
                GatedEmbedding.two.set()

    def _leave(self) -> None:
        with GatedEmbedding.lock:
            GatedEmbedding.in_flight -= 1

    def embed(self, text: Any, **kwargs: Any) -> Any:
        self._enter()
        try:
            GatedEmbedding.two.wait(10)
            return super().embed(text, **kwargs)
        finally:
            self._leave()

    async def aembed(self, text: Any, **kwargs: Any) -> Any:
        self._enter()
        try:
            await asyncio.to_thread(GatedEmbedding.two.wait, 10)
            return super().embed(text, **kwargs)
        finally:
            self._leave()


def test_queries_are_embedded_at_once_without_taking_action_threads(kb: Path) -> None:
    # A query's embedding is awaited on the loop like a chat request: with one action
    # thread, two keys' queries are still embedded at the same time (a provider's latency
    # is not paid one query after another).
    GatedEmbedding.two.clear()
    GatedEmbedding.most = 0
    outputs, _ = run_local(
        rag_agent(kb, embedding=GatedEmbedding),
        [{"key": "alice", "value": "refund please"}, {"key": "bob", "value": "my password"}],
        {AgentExecutionOptions.NUM_ASYNC_THREADS.key: 1},
    )
    assert GatedEmbedding.most == 2
    assert _answers(outputs)["alice"][1][0] == "refunds"


class BatchRecordingEmbedding(WordsEmbeddingSetup):
    """Records the texts of each embedding call; a text with "poison" in it makes the call
    fail as a provider refuses a bad input (not retryable)."""

    calls: ClassVar[list[list[str]]] = []

    async def aembed(self, text: Any, **kwargs: Any) -> Any:
        texts = [text] if isinstance(text, str) else list(text)
        BatchRecordingEmbedding.calls.append(texts)
        if any("poison" in t for t in texts):
            raise ChatModelError("invalid input", retryable=False, kind="bad_request")
        return self.embed(text, **kwargs)


QUESTIONS = {
    "alice": "refund please",
    "bob": "my password",
    "carol": "shipping delay again",
    "dave": "refund of my invoice",
}


def test_queries_asked_at_once_go_in_one_embedding_request_and_one_lookup(
    kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    BatchRecordingEmbedding.calls.clear()
    lookups: list[int] = []
    query_embeddings = ChromaVectorStore.query_embeddings

    def counted(self: ChromaVectorStore, embeddings: Any, queries: Any) -> Any:
        lookups.append(len(embeddings))
        return query_embeddings(self, embeddings, queries)

    monkeypatch.setattr(ChromaVectorStore, "query_embeddings", counted)
    outputs, _ = run_local(
        rag_agent(kb, embedding=BatchRecordingEmbedding, async_ask=True),
        [{"key": key, "value": text} for key, text in QUESTIONS.items()],
    )
    answers = _answers(outputs)
    assert {key: answers[key][0] for key in QUESTIONS} == QUESTIONS
    assert answers["alice"][1][0] == "refunds" and answers["bob"][1][0] == "passwords"
    assert answers["carol"][1][0] == "shipping"
    assert sorted(map(sorted, BatchRecordingEmbedding.calls)) == [sorted(QUESTIONS.values())]
    assert lookups == [len(QUESTIONS)]


def test_a_query_the_model_refuses_fails_only_its_own_request(kb: Path) -> None:
    BatchRecordingEmbedding.calls.clear()
    inputs = [{"key": key, "value": text} for key, text in QUESTIONS.items()]
    inputs.append({"key": "mallory", "value": "poison pill"})
    outputs, runner = run_local(
        rag_agent(kb, embedding=BatchRecordingEmbedding, async_ask=True),
        inputs,
        {AgentExecutionOptions.INPUT_FAILURE_POLICY.key: "skip"},
    )
    answers = _answers(outputs)
    assert sorted(answers) == sorted(QUESTIONS)
    assert answers["bob"][1][0] == "passwords"
    [error] = runner.errors
    assert error["key"] == "mallory" and "invalid input" in error["message"]
    # The batch failed, then each query was embedded alone.
    assert len(BatchRecordingEmbedding.calls[0]) == len(inputs)
    assert sorted(len(call) for call in BatchRecordingEmbedding.calls[1:]) == [1] * len(inputs)
