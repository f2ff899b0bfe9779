"""`OpenAIChatModelConnection` through the real ``openai`` SDK against a local fake server.

Every test asserts the exact JSON body the server received.
"""

from __future__ import annotations

import pickle
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flink_agents.api.chat_result import Usage
from flink_agents.api.content_blocks import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from flink_agents.api.errors import ChatModelError, UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import BaseTool, ToolMetadata
from flink_agents.integrations.chat_models.openai import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.chat_models.provider_helpers import close_sdk_client, completion_body

API_KEY = "sk-test-0123456789abcdef"
PNG_B64 = "iVBORw0KGgo="


TEXT_REPLY = completion_body({"content": "It is red."})


@pytest.fixture
async def connection(server: FakeProviderServer) -> AsyncIterator[OpenAIChatModelConnection]:
    connection = OpenAIChatModelConnection(api_key=API_KEY, base_url=server.base_url, timeout=5.0)
    yield connection
    await close_sdk_client(connection)


async def close_client(connection: OpenAIChatModelConnection) -> None:
    """Close the SDK client inside the test's loop (else its pool is closed after the loop)."""
    await close_sdk_client(connection)


class WeatherTool(BaseTool):
    async def acall(self, **arguments: Any) -> Any:
        return {"temp_c": 21}


WEATHER = ToolMetadata(
    name="weather",
    description="Current weather.",
    args_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


# ------------------------------------------------------------------------ round trips


async def test_text_turn_exact_body_and_result(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    result = await connection.achat(
        [ChatMessage.system("Be brief."), ChatMessage.user("Color?")], model="gpt-test"
    )
    [req] = server.requests
    assert req.method == "POST" and req.path == "/chat/completions"
    assert req.headers["authorization"] == f"Bearer {API_KEY}"
    assert req.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Color?"},
        ],
    }
    assert result.message.blocks == [TextBlock(text="It is red.")]
    assert result.model == "gpt-test-2026"
    assert result.response_id == "chatcmpl-1"
    assert result.finish_reason == "stop"
    assert result.usage == Usage(input_tokens=12, output_tokens=3, total_tokens=15)


async def test_multimodal_user_message_exact_body(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    message = ChatMessage.user(
        [
            TextBlock(text="Describe all:"),
            ImageBlock(mime_type="image/png", data=PNG_B64),
            ImageBlock(mime_type="image/webp", url="https://x.test/a.webp"),
            AudioBlock(mime_type="audio/wav", data="UklGRg=="),
            DocumentBlock(mime_type="application/pdf", data="JVBERi0=", name="a.pdf"),
        ]
    )
    await connection.achat([message], model="gpt-test")
    assert server.bodies[0] == {
        "model": "gpt-test",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Describe all:"},
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{PNG_B64}"},
                    },
                    {"type": "image_url", "image_url": {"url": "https://x.test/a.webp"}},
                    {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                    {
                        "type": "file",
                        "file": {
                            "file_data": "data:application/pdf;base64,JVBERi0=",
                            "filename": "a.pdf",
                        },
                    },
                ],
            }
        ],
    }


async def test_tool_loop_with_tool_image_exact_bodies(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    """Seed contract: an image a tool returns reaches the model (here, in a user message)."""
    server.enqueue(
        completion_body(
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_shot",
                        "type": "function",
                        "function": {"name": "screenshot", "arguments": '{"page": "home"}'},
                    }
                ],
            },
            finish="tool_calls",
        ),
        TEXT_REPLY,
    )
    tools = [ToolMetadata(name="screenshot", description="Take a screenshot.")]
    history = [ChatMessage.user("What color is the page?")]
    first = await connection.achat(history, tools, model="gpt-test", tool_choice="auto")
    [call] = first.message.tool_calls
    assert (call.id, call.name, call.input) == ("call_shot", "screenshot", {"page": "home"})
    assert first.finish_reason == "tool_calls"

    # The tool answers in the Responses dialect (input_text + input_image parts).
    output = [
        {"type": "input_text", "text": "Screenshot taken."},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_B64}"},
    ]
    result_block = ToolResponse.from_output(call.id, call.name, output).to_result_block()
    history += [first.message, ChatMessage.tool_result(result_block)]
    second = await connection.achat(history, tools, model="gpt-test", tool_choice="auto")
    assert second.message.text == "It is red."

    tool_schema = {
        "type": "function",
        "function": {
            "name": "screenshot",
            "description": "Take a screenshot.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    assert server.bodies[1] == {
        "model": "gpt-test",
        "messages": [
            {"role": "user", "content": "What color is the page?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_shot",
                        "type": "function",
                        "function": {"name": "screenshot", "arguments": '{"page": "home"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call_shot",
                "content": "Screenshot taken.\n[attached below: image 1 (image/png)]",
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "image 1 from tool call call_shot:"},
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{PNG_B64}"},
                    },
                ],
            },
        ],
        "tools": [tool_schema],
        "tool_choice": "auto",
    }


@pytest.mark.parametrize(
    ("output", "content"),
    [
        # All-text part lists collapse to a plain string.
        (
            [{"type": "input_text", "text": "a"}, {"type": "text", "text": "b"}],
            "a\nb",
        ),
        # Structured values become JSON text.
        ({"temp_c": 21, "sky": "clear"}, '{"temp_c":21,"sky":"clear"}'),
        # An unknown part degrades to a text part carrying its JSON.
        (
            [{"type": "input_text", "text": "a"}, {"type": "hologram", "id": 7}],
            'a\n{"type": "hologram", "id": 7}',
        ),
        ("plain", "plain"),
    ],
    ids=["all-text-parts", "structured", "unknown-part", "string"],
)
async def test_text_tool_outputs_stay_plain_tool_messages(
    server: FakeProviderServer,
    connection: OpenAIChatModelConnection,
    output: Any,
    content: str,
) -> None:
    server.enqueue(TEXT_REPLY)
    block = ToolResponse.from_output("call_1", "weather", output).to_result_block()
    messages = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=[ToolCallBlock(id="call_1", name="weather")]),
        ChatMessage.tool_result(block),
    ]
    await connection.achat(messages, model="gpt-test")
    assert server.bodies[0]["messages"][2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": content}
    ]


async def test_failed_tool_is_prefixed(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    block = ToolResponse.failure("call_1", "weather", "city not found").to_result_block()
    messages = [
        ChatMessage.assistant(tool_calls=[ToolCallBlock(id="call_1", name="weather")]),
        ChatMessage.tool_result(block),
    ]
    await connection.achat(messages, model="gpt-test")
    assert server.bodies[0]["messages"][1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Error: city not found",
    }


async def test_options_and_extra_fields_reach_the_body(
    server: FakeProviderServer,
) -> None:
    server.enqueue(TEXT_REPLY)
    connection = OpenAIChatModelConnection(
        api_key=API_KEY, base_url=server.base_url, default_headers={"x-team": "agents"}
    )
    await connection.achat(
        [ChatMessage.user("hi")],
        [WeatherTool(metadata=WEATHER)],
        model="qwen3",
        max_tokens=64,
        max_tokens_param="max_completion_tokens",
        temperature=0.0,
        tool_choice="weather",
        response_format={"type": "json_object"},
        top_k=20,
        chat_template_kwargs={"enable_thinking": False},
    )
    await close_sdk_client(connection)
    [req] = server.requests
    assert req.headers["x-team"] == "agents"
    assert req.body == {
        "model": "qwen3",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Current weather.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ],
        "max_completion_tokens": 64,
        "temperature": 0.0,
        "tool_choice": {"type": "function", "function": {"name": "weather"}},
        "response_format": {"type": "json_object"},
        "top_k": 20,
        "chat_template_kwargs": {"enable_thinking": False},
    }


async def test_reasoning_from_compatible_server_is_parsed_and_not_replayed(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    server.enqueue(completion_body({"content": "4", "reasoning_content": "2 plus 2"}), TEXT_REPLY)
    first = await connection.achat([ChatMessage.user("2+2?")], model="qwen3")
    assert first.message.blocks == [
        ReasoningBlock(text="2 plus 2", provider="openai-chat"),
        TextBlock(text="4"),
    ]
    await connection.achat([ChatMessage.user("2+2?"), first.message], model="qwen3")
    assert server.bodies[1]["messages"] == [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
    ]


async def test_unsupported_block_sends_nothing(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    video = VideoBlock(mime_type="video/mp4", url="https://x.test/v.mp4")
    with pytest.raises(UnsupportedContentBlockError):
        await connection.achat([ChatMessage.user([video])], model="gpt-test")
    image = ImageBlock(mime_type="image/png", data=PNG_B64)
    messages = [
        ChatMessage.assistant(tool_calls=[ToolCallBlock(id="c1", name="shot")]),
        ChatMessage.tool_result(ToolResultBlock(call_id="c1", content=[image])),
    ]
    with pytest.raises(UnsupportedContentBlockError):
        await connection.achat(messages, model="gpt-test", tool_media="error")
    assert server.requests == []


def test_sync_chat(server: FakeProviderServer) -> None:
    connection = OpenAIChatModelConnection(api_key=API_KEY, base_url=server.base_url)
    server.enqueue(TEXT_REPLY, TEXT_REPLY)
    assert connection.chat([ChatMessage.user("a")], model="gpt-test").message.text == "It is red."
    assert connection.chat([ChatMessage.user("b")], model="gpt-test").message.text == "It is red."
    assert [b["messages"][0]["content"] for b in server.bodies] == ["a", "b"]


def test_upstreams_keywords_api_base_url_and_name(server: FakeProviderServer) -> None:
    """Upstream's connection is made with ``api_base_url`` (and its tests pass ``name``,
    which resources ignore there and here)."""
    connection = OpenAIChatModelConnection(
        name="openai", api_key=API_KEY, api_base_url=server.base_url
    )
    assert connection.base_url == server.base_url
    server.enqueue(TEXT_REPLY)
    assert connection.chat([ChatMessage.user("a")], model="gpt-test").message.text == "It is red."
    with pytest.raises(ValueError, match="same option"):
        OpenAIChatModelConnection(base_url=server.base_url, api_base_url=server.base_url)


async def test_client_is_created_once_per_loop(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY, TEXT_REPLY)
    await connection.achat([ChatMessage.user("a")], model="gpt-test")
    client = connection._sdk_client()
    await connection.achat([ChatMessage.user("b")], model="gpt-test")
    assert connection._sdk_client() is client


# ---------------------------------------------------------------------------- setup


async def test_setup_kwargs_drive_the_connection(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    setup = OpenAIChatModelSetup(
        connection="oai",
        model="llama3.2",
        max_tokens=100,
        temperature=0.5,
        tool_choice="none",
        response_format={"type": "text"},
        params={"seed": 1},
    )
    assert setup.model_kwargs == {
        "model": "llama3.2",
        "max_tokens": 100,
        "max_tokens_param": "max_tokens",
        "temperature": 0.5,
        "tool_choice": "none",
        "response_format": {"type": "text"},
        "tool_media": "user_message",
        "seed": 1,
    }
    connection = ResourceDescriptor(
        OpenAIChatModelConnection, api_key=API_KEY, base_url=server.base_url
    ).build()
    assert isinstance(connection, OpenAIChatModelConnection)
    await connection.achat([ChatMessage.user("hi")], **setup.model_kwargs)
    await close_sdk_client(connection)
    assert server.bodies[0] == {
        "model": "llama3.2",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 100,
        "temperature": 0.5,
        "tool_choice": "none",
        "response_format": {"type": "text"},
        "seed": 1,
    }


def test_setup_defaults_and_params_win() -> None:
    setup = OpenAIChatModelSetup(connection="oai")
    assert setup.model_kwargs == {"model": "gpt-4.1-mini", "tool_media": "user_message"}
    setup = OpenAIChatModelSetup(connection="oai", temperature=0.1, params={"temperature": 0.9})
    assert setup.model_kwargs["temperature"] == 0.9
    with pytest.raises(ValueError):
        OpenAIChatModelSetup(connection="oai", tool_media="drop")  # type: ignore[arg-type]


def test_api_key_is_never_shown_or_dumped() -> None:
    connection = OpenAIChatModelConnection(api_key=API_KEY, base_url="http://127.0.0.1:9")
    assert API_KEY not in repr(connection)
    assert "api_key" not in connection.model_dump()
    assert API_KEY not in str(connection.model_dump())
    restored = pickle.loads(pickle.dumps(connection))
    assert restored.api_key == API_KEY


# ----------------------------------------------------------------------------- errors


async def test_429_is_retryable_with_retry_after(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    server.enqueue(
        ScriptedResponse(
            429,
            {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}},
            headers={"retry-after": "7"},
        )
    )
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="gpt-test")
    error = info.value
    assert (error.status_code, error.retryable, error.retry_after) == (429, True, 7.0)
    assert error.kind == "rate_limit"
    assert error.provider == "openai-chat"
    assert "Rate limit reached" in error.message
    assert len(server.requests) == 1  # max_retries=0: the SDK does not retry


async def test_500_is_retryable(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    server.enqueue(ScriptedResponse(500, {"error": {"message": "internal"}}))
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="gpt-test")
    assert (info.value.status_code, info.value.retryable, info.value.kind) == (500, True, "server")


async def test_400_is_not_retryable(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    server.enqueue(ScriptedResponse(400, {"error": {"message": "Invalid 'messages[1].content'"}}))
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="gpt-test")
    assert (info.value.status_code, info.value.retryable) == (400, False)
    assert info.value.kind == "bad_request"
    assert "Invalid 'messages[1].content'" in info.value.message


async def test_401_message_never_shows_the_key(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    server.enqueue(
        ScriptedResponse(401, {"error": {"message": f"Incorrect API key provided: {API_KEY}"}})
    )
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="gpt-test")
    assert info.value.kind == "authentication" and not info.value.retryable
    assert API_KEY not in str(info.value) and API_KEY not in repr(info.value)


async def test_timeout_is_retryable(server: FakeProviderServer) -> None:
    server.enqueue(ScriptedResponse(body=TEXT_REPLY, delay_s=1.5))
    connection = OpenAIChatModelConnection(api_key=API_KEY, base_url=server.base_url, timeout=0.3)
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="gpt-test")
    await close_sdk_client(connection)
    assert (info.value.kind, info.value.retryable) == ("timeout", True)


def test_upstreams_request_timeout_is_the_timeout() -> None:
    """Upstream's own tests make this connection with ``request_timeout`` (its other
    connections' name for the timeout): here it is the timeout, as ``timeout`` is."""
    connection = OpenAIChatModelConnection(api_key=API_KEY, request_timeout=300)
    assert (connection.timeout, connection.request_timeout) == (300, 300)
    assert OpenAIChatModelConnection(api_key=API_KEY, timeout=5).request_timeout == 5


@pytest.mark.parametrize(
    "body",
    ["{not json", '{"object": "chat.completion", "choices": []}', "[1, 2]"],
    ids=["not-json", "no-choices", "not-an-object"],
)
async def test_malformed_body(
    server: FakeProviderServer, connection: OpenAIChatModelConnection, body: str
) -> None:
    server.enqueue(ScriptedResponse(200, body))
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="gpt-test")
    assert (info.value.kind, info.value.retryable) == ("malformed_response", False)


async def test_response_without_usage(
    server: FakeProviderServer, connection: OpenAIChatModelConnection
) -> None:
    reply = completion_body({"content": "ok"})
    del reply["usage"]
    server.enqueue(reply)
    result = await connection.achat([ChatMessage.user("hi")], model="llama3.2")
    assert result.usage == Usage()
    assert result.usage.input_tokens is None and result.usage.output_tokens is None
