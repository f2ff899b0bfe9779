"""Long-term memory on mem0 on the local runner: the agent's own chat model (the OpenAI
connection), embedding model and Chroma store, all answered by a fake model server on
127.0.0.1. Keys are isolated, a restored run makes no model call again, and mem0 opens
no connection but to that server."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mem0", reason="the mem0 extra is not installed")
pytest.importorskip("chromadb", reason="the chroma extra is not installed")

from flink_agents.api import (
    Agent,
    AgentsExecutionEnvironment,
    Event,
    InputEvent,
    OutputEvent,
    ResourceDescriptor,
    RunnerContext,
)
from flink_agents.api.decorators import (
    action,
    chat_model_connection,
    chat_model_setup,
    embedding_model_connection,
    embedding_model_setup,
    vector_store,
)
from flink_agents.api.memory.long_term_memory import LongTermMemoryOptions
from flink_agents.api.resource import ResourceName
from tests.fakes.http_server import FakeProviderServer
from tests.runtime.memory.memory_model_server import memory_model_server

SETTINGS: dict[str, str] = {}
"""The fake server's URL and the store's directory, for the resource declarations."""


class MemoryAgent(Agent):
    """Input ``{"fact": ...}`` is remembered; ``{"ask": ...}`` answers with what the
    key's memory holds about it and everything the set holds."""

    @chat_model_connection
    @staticmethod
    def fake_openai() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ResourceName.ChatModel.OPENAI_COMPLETIONS_CONNECTION,
            api_key="test-key",
            base_url=SETTINGS["url"],
        )

    @chat_model_setup
    @staticmethod
    def extractor() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ResourceName.ChatModel.OPENAI_COMPLETIONS_SETUP,
            connection="fake_openai",
            model="fake-chat",
        )

    @embedding_model_connection
    @staticmethod
    def fake_embeddings() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ResourceName.EmbeddingModel.OPENAI_CONNECTION,
            api_key="test-key",
            base_url=SETTINGS["url"],
        )

    @embedding_model_setup
    @staticmethod
    def embedder() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ResourceName.EmbeddingModel.OPENAI_SETUP,
            connection="fake_embeddings",
            model="fake-embed",
        )

    @vector_store
    @staticmethod
    def memories() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ResourceName.VectorStore.CHROMA_VECTOR_STORE,
            embedding_model="embedder",
            persist_directory=SETTINGS["store"],
            collection="ltm",
        )

    @action(InputEvent)
    @staticmethod
    def remember_or_answer(event: Event, ctx: RunnerContext) -> None:
        request: dict[str, str] = event.get_attr("input")
        prefs = ctx.long_term_memory.get_memory_set("prefs")
        if "fact" in request:
            ctx.send_event(OutputEvent(output={"added": len(prefs.add(request["fact"]))}))
            return
        found = [item.value for item in prefs.search(request["ask"], limit=5)]
        held = sorted(item.value for item in prefs.get())
        ctx.send_event(OutputEvent(output={"found": found, "held": held}))


CONFIG = {
    LongTermMemoryOptions.Mem0.CHAT_MODEL_SETUP.key: "extractor",
    LongTermMemoryOptions.Mem0.EMBEDDING_MODEL_SETUP.key: "embedder",
    LongTermMemoryOptions.Mem0.VECTOR_STORE.key: "memories",
}

INPUTS = [
    {"key": "alice", "value": {"fact": "Likes watermelon"}},
    {"key": "bob", "value": {"fact": "Goes swimming on Sundays"}},
    {"key": "alice", "value": {"fact": "Is allergic to bananas"}},
    {"key": "alice", "value": {"ask": "what fruit does she like"}},
    {"key": "bob", "value": {"ask": "what fruit does he like"}},
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FakeProviderServer]:
    with memory_model_server() as fake:
        SETTINGS.update(url=fake.base_url, store=str(tmp_path / "chroma"))
        yield fake


def run(config: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each key's outputs, in its inputs' order (keys run concurrently)."""
    env = AgentsExecutionEnvironment.get_execution_environment(config={**CONFIG, **config})
    results = env.from_list(INPUTS).apply(MemoryAgent()).to_list()
    env.execute()
    by_key: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        for key, value in result.items():
            by_key.setdefault(key, []).append(value)
    return by_key


def test_each_key_remembers_only_its_own_facts(server: FakeProviderServer) -> None:
    outputs = run({})
    assert outputs["alice"][:2] == [{"added": 1}] * 2
    assert outputs["bob"][:1] == [{"added": 1}]
    alice, bob = outputs["alice"][2], outputs["bob"][1]
    assert alice["held"] == ["Is allergic to bananas", "Likes watermelon"]
    assert bob["held"] == ["Goes swimming on Sundays"]
    assert "Likes watermelon" in alice["found"]
    assert bob["found"] == ["Goes swimming on Sundays"]  # never alice's fruit
    paths = {request.path for request in server.requests}
    assert paths == {"/chat/completions", "/embeddings"}


def test_a_rerun_from_the_store_makes_no_model_call_again(
    server: FakeProviderServer, tmp_path: Path
) -> None:
    store = {"durable-execution.store": f"sqlite:///{tmp_path}/calls.db"}
    first = run(store)
    made = len(server.requests)
    assert made > 0
    assert run(store) == first
    assert len(server.requests) == made  # every memory call answered from the record


def test_mem0_connects_to_nothing_but_the_agents_server(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    connect = socket.socket.connect
    refused: list[Any] = []

    def loopback_only(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            refused.append(address)
            raise OSError(f"test: no connection to {address!r}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    monkeypatch.setenv("MEM0_TELEMETRY", "True")  # set by a user: switched off all the same
    assert run({})["alice"][2]["held"] == ["Is allergic to bananas", "Likes watermelon"]
    assert refused == []


def test_upstreams_long_term_memory_agent_runs_with_its_model_connections_changed(
    server: FakeProviderServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.runtime.memory import upstream_long_term_memory_agent as upstream

    monkeypatch.setenv(upstream.CHROMADB_PATH_ENV, str(tmp_path / "chromadb"))
    monkeypatch.setenv(upstream.BASE_URL_ENV, server.base_url)
    env = AgentsExecutionEnvironment.get_execution_environment(
        config={
            LongTermMemoryOptions.Mem0.CHAT_MODEL_SETUP.key: "ollama_qwen3",
            LongTermMemoryOptions.Mem0.EMBEDDING_MODEL_SETUP.key: "ollama_nomic_embed_text",
            LongTermMemoryOptions.Mem0.VECTOR_STORE.key: "chroma_ltm_store",
        }
    )
    inputs = [{"key": item["name"], "value": item} for item in upstream.INPUT]
    results = env.from_list(inputs).apply(upstream.LongTermMemoryAgent()).to_list()
    env.execute()
    records = [
        upstream.Record.model_validate(value) for result in results for value in result.values()
    ]
    assert len(records) == 4
    upstream.check_result(records)
