"""The SDK's aiohttp transport in a Flink job: `ToolChatAgent` through the real
`OpenAIChatModelConnection` with its default transport (the SDK's aiohttp client: each SDK
client on a worker gets its own, closed when the worker's loop shuts down) on the
mini-cluster, two subtasks, against the mock model server. Every input answered, each with
its two model calls and its tool call."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from e2e_tests.durable_job import ToolChatAgent
from examples.mock_model_server import MockModelServer

pytestmark = pytest.mark.flink

KEYS, INPUTS = 6, 5


def _record(i: int) -> dict[str, Any]:
    return {"key": f"k{i % KEYS}", "n": i // KEYS}


def test_a_job_sends_through_the_aiohttp_transport(stream_env: Callable[..., Any]) -> None:
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    with MockModelServer(delay=0.02) as server:
        env = stream_env(parallelism=2)
        agents_env = FlinkAgentsExecutionEnvironment(env)
        source = env.from_collection(list(range(KEYS * INPUTS))).map(_record)
        agent = ToolChatAgent(server.base_url)  # http_transport: None, the default
        out = (
            agents_env.from_datastream(source, key_selector=lambda r: r["key"])
            .apply(agent)
            .to_datastream()
        )
        with out.execute_and_collect("e2e-aiohttp") as results:
            outputs = list(results)
        requests = server.recorded()

    assert sorted((o["key"], o["n"]) for o in outputs) == sorted(
        (f"k{k}", n) for k in range(KEYS) for n in range(INPUTS)
    )
    assert all(str(o["answer"]).endswith(f"found {o['key']}/{o['n']}") for o in outputs), outputs
    prompts = Counter(str(r.body["messages"][0]["content"]) for r in requests)
    assert len(prompts) == KEYS * INPUTS and set(prompts.values()) == {2}  # two turns each
