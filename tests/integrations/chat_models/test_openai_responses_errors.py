"""Error paths of the OpenAI Responses adapter, through the real SDK and a local server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models.openai import OpenAIResponsesChatModelConnection
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.chat_models.provider_helpers import response_body

API_KEY = "sk-test-errors-abcdef123456"

REPLY = response_body("fine")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def connection(server: FakeProviderServer) -> OpenAIResponsesChatModelConnection:
    server.requests.clear()
    return OpenAIResponsesChatModelConnection(
        api_key=API_KEY, base_url=server.base_url, timeout=5.0
    )


def _fail(connection: OpenAIResponsesChatModelConnection) -> ChatModelError:
    with pytest.raises(ChatModelError) as info:
        connection.chat([ChatMessage.user("hi")], model="gpt-test")
    error = info.value
    assert API_KEY not in str(error) and API_KEY not in repr(error)
    assert error.provider == "openai-responses"
    return error


def _error_body(message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def test_429_is_retryable_with_retry_after(connection, server) -> None:
    server.enqueue(
        ScriptedResponse(
            429, _error_body("Rate limit reached for requests"), headers={"retry-after": "7"}
        )
    )
    error = _fail(connection)
    assert (error.status_code, error.retryable, error.kind) == (429, True, "rate_limit")
    assert error.retry_after == 7.0
    assert "Rate limit reached for requests" in error.message
    assert len(server.requests) == 1  # max_retries=0: the SDK did not retry on its own


def test_429_with_retry_after_ms(connection, server) -> None:
    server.enqueue(
        ScriptedResponse(429, _error_body("slow down"), headers={"retry-after-ms": "1500"})
    )
    assert _fail(connection).retry_after == 1.5


def test_500_is_retryable(connection, server) -> None:
    server.enqueue(ScriptedResponse(500, _error_body("The server had an error")))
    error = _fail(connection)
    assert (error.status_code, error.retryable, error.kind) == (500, True, "server")
    assert error.retry_after is None
    assert len(server.requests) == 1


def test_400_is_not_retryable(connection, server) -> None:
    server.enqueue(
        ScriptedResponse(400, _error_body("Invalid value: 'input_audio'.", "invalid_value"))
    )
    error = _fail(connection)
    assert (error.status_code, error.retryable, error.kind) == (400, False, "bad_request")
    assert "Invalid value: 'input_audio'." in error.message


def test_401_message_never_contains_the_key(connection, server) -> None:
    server.enqueue(ScriptedResponse(401, _error_body(f"Incorrect API key provided: {API_KEY}.")))
    error = _fail(connection)
    assert (error.status_code, error.retryable, error.kind) == (401, False, "authentication")


def test_timeout_is_retryable(server) -> None:
    server.requests.clear()
    connection = OpenAIResponsesChatModelConnection(
        api_key=API_KEY, base_url=server.base_url, timeout=0.2
    )
    server.enqueue(ScriptedResponse(body=REPLY, delay_s=0.8))
    error = _fail(connection)
    assert (error.retryable, error.kind, error.status_code) == (True, "timeout", None)


def test_connection_refused_is_retryable() -> None:
    with FakeProviderServer() as closed:
        url = closed.base_url
    connection = OpenAIResponsesChatModelConnection(api_key=API_KEY, base_url=url, timeout=2.0)
    error = _fail(connection)
    assert (error.retryable, error.kind) == (True, "connection")


@pytest.mark.parametrize(
    "body",
    ["<html>502 Bad Gateway</html>", b"", {"id": "resp_1", "status": "completed"}, [1, 2]],
    ids=["html", "empty", "no-output", "json-array"],
)
def test_malformed_body_is_not_retryable(connection, server, body) -> None:
    server.enqueue(ScriptedResponse(body=body))
    error = _fail(connection)
    assert (error.retryable, error.kind) == (False, "malformed_response")


def test_response_without_usage_has_unknown_usage(connection, server) -> None:
    server.enqueue(REPLY)
    result = connection.chat([ChatMessage.user("hi")], model="gpt-test")
    assert result.message.text == "fine"
    assert result.usage.is_unknown
    assert result.usage.input_tokens is None and result.usage.output_tokens is None


def test_async_errors_are_chat_model_errors(connection, server) -> None:
    server.enqueue(ScriptedResponse(503, _error_body("overloaded")))
    with pytest.raises(ChatModelError) as info:
        asyncio.run(connection.achat([ChatMessage.user("hi")], model="gpt-test"))
    assert (info.value.status_code, info.value.retryable) == (503, True)


def test_missing_api_key_is_a_chat_model_error(server, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.requests.clear()
    connection = OpenAIResponsesChatModelConnection(base_url=server.base_url)
    error = _fail(connection)
    assert error.retryable is False
    assert server.requests == []
