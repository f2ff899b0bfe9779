"""API keys given to connections or read from the environment never reach errors,
events or the event log, whatever their shape (through the real SDKs, a local server)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flink_agents.api import BaseChatModelConnection, ChatMessage, ChatModelError
from flink_agents.api.redaction import PROVIDER_SECRET_ENV_VARS, clear_registered_secrets, redact
from flink_agents.integrations.chat_models.anthropic import AnthropicChatModelConnection
from flink_agents.integrations.chat_models.openai import (
    OpenAIChatModelConnection,
    OpenAIResponsesChatModelConnection,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.runtime.chat_agents import chat_agent, only_response, run_local

# Shaped like no known key: only registration can mask these.
GIVEN_KEY = "given-Zq81LmPq04XyTt7Rw3"
ENV_KEY = "envkey-Hh52NbVc19QaWs8Ed4"

Connect = Callable[..., BaseChatModelConnection]
CONNECTIONS: list[tuple[str, Connect]] = [
    ("ANTHROPIC_API_KEY", AnthropicChatModelConnection),
    ("OPENAI_API_KEY", OpenAIChatModelConnection),
    ("OPENAI_API_KEY", OpenAIResponsesChatModelConnection),
]
IDS = ["anthropic", "openai-chat", "openai-responses"]


@pytest.fixture(autouse=True)
def no_registered_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    clear_registered_secrets()
    yield
    clear_registered_secrets()


def echo_401(key: str) -> ScriptedResponse:
    message = f"invalid x-api-key {key}; key={key}"
    return ScriptedResponse(
        401, {"type": "error", "error": {"type": "authentication_error", "message": message}}
    )


@pytest.mark.parametrize(("env_var", "connect"), CONNECTIONS, ids=IDS)
def test_a_key_given_to_a_connection_is_registered_when_it_is_built(
    env_var: str, connect: Connect
) -> None:
    assert redact(f"echo {GIVEN_KEY}") == f"echo {GIVEN_KEY}"
    connect(api_key=GIVEN_KEY, base_url="http://127.0.0.1:9")
    assert redact(f"echo {GIVEN_KEY}") == "echo ***7Rw3"


@pytest.mark.parametrize(("env_var", "connect"), CONNECTIONS, ids=IDS)
def test_an_environment_key_is_registered_when_it_is_built(
    env_var: str, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(env_var, ENV_KEY)
    connect(base_url="http://127.0.0.1:9")
    assert redact(f"echo {ENV_KEY}") == "echo ***8Ed4"


@pytest.mark.parametrize(("env_var", "connect"), CONNECTIONS, ids=IDS)
async def test_an_environment_key_echoed_by_the_server_is_masked(
    env_var: str, connect: Connect, server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Built before the variable is set (as when a connection is unpickled on a worker):
    # the key the SDK client reads is registered when the client is made.
    connection = connect(base_url=server.base_url)
    monkeypatch.setenv(env_var, ENV_KEY)
    server.enqueue(echo_401(ENV_KEY))
    with pytest.raises(ChatModelError) as caught:
        await connection.achat([ChatMessage.user("Hi")], model="test-model")
    error = caught.value
    assert error.kind == "authentication"
    assert ENV_KEY not in str(error) and ENV_KEY not in repr(error)
    assert "invalid x-api-key ***8Ed4" in error.message


@pytest.mark.parametrize(("env_var", "connect"), CONNECTIONS, ids=IDS)
def test_the_key_is_in_neither_the_response_event_nor_the_event_log(
    env_var: str,
    connect: Connect,
    server: FakeProviderServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv(env_var, ENV_KEY)
    server.enqueue(echo_401(ENV_KEY))
    agent = chat_agent(connect(base_url=server.base_url))  # type: ignore[arg-type]
    config = {"baseLogDir": str(tmp_path), "eventLoggerType": "jsonl", "event-log.level": "verbose"}

    outputs, _ = run_local(agent, [{"key": "k", "value": "Hi"}], config)

    response = only_response(outputs)
    assert response.error is not None and response.error.kind == "authentication"
    assert ENV_KEY not in response.error.message
    assert "***8Ed4" in response.error.message
    log = (tmp_path / "events.jsonl").read_text()
    assert ENV_KEY not in log
    records = [json.loads(line) for line in log.splitlines()]
    errors = [
        r["attributes"]["error"]["message"]
        for r in records
        if r.get("type") == "_chat_response_event"
    ]
    assert errors == [response.error.message]


_SECRET_NAME = re.compile(r"(API_KEY|ADMIN_KEY|TOKEN|SECRET\w*)$")
"""A variable whose value is a credential (not an id, a path or an address)."""


def test_every_credential_variable_an_adapter_reads_is_one_the_runners_register() -> None:
    package = importlib.import_module("flink_agents.integrations.chat_models")
    read: set[str] = set()
    for module_info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__:
                read.update(getattr(value, "sdk_environment", ()))
                read.update(getattr(value, "credential_environment", ()))
    secrets = {name for name in read if _SECRET_NAME.search(name)}
    assert {"ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "DASHSCOPE_API_KEY"} <= secrets
    assert secrets <= set(PROVIDER_SECRET_ENV_VARS)


def _azure_with_token(secret: str) -> BaseChatModelConnection:
    from flink_agents.integrations.chat_models.azure import AzureOpenAIChatModelConnection

    return AzureOpenAIChatModelConnection(
        azure_ad_token=secret, azure_endpoint="http://127.0.0.1:9"
    )


def _bedrock_with_secret_key(secret: str) -> BaseChatModelConnection:
    from flink_agents.integrations.chat_models.bedrock import BedrockChatModelConnection

    return BedrockChatModelConnection(aws_access_key_id="AKIAEXAMPLE", aws_secret_access_key=secret)


def _bedrock_with_session_token(secret: str) -> BaseChatModelConnection:
    from flink_agents.integrations.chat_models.bedrock import BedrockChatModelConnection

    return BedrockChatModelConnection(
        aws_access_key_id="AKIAEXAMPLE", aws_secret_access_key="x", aws_session_token=secret
    )


@pytest.mark.parametrize(
    "connect",
    [_azure_with_token, _bedrock_with_secret_key, _bedrock_with_session_token],
    ids=["azure-ad-token", "aws-secret-access-key", "aws-session-token"],
)
def test_a_credential_other_than_the_key_is_registered_when_it_is_built(
    connect: Callable[[str], BaseChatModelConnection],
) -> None:
    assert redact(f"echo {GIVEN_KEY}") == f"echo {GIVEN_KEY}"
    connect(GIVEN_KEY)
    assert redact(f"echo {GIVEN_KEY}") == "echo ***7Rw3"
