"""What every runner does to its process when it starts (`flink_agents.runtime.process_setup`):
provider keys of the environment are masked even when no provider connection is built; the
modules of ``stored-classes.allowed-modules`` may be imported for stored classes. (The Flink
operator's ``open``: tests/runtime/flink/test_engine_factory.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api import ChatMessage, FunctionChatModelConnection, MessageRole, ToolCallBlock
from flink_agents.api._class_path import allowed_stored_class_modules
from flink_agents.api.redaction import PROVIDER_SECRET_ENV_VARS, clear_registered_secrets, redact
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.local_runner import LocalExecutionEnvironment, LocalRunner
from tests.fakes.planted_module import PlantedModule
from tests.runtime.chat_agents import chat_agent

SECRET = "Zq7XbW4pLm9TnR2vYc8KdF3h"
"""An opaque key: no credential shape gives it away, only its registration does."""


@pytest.fixture
def no_secrets_registered() -> Iterator[None]:
    clear_registered_secrets()
    yield
    clear_registered_secrets()


def _quote(symbol: str) -> str:
    """Fetch a quote.

    Args:
        symbol: The ticker.
    """
    raise RuntimeError(f"upstream refused the credential {SECRET} for {symbol}")


def _model(messages: list[ChatMessage], tools: Any) -> ChatMessage | str:
    last = messages[-1]
    if last.role is MessageRole.USER:
        call = ToolCallBlock(id="c1", name="quote", input={"symbol": "ACME"})
        return ChatMessage.assistant("", tool_calls=[call])
    raise ValueError(f"cannot answer after: {last.model_dump_json()}")


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_SESSION_TOKEN"])
def test_a_provider_key_in_the_environment_never_reaches_the_event_log_or_an_error_record(
    variable: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_secrets_registered: None,
) -> None:
    monkeypatch.setenv(variable, SECRET)
    agent = chat_agent(FunctionChatModelConnection(function=_model), tools={"quote": _quote})
    env = LocalExecutionEnvironment(
        {
            "baseLogDir": str(tmp_path),
            "event-log.level": "verbose",
            "input-failure.policy": "skip",
            "error-handling-strategy": "fail",
        }
    )
    builder = env.from_list([{"key": "k", "value": "price?"}]).apply(agent)
    env.execute()
    assert builder.to_list() == []
    [record] = builder.to_error_list()
    logged = "".join(path.read_text() for path in tmp_path.rglob("*") if path.is_file())
    assert f"***{SECRET[-4:]}" in logged  # the tool's error text reached the log, masked
    assert f"***{SECRET[-4:]}" in record["message"]
    assert SECRET not in logged
    assert SECRET not in json.dumps(record, default=str)


def test_every_provider_key_variable_is_registered_when_a_local_runner_starts(
    monkeypatch: pytest.MonkeyPatch, no_secrets_registered: None
) -> None:
    values = {name: f"{name.lower()}-value-42" for name in PROVIDER_SECRET_ENV_VARS}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    text = " ".join(values.values())
    assert redact(text) == text
    agent = chat_agent(FunctionChatModelConnection(function=_model))
    LocalRunner(agent).close()
    assert not any(value in redact(text) for value in values.values())


def test_a_local_runner_allows_the_stored_class_modules_it_is_configured_with(
    planted_module: PlantedModule,
) -> None:
    agent = chat_agent(FunctionChatModelConnection(function=_model))
    runner = LocalRunner(agent, {"stored-classes.allowed-modules": [planted_module.name]})
    try:
        assert planted_module.name in allowed_stored_class_modules()
        tagged = json.dumps({"$model": planted_module.path("Payload"), "$data": {}})
        assert type(runner.engine.decode_input(tagged)).__name__ == "Payload"
    finally:
        runner.close()


def test_a_runner_given_an_engine_sets_the_process_up_with_its_configuration(
    planted_module: PlantedModule,
) -> None:
    agent = chat_agent(FunctionChatModelConnection(function=_model))
    engine = AgentEngine(agent, {"stored-classes.allowed-modules": planted_module.name})
    assert planted_module.name not in allowed_stored_class_modules()
    LocalRunner(engine).close()
    assert planted_module.name in allowed_stored_class_modules()
