"""The local runner reads durable-execution.store: re-running a batch replays recorded calls."""

from __future__ import annotations

from pathlib import Path

from flink_agents.api import AgentsExecutionEnvironment, ChatMessage, FunctionChatModelConnection
from tests.runtime.chat_agents import chat_agent


def _run(store_url: str | None, calls: list[str]) -> list[str]:
    def model(messages: list[ChatMessage], tools: list) -> str:
        calls.append(messages[-1].text)
        return f"answer to {messages[-1].text}"

    agent = chat_agent(FunctionChatModelConnection(function=model))
    config = {"durable-execution.store": store_url} if store_url else {}
    env = AgentsExecutionEnvironment.get_execution_environment(config=config)
    out = env.from_list([{"key": "a", "value": "q1"}, {"key": "b", "value": "q2"}])
    results = out.apply(agent).to_list()
    env.execute()
    return sorted(r.response.text for result in results for r in result.values())


def test_rerun_with_a_store_replays_model_calls(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/calls.db"
    calls: list[str] = []
    first = _run(url, calls)
    assert first == ["answer to q1", "answer to q2"]
    assert sorted(calls) == ["q1", "q2"]
    again = _run(url, calls)
    assert again == first
    assert len(calls) == 2  # the second batch was answered from the store


def test_without_a_store_every_run_calls_the_model() -> None:
    calls: list[str] = []
    _run(None, calls)
    _run(None, calls)
    assert len(calls) == 4
