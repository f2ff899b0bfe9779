"""The Anthropic connection and setup, through the real SDK against a local server."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from flink_agents.api import (
    BaseTool,
    ChatMessage,
    ChatModelError,
    ReasoningBlock,
    ResourceDescriptor,
    TextBlock,
    ToolCallBlock,
    ToolMetadata,
    ToolResponse,
    Usage,
)
from flink_agents.integrations.chat_models.anthropic import (
    AnthropicChatModelConnection,
    AnthropicChatModelSetup,
)
from flink_agents.runtime.request_gate import limits_of, use_limiter
from flink_agents.runtime.request_limiter import RequestLimiter
from tests.api.fake_clock import FakeClock
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.fakes.images import red_png

MODEL = "claude-test"
API_KEY = "sk-ant-api03-SECRETKEY1234567890"

WEATHER = ToolMetadata(
    name="get_weather",
    description="Current weather for a city",
    args_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def _response(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": "Sunny."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 4},
    }
    body.update(overrides)
    return body


@pytest.fixture
def connection(server: FakeProviderServer) -> AnthropicChatModelConnection:
    return AnthropicChatModelConnection(api_key=API_KEY, base_url=server.base_url)


# ------------------------------------------------------------------ request body


async def test_system_messages_go_to_the_system_field(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    server.enqueue(_response(), _response(), _response())

    await connection.achat([ChatMessage.system("Be brief."), ChatMessage.user("Hi")], model=MODEL)
    await connection.achat(
        [
            ChatMessage.system("Be brief."),
            ChatMessage.user("Hi"),
            ChatMessage.system("Answer in French."),
        ],
        model=MODEL,
    )
    await connection.achat([ChatMessage.user("Hi")], model=MODEL)

    one, two, none = server.bodies
    user_hi = [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert one == {"model": MODEL, "max_tokens": 1024, "system": "Be brief.", "messages": user_hi}
    assert two == {
        "model": MODEL,
        "max_tokens": 1024,
        "system": [
            {"type": "text", "text": "Be brief."},
            {"type": "text", "text": "Answer in French."},
        ],
        "messages": user_hi,
    }
    assert none == {"model": MODEL, "max_tokens": 1024, "messages": user_hi}


async def test_tools_and_options_are_sent_exactly(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    server.enqueue(_response())

    await connection.achat(
        [ChatMessage.user("Weather in Paris?")],
        [WEATHER],
        model=MODEL,
        max_tokens=4096,
        temperature=0.25,
        thinking_budget_tokens=2048,
        tool_choice="get_weather",
        stop_sequences=["STOP", "END"],
        top_k=5,
        metadata={"user_id": "u-42"},
    )

    assert server.bodies == [
        {
            "model": MODEL,
            "max_tokens": 4096,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}
            ],
            "tools": [
                {
                    "name": "get_weather",
                    "description": "Current weather for a city",
                    "input_schema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                }
            ],
            "temperature": 0.25,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "tool_choice": {"type": "tool", "name": "get_weather"},
            "stop_sequences": ["STOP", "END"],
            "top_k": 5,
            "metadata": {"user_id": "u-42"},
        }
    ]
    headers = server.requests[0].headers
    sent_key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert sent_key == API_KEY
    assert "anthropic-version" in headers


async def test_a_base_tool_is_described_by_its_metadata(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    class Weather(BaseTool):
        async def acall(self, **arguments: Any) -> Any:
            return "sunny"

    server.enqueue(_response())
    await connection.achat([ChatMessage.user("?")], [Weather(metadata=WEATHER)], model=MODEL)
    assert server.bodies[0]["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city",
            "input_schema": WEATHER.args_schema,
        }
    ]


async def test_missing_model_raises_before_sending(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    with pytest.raises(ValueError, match="needs a model name"):
        await connection.achat([ChatMessage.user("Hi")])
    assert server.requests == []


async def test_thinking_and_tool_calls_are_replayed_unchanged_in_place(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    thinking = {"type": "thinking", "thinking": "Need the weather tool.", "signature": "Sig+/="}
    redacted = {"type": "redacted_thinking", "data": "Opaque/Blob=="}
    tool_use = {
        "type": "tool_use",
        "id": "toolu_9",
        "name": "get_weather",
        "input": {"city": "Oslo"},
    }
    server.enqueue(
        _response(content=[thinking, redacted, tool_use], stop_reason="tool_use"),
        _response(),
    )
    history = [ChatMessage.system("You help."), ChatMessage.user("Weather in Oslo?")]

    first = await connection.achat(history, [WEATHER], model=MODEL, thinking_budget_tokens=1024)
    assert first.finish_reason == "tool_calls"
    (call,) = first.message.tool_calls
    result = ToolResponse.from_output(call.id, call.name, "Snow, -3C").to_result_block()
    history += [first.message, ChatMessage.tool_result(result)]
    await connection.achat(history, [WEATHER], model=MODEL, thinking_budget_tokens=1024)

    assert server.bodies[1]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
        {"role": "assistant", "content": [thinking, redacted, tool_use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "Snow, -3C"}],
        },
    ]


async def test_reasoning_from_another_provider_is_not_sent(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    server.enqueue(_response())
    assistant = ChatMessage.assistant(
        [
            ReasoningBlock(
                text="openai summary",
                provider="openai-responses",
                encrypted_content="gAAAA",
                id="rs_1",
            ),
            ReasoningBlock(text="chat reasoning", provider="openai-chat"),
            ReasoningBlock(text="unknown origin", signature="s0"),
            ReasoningBlock(text="another vendor", provider="gemini", signature="g-sig"),
            ReasoningBlock(provider="openai-chat", redacted_data="blob"),
            ReasoningBlock(text="mine", signature="s1", provider="anthropic"),
            TextBlock(text="Answer."),
        ]
    )

    await connection.achat(
        [ChatMessage.user("q"), assistant, ChatMessage.user("more")], model=MODEL
    )

    assert server.bodies[0]["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "mine", "signature": "s1"},
            {"type": "text", "text": "Answer."},
        ],
    }


async def test_sdk_header_fields_are_sent_as_headers(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    """Fields the SDK maps to headers (``user_profile_id``) get its own handling."""
    server.enqueue(_response())
    await connection.achat([ChatMessage.user("Hi")], model=MODEL, user_profile_id="prof_1")
    assert "user_profile_id" not in server.bodies[0]
    assert server.requests[0].headers["anthropic-user-profile-id"] == "prof_1"


# ---------------------------------------------------------------------- response


async def test_result_carries_model_id_usage_and_request_id(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    body = _response(
        usage={
            "input_tokens": 20,
            "output_tokens": 4,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 0,
        }
    )
    server.enqueue(ScriptedResponse(body=body, headers={"request-id": "req_abc"}))

    result = await connection.achat([ChatMessage.user("Hi")], model=MODEL)

    assert result.message == ChatMessage.assistant("Sunny.")
    assert result.model == MODEL
    assert result.response_id == "msg_01"
    assert result.finish_reason == "stop"
    assert result.usage == Usage(
        input_tokens=20,
        output_tokens=4,
        cache_read_tokens=100,
        cache_write_tokens=0,
        total_tokens=124,
    )
    assert result.metadata == {"raw_finish_reason": "end_turn", "request_id": "req_abc"}


async def test_response_without_usage_has_unknown_usage(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    body = _response()
    del body["usage"]
    server.enqueue(body)
    result = await connection.achat([ChatMessage.user("Hi")], model=MODEL)
    assert result.usage == Usage()
    assert result.message.text == "Sunny."


# ------------------------------------------------------------------------ errors


def _error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


async def test_rate_limit_is_retryable_with_retry_after(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    server.enqueue(
        ScriptedResponse(
            429,
            _error_body("rate_limit_error", "Number of request tokens has exceeded your limit."),
            headers={"retry-after": "7"},
        )
    )
    with pytest.raises(ChatModelError) as caught:
        await connection.achat([ChatMessage.user("Hi")], model=MODEL)
    error = caught.value
    assert (error.status_code, error.retryable, error.retry_after, error.kind) == (
        429,
        True,
        7.0,
        "rate_limit",
    )
    assert error.provider == "anthropic"
    assert "Number of request tokens has exceeded your limit." in error.message
    assert len(server.requests) == 1  # max_retries=0: the SDK did not retry


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [(500, "server", True), (529, "server", True), (400, "bad_request", False)],
)
async def test_status_errors(
    server: FakeProviderServer,
    connection: AnthropicChatModelConnection,
    status: int,
    kind: str,
    retryable: bool,
) -> None:
    server.enqueue(ScriptedResponse(status, _error_body("some_error", f"problem {status}")))
    with pytest.raises(ChatModelError) as caught:
        await connection.achat([ChatMessage.user("Hi")], model=MODEL)
    error = caught.value
    assert (error.status_code, error.kind, error.retryable) == (status, kind, retryable)
    assert f"problem {status}" in error.message
    assert len(server.requests) == 1


async def test_errors_never_contain_the_api_key(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    server.enqueue(
        ScriptedResponse(401, _error_body("authentication_error", f"invalid x-api-key {API_KEY}"))
    )
    with pytest.raises(ChatModelError) as caught:
        await connection.achat([ChatMessage.user("Hi")], model=MODEL)
    error = caught.value
    assert error.kind == "authentication" and error.retryable is False
    assert API_KEY not in str(error) and API_KEY not in repr(error)
    assert error.__cause__ is None


async def test_timeout_is_retryable(server: FakeProviderServer) -> None:
    connection = AnthropicChatModelConnection(
        api_key=API_KEY, base_url=server.base_url, timeout=0.2
    )
    server.enqueue(ScriptedResponse(body=_response(), delay_s=1.0))
    with pytest.raises(ChatModelError) as caught:
        await connection.achat([ChatMessage.user("Hi")], model=MODEL)
    assert (caught.value.kind, caught.value.retryable) == ("timeout", True)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("{not json", id="not-json"),
        pytest.param({"id": "msg", "type": "message"}, id="no-content"),
    ],
)
async def test_malformed_body(
    server: FakeProviderServer, connection: AnthropicChatModelConnection, body: Any
) -> None:
    server.enqueue(ScriptedResponse(200, body))
    with pytest.raises(ChatModelError) as caught:
        await connection.achat([ChatMessage.user("Hi")], model=MODEL)
    assert (caught.value.kind, caught.value.retryable) == ("malformed_response", False)


async def test_connection_refused_is_retryable() -> None:
    with FakeProviderServer() as closed:
        url = closed.base_url
    connection = AnthropicChatModelConnection(api_key=API_KEY, base_url=url, timeout=2)
    with pytest.raises(ChatModelError) as caught:
        await connection.achat([ChatMessage.user("Hi")], model=MODEL)
    assert caught.value.retryable is True
    assert caught.value.kind in ("connection", "timeout")


# -------------------------------------------------------------------- connection


def test_api_key_is_kept_out_of_repr_and_dump() -> None:
    connection = AnthropicChatModelConnection(api_key=API_KEY, base_url="http://localhost:1")
    assert API_KEY not in repr(connection)
    assert "api_key" not in connection.model_dump()
    assert API_KEY not in connection.model_dump_json()
    assert (connection.timeout, connection.max_retries) == (60.0, 0)


async def test_client_is_created_once_and_reused(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    server.enqueue(_response(), _response())
    await connection.achat([ChatMessage.user("a")], model=MODEL)
    client = connection._sdk_client()
    await connection.achat([ChatMessage.user("b")], model=MODEL)
    assert connection._sdk_client() is client
    assert client.max_retries == 0


def test_sync_chat_works_across_calls(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    server.enqueue(_response(), _response(content=[{"type": "text", "text": "Rainy."}]))
    assert connection.chat([ChatMessage.user("a")], model=MODEL).message.text == "Sunny."
    assert connection.chat([ChatMessage.user("b")], model=MODEL).message.text == "Rainy."
    assert len(server.requests) == 2


def test_default_headers_are_sent(server: FakeProviderServer) -> None:
    connection = AnthropicChatModelConnection(
        api_key=API_KEY, base_url=server.base_url, default_headers={"x-team": "search"}
    )
    server.enqueue(_response())
    connection.chat([ChatMessage.user("a")], model=MODEL)
    assert server.requests[0].headers["x-team"] == "search"


# ------------------------------------------------------------------------- setup


def test_setup_model_kwargs() -> None:
    assert AnthropicChatModelSetup(connection="anthropic").model_kwargs == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 1024,
    }
    setup = AnthropicChatModelSetup(
        connection="anthropic",
        model="claude-opus-4-8",
        max_tokens=2000,
        temperature=0.0,
        thinking_budget_tokens=1024,
        tool_choice="any",
        stop_sequences=["END"],
        params={"top_k": 3, "max_tokens": 3000},
    )
    assert setup.model_kwargs == {
        "model": "claude-opus-4-8",
        "max_tokens": 3000,
        "temperature": 0.0,
        "thinking_budget_tokens": 1024,
        "tool_choice": "any",
        "stop_sequences": ["END"],
        "top_k": 3,
    }


def test_setup_rejects_bad_options() -> None:
    with pytest.raises(ValueError):
        AnthropicChatModelSetup(connection="c", temperature=1.5)
    with pytest.raises(ValueError):
        AnthropicChatModelSetup(connection="c", thinking_budget_tokens=0)


async def test_setup_kwargs_drive_the_request(server: FakeProviderServer) -> None:
    connection = ResourceDescriptor(
        "flink_agents.integrations.chat_models.anthropic.AnthropicChatModelConnection",
        api_key=API_KEY,
        base_url=server.base_url,
    ).build()
    assert isinstance(connection, AnthropicChatModelConnection)
    setup = AnthropicChatModelSetup(connection="anthropic", temperature=0.5, tool_choice="auto")
    server.enqueue(_response())

    await connection.achat([ChatMessage.user("Hi")], [WEATHER], **setup.model_kwargs)

    body = server.bodies[0]
    assert {k: body[k] for k in ("model", "max_tokens", "temperature", "tool_choice")} == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 1024,
        "temperature": 0.5,
        "tool_choice": {"type": "auto"},
    }


# -------------------------------------------------------------------------- live


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="ANTHROPIC_API_KEY not set")
def test_anthropic_reads_image_returned_by_tool() -> None:
    connection = AnthropicChatModelConnection()
    model = os.environ.get("ANTHROPIC_TEST_MODEL", "claude-sonnet-4-6")
    snapshot = ToolMetadata(
        name="take_snapshot",
        description="Takes a snapshot of the camera and returns it as an image.",
        args_schema={"type": "object", "properties": {}},
    )
    history = [
        ChatMessage.user(
            "Call take_snapshot, then tell me in one word the main colour of the image."
        )
    ]

    async def run() -> str:
        first = await connection.achat(
            history, [snapshot], model=model, max_tokens=256, tool_choice="take_snapshot"
        )
        calls: list[ToolCallBlock] = first.message.tool_calls
        assert calls, f"no tool call: {first.message.text!r}"
        png = base64.b64encode(red_png()).decode()
        output = [{"type": "image", "data": png, "mimeType": "image/png"}]
        results = [
            ChatMessage.tool_result(
                ToolResponse.from_output(call.id, call.name, output).to_result_block()
            )
            for call in calls
        ]
        final = await connection.achat(
            [*history, first.message, *results], [snapshot], model=model, max_tokens=256
        )
        return final.message.text

    answer = asyncio.run(run())
    assert "red" in answer.lower()


async def test_an_answer_saying_its_tokens_are_used_up_pauses_the_connection(
    server: FakeProviderServer, connection: AnthropicChatModelConnection
) -> None:
    # The reset is a time: 30 s on for 60 tokens, one back every 0.5 s.
    reset = datetime.fromtimestamp(time.time() + 30.0, timezone.utc).isoformat()
    server.enqueue(
        ScriptedResponse(
            body=_response(),
            headers={
                "anthropic-ratelimit-tokens-limit": "60",
                "anthropic-ratelimit-tokens-remaining": "0",
                "anthropic-ratelimit-tokens-reset": reset,
            },
        )
    )
    clock = FakeClock(start=0.0)
    limiter = RequestLimiter(limits_of(connection), clock=clock, sleep=clock.sleep)
    use_limiter(connection, limiter)
    setup = AnthropicChatModelSetup(
        connection="conn", model=MODEL, get_resource=lambda name, kind: connection
    )
    await setup.achat([ChatMessage.user("hi")])
    assert limiter.used_up == 1 and limiter.limit == 1
    paused = limiter.paused_until
    assert paused is not None and 0.45 < paused <= 0.5  # read against the real time
