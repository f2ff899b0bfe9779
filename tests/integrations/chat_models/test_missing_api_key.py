"""A connection without credentials says which variable to set, before any request (the
SDKs' own errors, `TypeError: Could not resolve authentication method`, do not)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flink_agents.api import (
    Agent,
    AgentsExecutionEnvironment,
    ChatMessage,
    ChatRequestEvent,
    Event,
    InputEvent,
    ResourceDescriptor,
    RunnerContext,
    action,
    chat_model_connection,
    chat_model_setup,
)
from flink_agents.api.errors import ChatModelError
from flink_agents.integrations.chat_models.anthropic import AnthropicChatModelConnection
from flink_agents.integrations.chat_models.azure import AzureOpenAIChatModelConnection
from flink_agents.integrations.chat_models.openai import (
    OpenAIChatModelConnection,
    OpenAIResponsesChatModelConnection,
)
from flink_agents.runtime.errors import ActionExecutionError

_CREDENTIAL_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_ADMIN_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
)

_UNREACHABLE = "http://127.0.0.1:9/v1"  # nothing is ever sent: the check comes first


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _error(connection: Any) -> ChatModelError:
    with pytest.raises(ChatModelError) as failed:
        asyncio.run(connection.achat([ChatMessage.user("hi")], model="m"))
    return failed.value


@pytest.mark.parametrize(
    ("connection", "expected"),
    [
        (
            AnthropicChatModelConnection(base_url=_UNREACHABLE),
            "anthropic: no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the "
            "environment of the process that runs the agent (on Flink: of every TaskManager), "
            "or pass api_key=... to AnthropicChatModelConnection (its ResourceDescriptor)",
        ),
        (
            OpenAIChatModelConnection(base_url=_UNREACHABLE),
            "openai-chat: no API key: set OPENAI_API_KEY (or OPENAI_ADMIN_KEY) in the "
            "environment of the process that runs the agent (on Flink: of every TaskManager), "
            "or pass api_key=... to OpenAIChatModelConnection (its ResourceDescriptor)",
        ),
        (
            OpenAIResponsesChatModelConnection(base_url=_UNREACHABLE),
            "openai-responses: no API key: set OPENAI_API_KEY (or OPENAI_ADMIN_KEY) in the "
            "environment of the process that runs the agent (on Flink: of every TaskManager), "
            "or pass api_key=... to OpenAIResponsesChatModelConnection (its ResourceDescriptor)",
        ),
        (
            AzureOpenAIChatModelConnection(base_url=_UNREACHABLE, api_version="2024-10-21"),
            "azure-openai: no API key: set AZURE_OPENAI_API_KEY (or AZURE_OPENAI_AD_TOKEN) in "
            "the environment of the process that runs the agent (on Flink: of every "
            "TaskManager), or pass api_key=... to AzureOpenAIChatModelConnection (its "
            "ResourceDescriptor)",
        ),
    ],
    ids=["anthropic", "openai-chat", "openai-responses", "azure"],
)
def test_no_key_names_the_variable_and_the_argument(connection: Any, expected: str) -> None:
    error = _error(connection)
    assert str(error) == expected
    assert (error.kind, error.retryable) == ("authentication", False)


def _client_made(connection: Any) -> bool:
    async def make() -> Any:
        return connection._sdk_client()

    return asyncio.run(make()) is not None


def test_a_key_from_the_environment_an_argument_or_a_header_is_enough(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _client_made(AnthropicChatModelConnection(api_key="sk-ant-test-key-1234567890"))
    assert _client_made(
        AnthropicChatModelConnection(default_headers={"Authorization": "Bearer token-123456"})
    )
    assert _client_made(
        AzureOpenAIChatModelConnection(
            base_url=_UNREACHABLE, api_version="2024-10-21", azure_ad_token_provider=lambda: "t"
        )
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-from-the-environment-123456")
    assert _client_made(OpenAIChatModelConnection(base_url=_UNREACHABLE))


class _WeatherAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ChatRequestEvent(model="weather", messages=[ChatMessage.user("hi")]))

    @chat_model_connection
    @staticmethod
    def claude() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz="flink_agents.integrations.chat_models.anthropic.AnthropicChatModelConnection",
            base_url=_UNREACHABLE,
        )

    @chat_model_setup
    @staticmethod
    def weather() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz="flink_agents.integrations.chat_models.anthropic.AnthropicChatModelSetup",
            connection="claude",
        )


def test_an_agent_without_a_key_fails_with_it_on_the_first_line() -> None:
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.get_config().set_str("error-handling-strategy", "fail")
    env.from_list([{"key": "u1", "value": "hi"}]).apply(_WeatherAgent()).to_list()
    with pytest.raises(ActionExecutionError) as failed:
        env.execute()
    assert str(failed.value).startswith(
        "ChatModelError: anthropic: no API key: set ANTHROPIC_API_KEY"
    )
