"""Embedding model connections and setups (upstream's API): the ways a connection may be
written, what a call through a setup checks, batches, rate limits, errors naming the
model, and the resources declared on an agent."""

from __future__ import annotations

import asyncio
import math
import pickle
from collections.abc import Sequence
from typing import Any, ClassVar
from unittest.mock import MagicMock

import pytest

from flink_agents.api import Agent, ResourceDescriptor, ResourceType
from flink_agents.api.decorators import (
    action,
    embedding_model_connection,
    embedding_model_setup,
)
from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
    EmbeddingResult,
    EmbeddingTokenUsage,
)
from flink_agents.api.errors import (
    ChatModelError,
    EmbeddingInputError,
    EmbeddingModelError,
)
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import Resource
from flink_agents.api.resource_context import ResourceContext
from flink_agents.api.runner_context import RunnerContext
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.request_gate import gate_requests


class Recording(BaseEmbeddingModelConnection):
    """Upstream's way: a sync ``embed``. Vectors are (length, position in the request,
    call number); every request is recorded."""

    dimension_of: dict[str, int] = {}
    calls: list[tuple[Any, dict[str, Any]]] = []

    def embed(self, text: str | Sequence[str], **kwargs: Any) -> list[float] | list[list[float]]:
        self.calls.append((text, kwargs))
        number = float(len(self.calls))

        def vector(one: str, position: int) -> list[float]:
            size = self.dimension_of.get(one, 3)
            return [float(len(one)), float(position), number, 0.0, 0.0][:size] + [0.0] * (size - 5)

        if isinstance(text, str):
            return vector(text, 0)
        return [vector(one, i) for i, one in enumerate(text)]


class AsyncOnly(BaseEmbeddingModelConnection):
    """The adapters' way: ``async def aembed_with_usage`` only."""

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._seen: list[Any] = []

    async def aembed_with_usage(
        self, text: str | Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[list[float] | list[list[float]]]:
        self._seen.append(text)
        usage = EmbeddingTokenUsage(prompt_tokens=2, total_tokens=3)
        if isinstance(text, str):
            return EmbeddingResult(embeddings=[1.0, 2.0], token_usage=usage)
        return EmbeddingResult(embeddings=[[1.0, 2.0] for _ in text], token_usage=usage)


class Dimensioned(BaseEmbeddingModelSetup):
    dimensions: int | None = None

    @property
    def expected_dimensions(self) -> int | None:
        return self.dimensions


def _setup(connection: BaseEmbeddingModelConnection, **options: Any) -> Dimensioned:
    ctx = MagicMock(spec=ResourceContext)

    def get_resource(name: str, resource_type: ResourceType) -> Resource:
        assert (name, resource_type) == ("conn", ResourceType.EMBEDDING_MODEL_CONNECTION)
        return connection

    ctx.get_resource = get_resource
    # Upstream's keyword (not in the synthesized signature pyright reads).
    setup = Dimensioned(connection="conn", model="m1", resource_context=ctx, **options)  # pyright: ignore[reportCallIssue]
    setup.open()
    return setup


@pytest.fixture
def recording() -> Recording:
    conn = Recording()
    conn.calls = []
    conn.dimension_of = {}
    return conn


# ------------------------------------------------------------------ ways to write one


def test_a_sync_connection_through_the_setup(recording: Recording) -> None:
    setup = _setup(recording)
    assert setup.embed("hello") == [5.0, 0.0, 1.0]
    assert setup.embed(["a", "bb"]) == [[1.0, 0.0, 2.0], [2.0, 1.0, 2.0]]
    assert recording.calls == [("hello", {"model": "m1"}), (["a", "bb"], {"model": "m1"})]
    result = setup.embed_with_usage("hi", dimensions=3)
    assert result == EmbeddingResult(embeddings=[2.0, 0.0, 3.0], token_usage=None)
    assert recording.calls[-1] == ("hi", {"model": "m1", "dimensions": 3})


def test_an_async_connection_serves_sync_and_async_callers() -> None:
    conn = AsyncOnly()
    assert conn.embed("x") == [1.0, 2.0]  # the base runs the coroutine
    assert conn.embed_with_usage(["x", "y"]).token_usage == EmbeddingTokenUsage(2, 3)
    setup = _setup(conn)
    assert setup.embed(["x", "y"]) == [[1.0, 2.0], [1.0, 2.0]]
    assert asyncio.run(setup.aembed("z")) == [1.0, 2.0]
    usage = asyncio.run(setup.aembed_with_usage("z")).token_usage
    assert usage == EmbeddingTokenUsage(prompt_tokens=2, total_tokens=3)


def test_a_connection_that_implements_nothing_says_so() -> None:
    class Nothing(BaseEmbeddingModelConnection):
        pass

    with pytest.raises(NotImplementedError, match="implements neither embed"):
        Nothing().embed("x")
    with pytest.raises(NotImplementedError, match="implements neither embed"):
        asyncio.run(Nothing().aembed_with_usage("x"))


def test_the_setup_sends_embed_to_embed_and_usage_to_embed_with_usage() -> None:
    class TwoWays(BaseEmbeddingModelConnection):
        def embed(self, text: Any, **kwargs: Any) -> Any:
            return [0.1, 0.2]

        def embed_with_usage(self, text: Any, **kwargs: Any) -> Any:
            return EmbeddingResult(embeddings=[0.3, 0.4], token_usage=EmbeddingTokenUsage(7, 9))

    setup = _setup(TwoWays())
    assert setup.embed("x") == [0.1, 0.2]
    assert setup.embed_with_usage("x").embeddings == [0.3, 0.4]


def test_the_connection_may_be_given_itself_and_must_be_an_embedding_connection(
    recording: Recording,
) -> None:
    assert BaseEmbeddingModelSetup(connection=recording, model="m").embed("ab") == [2.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="cannot look up its connection 'conn'"):
        BaseEmbeddingModelSetup(connection="conn", model="m").embed("x")
    wrong = BaseEmbeddingModelSetup(
        connection="conn",
        model="m",
        get_resource=lambda name, kind: Dimensioned(connection="x", model="y"),
    )
    with pytest.raises(TypeError, match="not an embedding model connection"):
        wrong.embed("x")


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "cannot embed an empty text"),
        ("  \n", "cannot embed an empty text"),
        ([], "no texts to embed"),
        (["fine", ""], r"cannot embed an empty text \(text 1 of 2\)"),
        (["fine", 3], r"a int is no text \(text 1 of 2\)"),
        (b"bytes", "not a string or a list of strings"),
        (None, "not a string or a list of strings"),
    ],
)
def test_text_that_cannot_be_embedded_is_refused_before_sending(
    recording: Recording, text: Any, says: str
) -> None:
    setup = _setup(recording)
    with pytest.raises(EmbeddingInputError, match=says) as caught:
        setup.embed(text)
    assert "connection 'conn', model 'm1'" in str(caught.value)
    assert caught.value.resource == "connection 'conn', model 'm1'"
    assert recording.calls == []
    assert pickle.loads(pickle.dumps(caught.value)).resource == caught.value.resource


def test_vectors_of_the_wrong_dimension_fail_naming_the_model(recording: Recording) -> None:
    setup = _setup(recording, dimensions=4)
    with pytest.raises(EmbeddingModelError) as caught:
        setup.embed("abc")
    error = caught.value
    assert str(error) == (
        "embedding model (connection 'conn', model 'm1') answered with no usable embedding: "
        "a vector of dimension 3, expected 4"
    )
    assert (error.resource, error.kind, error.retryable) == (
        "connection 'conn', model 'm1'",
        "malformed_response",
        False,
    )


def test_vectors_of_different_dimensions_in_one_answer_fail(recording: Recording) -> None:
    recording.dimension_of = {"long": 5}
    with pytest.raises(EmbeddingModelError, match=r"different dimensions \[3, 5\]"):
        _setup(recording).embed(["abc", "long"])
    # Across the requests of one batch, too.
    with pytest.raises(EmbeddingModelError, match=r"different dimensions \[3, 5\]"):
        _setup(recording, batch_size=1).embed(["abc", "long"])


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ([[1.0]], "1 vectors for 2 texts"),
        ([[1.0], [1.0], [1.0]], "3 vectors for 2 texts"),
        ([[1.0], []], r"an empty vector \(text 1\)"),
        ([[1.0], [math.nan]], r"not finite \(text 1\)"),
        ([[1.0], ["x"]], r"not a list of numbers \(text 1\)"),
        ({"a": 1}, "the answer is a dict, not a list"),
    ],
)
def test_an_answer_that_is_not_one_vector_per_text_fails(answer: Any, says: str) -> None:
    class Broken(BaseEmbeddingModelConnection):
        def embed(self, text: Any, **kwargs: Any) -> Any:
            return answer

    with pytest.raises(EmbeddingModelError, match=says):
        _setup(Broken()).embed(["a", "b"])


def test_a_provider_failure_becomes_an_embedding_error_naming_the_model() -> None:
    class Down(BaseEmbeddingModelConnection):
        async def aembed_with_usage(self, text: Any, **kwargs: Any) -> Any:
            raise ChatModelError(
                "could not connect to openai: connection refused",
                retryable=True,
                retry_after=2.0,
                provider="openai",
                kind="connection",
            )

    with pytest.raises(EmbeddingModelError) as caught:
        _setup(Down()).embed("x")
    error = caught.value
    assert str(error) == (
        "embedding model (connection 'conn', model 'm1'): could not connect to openai: "
        "connection refused"
    )
    assert isinstance(error, ChatModelError)  # the error strategies apply as to chat calls
    assert (error.retryable, error.retry_after, error.provider, error.kind) == (
        True,
        2.0,
        "openai",
        "connection",
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.resource, copy.retryable) == (str(error), error.resource, True)


# ------------------------------------------------------------------ batches


def test_a_long_list_goes_in_requests_of_batch_size(recording: Recording) -> None:
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = _setup(recording, batch_size=2).embed(texts)
    assert [call[0] for call in recording.calls] == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    assert vectors == [
        [1.0, 0.0, 1.0],
        [2.0, 1.0, 1.0],
        [3.0, 0.0, 2.0],
        [4.0, 1.0, 2.0],
        [5.0, 0.0, 3.0],
    ]
    recording.calls.clear()
    _setup(recording, batch_size=2).embed(texts, batch_size=4)  # a call's keyword wins
    assert [call[0] for call in recording.calls] == [["a", "bb", "ccc", "dddd"], ["eeeee"]]
    assert all("batch_size" not in call[1] for call in recording.calls)


def test_the_connections_default_batch_size_applies_when_the_setup_sets_none() -> None:
    class Limited(AsyncOnly):
        default_batch_size: ClassVar[int | None] = 3

    conn = Limited()
    result = _setup(conn).embed_with_usage([f"t{i}" for i in range(7)])
    assert [len(sent) for sent in conn._seen] == [3, 3, 1]
    # Usage is summed over the requests.
    assert result.token_usage == EmbeddingTokenUsage(prompt_tokens=6, total_tokens=9)
    assert len(result.embeddings) == 7


# ------------------------------------------------------------------ rate limits


def test_calls_wait_for_the_connections_limits() -> None:
    entered: list[str] = []
    gate = asyncio.Event()

    class Gated(BaseEmbeddingModelConnection):
        async def aembed_with_usage(self, text: Any, **kwargs: Any) -> Any:
            entered.append(text)
            await gate.wait()
            return EmbeddingResult(embeddings=[1.0])

    async def scenario() -> None:
        connection = Gated(max_concurrent_requests=1, adaptive_limit=False)
        gate_requests(connection)  # as the runtime does for the connections it builds
        setup = _setup(connection)
        first = asyncio.ensure_future(setup.aembed("a"))
        second = asyncio.ensure_future(setup.aembed("b"))
        for _ in range(20):
            await asyncio.sleep(0)
        assert entered == ["a"]  # the second waits for the first's slot
        gate.set()
        assert await asyncio.gather(first, second) == [[1.0], [1.0]]
        assert entered == ["a", "b"]

    asyncio.run(scenario())


# ------------------------------------------------------------------ on an agent


class EmbeddingAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def embed(event: InputEvent, ctx: RunnerContext) -> None:
        model = ctx.get_resource("embedder", ResourceType.EMBEDDING_MODEL)
        assert isinstance(model, BaseEmbeddingModelSetup)
        ctx.send_event(OutputEvent(output=model.embed(event.input)))

    @embedding_model_connection
    @staticmethod
    def letters() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=Recording)

    @embedding_model_setup
    @staticmethod
    def embedder() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=BaseEmbeddingModelSetup, connection="letters", model="m")


def test_declared_embedding_resources_plan_and_run() -> None:
    plan = AgentPlan.from_agent(EmbeddingAgent())
    assert set(plan.resources[ResourceType.EMBEDDING_MODEL]) == {"embedder"}
    assert set(plan.resources[ResourceType.EMBEDDING_MODEL_CONNECTION]) == {"letters"}
    env = AgentsExecutionEnvironment.get_execution_environment()
    out = env.from_list([{"key": "k", "value": "four"}]).apply(EmbeddingAgent()).to_list()
    env.execute()
    assert out == [{"k": [4.0, 0.0, 1.0]}]
