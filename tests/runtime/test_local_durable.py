"""The local runner reads durable-execution.store: re-running a batch replays recorded calls."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from flink_agents.api import (
    AgentsExecutionEnvironment,
    ChatMessage,
    FunctionChatModelConnection,
    ToolCallBlock,
)
from flink_agents.api.errors import ChatModelError
from flink_agents.runtime.durable import (
    DurableCallLog,
    DurableStoreUnavailableError,
    SqliteActionStateStore,
    StoreRetry,
)
from flink_agents.runtime.errors import ActionExecutionError
from flink_agents.runtime.local_runner import LocalRunner
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


def test_a_model_error_that_fails_the_run_is_not_replayed(tmp_path: Path) -> None:
    """Under error strategy `fail` the failed call is made again when the run is run again
    (a kept error would fail every retry of the job, forever); a success is then kept."""
    url = f"sqlite:///{tmp_path}/calls.db"
    calls: list[str] = []
    outage = [True]

    def model(messages: list[ChatMessage], tools: list) -> str:
        calls.append(messages[-1].text)
        if outage[0]:
            raise ChatModelError("down", status_code=503, retryable=True)
        return f"answer to {messages[-1].text}"

    def run_once() -> list[str]:
        agent = chat_agent(FunctionChatModelConnection(function=model))
        config = {"durable-execution.store": url, "error-handling-strategy": "fail"}
        env = AgentsExecutionEnvironment.get_execution_environment(config=config)
        results = env.from_list([{"key": "a", "value": "q1"}]).apply(agent).to_list()
        env.execute()
        return [r.response.text for result in results for r in result.values()]

    with pytest.raises(ActionExecutionError) as failed:
        run_once()
    assert isinstance(failed.value.__cause__, ChatModelError)
    outage[0] = False
    assert run_once() == ["answer to q1"]
    assert run_once() == ["answer to q1"]
    assert calls == ["q1", "q1"]  # failed, then made again; the success replays


def test_store_unwritable_mid_run_runs_a_side_effecting_tool_at_most_twice(
    tmp_path: Path,
) -> None:
    """The probe's case on the local runner: the store turns unwritable (another process
    holds its lock) while a sync tool with a side effect runs; the job is restarted five
    times during the outage, then once after it. The tool ran twice, not seven times."""
    path = tmp_path / "calls.db"
    sent: list[str] = []
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    def send_email(to: str) -> str:
        """Send an email to `to`."""
        sent.append(to)
        if len(sent) == 1:
            holder.execute("BEGIN EXCLUSIVE")  # the store cannot be written from now on
        return f"sent to {to}"

    def model(messages: list[ChatMessage], tools: list) -> ChatMessage:
        if messages[-1].role.value == "user":
            call = ToolCallBlock(id="c1", name="send_email", input={"to": "ops"})
            return ChatMessage.assistant(tool_calls=[call])
        return ChatMessage.assistant("done")

    agent = chat_agent(
        FunctionChatModelConnection(function=model), tools={"send_email": send_email}
    )

    def run_job() -> list[str]:
        store = SqliteActionStateStore(path, busy_timeout_s=0.05)
        runner = LocalRunner(agent, call_log=DurableCallLog(store, retry=StoreRetry(0)))
        try:
            outputs = asyncio.run(runner.run([{"key": "k", "value": "mail ops"}]))
        finally:
            runner.close()
        return [o.value.response.text for o in outputs]

    for _attempt in range(6):  # the first run, then five restarts during the outage
        with pytest.raises(ActionExecutionError) as failed:
            run_job()
        cause = failed.value.__cause__
        assert isinstance(cause, DurableStoreUnavailableError) and "locked" in str(cause)
    assert sent == ["ops"]
    holder.execute("COMMIT")  # the outage ends
    assert run_job() == ["done"]
    assert run_job() == ["done"]  # replayed from the store
    assert sent == ["ops", "ops"]
    holder.close()
