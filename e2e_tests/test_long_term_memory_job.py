"""Upstream's long-term memory e2e job on the mini-cluster (thread mode, parallelism 1),
with only its model connections changed: mem0 on the agent's chat model, embedding model
(the fake OpenAI-compatible server on 127.0.0.1) and embedded Chroma store; upstream's
checks of what the job wrote."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mem0", reason="the mem0 extra is not installed")
pytest.importorskip("chromadb", reason="the chroma extra is not installed")

pytestmark = pytest.mark.flink


def test_upstreams_long_term_memory_job(
    stream_env: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flink_agents.api.memory.long_term_memory import LongTermMemoryOptions
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment
    from tests.runtime.memory import upstream_long_term_memory_agent as upstream
    from tests.runtime.memory.memory_model_server import memory_model_server

    with memory_model_server() as server:
        monkeypatch.setenv(upstream.CHROMADB_PATH_ENV, str(tmp_path / "chromadb"))
        monkeypatch.setenv(upstream.BASE_URL_ENV, server.base_url)
        env = stream_env(parallelism=1)
        agents_env = FlinkAgentsExecutionEnvironment(env)
        config = agents_env.get_config()
        config.set(LongTermMemoryOptions.Mem0.CHAT_MODEL_SETUP, "ollama_qwen3")
        config.set(LongTermMemoryOptions.Mem0.EMBEDDING_MODEL_SETUP, "ollama_nomic_embed_text")
        config.set(LongTermMemoryOptions.Mem0.VECTOR_STORE, "chroma_ltm_store")
        items = env.from_collection([dict(item) for item in upstream.INPUT])
        outputs = (
            agents_env.from_datastream(items, key_selector=lambda item: item["name"])
            .apply(upstream.LongTermMemoryAgent())
            .to_datastream()
        )
        with outputs.execute_and_collect("e2e-long-term-memory") as results:
            collected = list(results)
    records = [upstream.Record.model_validate(record) for record in collected]
    assert len(records) == 4
    upstream.check_result(records)
