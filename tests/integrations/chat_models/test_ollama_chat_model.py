"""`OllamaChatModelConnection` through the real ``ollama`` SDK against a local fake server.

Every request test asserts the exact JSON body the server received on ``/api/chat``.
"""

from __future__ import annotations

import base64
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
from flink_agents.api.errors import ChatModelError, UnknownOptionError, UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models._ollama_chat_api import tool_to_wire
from flink_agents.integrations.chat_models.ollama_chat_model import (
    OllamaChatModelConnection,
    OllamaChatModelSetup,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.fakes.images import red_png
from tests.integrations.chat_models.provider_helpers import (
    close_sdk_client,
    held_server,
    refused_url,
    through_state,
)

PNG_B64 = "iVBORw0KGgo="
API_KEY = "ollama-key-0123456789abcdef"


def reply(
    message: dict[str, Any], done_reason: str | None = "stop", **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "qwen3:8b",
        "created_at": "2026-12-01T10:00:00Z",
        "message": {"role": "assistant", **message},
        "done": True,
        "prompt_eval_count": 21,
        "eval_count": 4,
    }
    if done_reason is not None:
        body["done_reason"] = done_reason
    body.update(extra)
    return body


TEXT_REPLY = reply({"content": "It is red."})


@pytest.fixture
async def connection(server: FakeProviderServer) -> AsyncIterator[OllamaChatModelConnection]:
    connection = OllamaChatModelConnection(base_url=server.base_url, request_timeout=5)
    yield connection
    await close_sdk_client(connection)  # inside the test's loop


# ------------------------------------------------------------------------ round trips


async def test_text_turn_exact_body_and_result(
    server: FakeProviderServer, connection: OllamaChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    result = await connection.achat(
        [ChatMessage.system("Be brief."), ChatMessage.user("Color?")],
        model="qwen3:8b",
        temperature=0.2,
        num_ctx=4096,
        keep_alive="10m",
        think=False,
    )
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/api/chat")
    assert "authorization" not in request.headers
    assert request.body == {
        "model": "qwen3:8b",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Color?"},
        ],
        "stream": False,
        "tools": [],
        "think": False,
        "keep_alive": "10m",
        "options": {"temperature": 0.2, "num_ctx": 4096},
    }
    assert result.message.blocks == [TextBlock(text="It is red.")]
    assert result.model == "qwen3:8b"
    assert result.response_id is None
    assert result.finish_reason == "stop"
    assert result.usage == Usage(input_tokens=21, output_tokens=4, total_tokens=25)
    assert result.metadata == {
        "raw_finish_reason": "stop",
        "created_at": "2026-12-01T10:00:00Z",
    }


async def test_user_images_go_in_the_images_list(
    server: FakeProviderServer, connection: OllamaChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    message = ChatMessage.user(
        [
            TextBlock(text="Compare "),
            ImageBlock(mime_type="image/png", data=PNG_B64),
            TextBlock(text="and this."),
            ImageBlock(mime_type="image/jpeg", url="data:image/jpeg;base64,/9j/4AAQ"),
        ]
    )
    await connection.achat([message], model="llava")
    assert server.bodies[0]["messages"] == [
        {"role": "user", "content": "Compare and this.", "images": [PNG_B64, "/9j/4AAQ"]}
    ]


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        (ImageBlock(mime_type="image/png", url="https://x.test/a.png"), "not by URL"),
        (AudioBlock(mime_type="audio/wav", data="UklGRg=="), "text and images only"),
        (VideoBlock(mime_type="video/mp4", data="AAAA"), "text and images only"),
        (DocumentBlock(mime_type="application/pdf", data="JVBERi0="), "text and images only"),
        (ImageBlock(mime_type="image/png", data=PNG_B64).redact(), "redacted"),
    ],
    ids=["image-url", "audio", "video", "pdf", "redacted"],
)
@pytest.mark.parametrize("where", ["user", "tool"])
async def test_unsupported_media_raise_before_sending(
    server: FakeProviderServer,
    connection: OllamaChatModelConnection,
    block: Any,
    reason: str,
    where: str,
) -> None:
    if where == "user":
        history = [ChatMessage.user([TextBlock(text="see"), block])]
    else:
        history = [
            ChatMessage.user("go"),
            ChatMessage.assistant("", [ToolCallBlock(id="c1", name="fetch")]),
            ChatMessage.tool_result(ToolResultBlock(call_id="c1", content=[block])),
        ]
    with pytest.raises(UnsupportedContentBlockError, match=reason) as info:
        await connection.achat(history, model="llava")
    assert info.value.provider == "ollama"
    assert "x.test" not in str(info.value) and PNG_B64 not in str(info.value)
    assert server.requests == []


async def test_media_in_an_assistant_message_raises(
    server: FakeProviderServer, connection: OllamaChatModelConnection
) -> None:
    history = [
        ChatMessage.user("draw"),
        ChatMessage.assistant([ImageBlock(mime_type="image/png", data=PNG_B64)]),
        ChatMessage.user("again"),
    ]
    with pytest.raises(UnsupportedContentBlockError, match="not assistant messages"):
        await connection.achat(history, model="llava")
    assert server.requests == []


async def test_tool_round_trip_with_an_image_the_tool_returned(
    server: FakeProviderServer, connection: OllamaChatModelConnection
) -> None:
    """Seed rows: tool calls get generated ids that are never sent (a tool message names
    its tool); the tool's image reaches the model in a user message after the tool run."""
    server.enqueue(
        reply(
            {
                "content": "",
                "tool_calls": [
                    {"function": {"name": "get_picture", "arguments": {"size": 16}}},
                    {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
                ],
            }
        ),
        TEXT_REPLY,
    )
    tools = [
        ToolMetadata(name="get_picture", description="The picture."),
        ToolMetadata(name="get_weather"),
    ]
    history = [ChatMessage.user("What color is the picture, and the weather?")]
    first = await connection.achat(history, tools, model="qwen3:8b")
    picture, weather = first.message.tool_calls
    assert (picture.name, picture.input) == ("get_picture", {"size": 16})
    assert picture.id.startswith("call_") and weather.id.startswith("call_")
    assert picture.id != weather.id
    assert first.finish_reason == "tool_calls"
    assert first.metadata["raw_finish_reason"] == "stop"

    png = red_png(2)
    history += [
        first.message,
        ChatMessage.tool_result(
            ToolResponse.from_output(picture.id, picture.name, png).to_result_block()
        ),
        ChatMessage.tool_result(
            ToolResponse.failure(weather.id, weather.name, "service down").to_result_block()
        ),
    ]
    second = await connection.achat(through_state(history), tools, model="qwen3:8b")
    assert second.message.text == "It is red."

    png_b64 = base64.b64encode(png).decode()
    assert server.bodies[1] == {
        "model": "qwen3:8b",
        "messages": [
            {"role": "user", "content": "What color is the picture, and the weather?"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"function": {"name": "get_picture", "arguments": {"size": 16}}},
                    {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
                ],
            },
            {
                "role": "tool",
                "content": "[attached below: image 1 (image/png)]",
                "tool_name": "get_picture",
            },
            {"role": "tool", "content": "Error: service down", "tool_name": "get_weather"},
            {
                "role": "user",
                "content": f"image 1 from tool call {picture.id} (get_picture)",
                "images": [png_b64],
            },
        ],
        "stream": False,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_picture",
                    "description": "The picture.",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
        ],
    }
    # Generated ids stay ours: the API has no tool-call id field, so none is sent.
    assert picture.id not in str(server.bodies[1]["messages"][:4])


async def test_tool_media_error_option_raises(
    server: FakeProviderServer, connection: OllamaChatModelConnection
) -> None:
    history = [
        ChatMessage.user("go"),
        ChatMessage.assistant("", [ToolCallBlock(id="c1", name="shot")]),
        ChatMessage.tool_result(
            ToolResultBlock(call_id="c1", content=[ImageBlock(mime_type="image/png", data=PNG_B64)])
        ),
    ]
    with pytest.raises(UnsupportedContentBlockError, match="tool_media='error'"):
        await connection.achat(history, model="llava", tool_media="error")
    assert server.requests == []


async def test_reasoning_is_kept_and_never_sent_back(
    server: FakeProviderServer, connection: OllamaChatModelConnection
) -> None:
    """Seed row: Ollama stores reasoning but does not replay it, also after the history
    went through agent state as JSON."""
    server.enqueue(
        reply({"thinking": "The user wants a color.", "content": "<think>red or blue</think>Red."}),
        TEXT_REPLY,
    )
    history = [ChatMessage.user("Color?")]
    first = await connection.achat(history, model="qwen3:8b", extract_reasoning=True)
    assert first.message.blocks == [
        ReasoningBlock(text="The user wants a color.", provider="ollama"),
        ReasoningBlock(text="red or blue", provider="ollama"),
        TextBlock(text="Red."),
    ]
    history = through_state([*history, first.message, ChatMessage.user("Why?")])
    assert history[1] == first.message
    await connection.achat(history, model="qwen3:8b")
    assert server.bodies[1]["messages"] == [
        {"role": "user", "content": "Color?"},
        {"role": "assistant", "content": "Red."},
        {"role": "user", "content": "Why?"},
    ]


async def test_think_tags_stay_in_the_text_without_extract_reasoning(
    server: FakeProviderServer, connection: OllamaChatModelConnection
) -> None:
    server.enqueue(reply({"content": "<think>x</think>Red."}))
    result = await connection.achat([ChatMessage.user("?")], model="m")
    assert result.message.blocks == [TextBlock(text="<think>x</think>Red.")]


async def test_reasoning_from_other_providers_is_not_sent(
    server: FakeProviderServer, connection: OllamaChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    history = [
        ChatMessage.user("a"),
        ChatMessage.assistant(
            [
                ReasoningBlock(text="t", provider="anthropic", signature="sig"),
                TextBlock(text="b"),
            ]
        ),
        ChatMessage.user("c"),
    ]
    await connection.achat(history, model="m")
    assert server.bodies[0]["messages"][1] == {"role": "assistant", "content": "b"}


# ----------------------------------------------------------------- usage and finish


@pytest.mark.parametrize(
    ("counts", "usage"),
    [
        ({}, Usage()),
        (
            {"prompt_eval_count": 0, "eval_count": 0},
            Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        ),
        # Ollama leaves prompt_eval_count out when the whole prompt came from its cache.
        ({"eval_count": 3}, Usage(output_tokens=3)),
        (
            {"prompt_eval_count": 5, "eval_count": 2},
            Usage(input_tokens=5, output_tokens=2, total_tokens=7),
        ),
    ],
    ids=["none", "zero", "cached-prompt", "both"],
)
async def test_usage_unknown_is_not_zero(
    server: FakeProviderServer,
    connection: OllamaChatModelConnection,
    counts: dict[str, int],
    usage: Usage,
) -> None:
    body = reply({"content": "ok"})
    del body["prompt_eval_count"], body["eval_count"]
    server.enqueue({**body, **counts})
    result = await connection.achat([ChatMessage.user("hi")], model="m")
    assert result.usage == usage
    assert result.usage.is_unknown == (counts == {})


@pytest.mark.parametrize(
    ("done_reason", "finish"),
    [("stop", "stop"), ("length", "length"), ("load", "load"), (None, None)],
)
async def test_finish_reasons(
    server: FakeProviderServer,
    connection: OllamaChatModelConnection,
    done_reason: str | None,
    finish: str | None,
) -> None:
    server.enqueue(reply({"content": "ok"}, done_reason=done_reason))
    result = await connection.achat([ChatMessage.user("hi")], model="m")
    assert result.finish_reason == finish
    assert result.metadata["raw_finish_reason"] == done_reason


# ------------------------------------------------------------------ options, setup


async def test_setup_fields_and_additional_kwargs_reach_the_body(
    server: FakeProviderServer, connection: OllamaChatModelConnection
) -> None:
    setup = OllamaChatModelSetup(
        connection="ollama",
        model="qwen3:8b",
        think="high",
        additional_kwargs={"top_k": 20, "seed": 7, "format": "json", "options": {"top_p": 0.9}},
    )
    assert setup.model_kwargs == {
        "model": "qwen3:8b",
        "temperature": 0.75,
        "num_ctx": 2048,
        "keep_alive": "5m",
        "think": "high",
        "extract_reasoning": True,
        "tool_media": "user_message",
        "top_k": 20,
        "seed": 7,
        "format": "json",
        "options": {"top_p": 0.9},
    }
    server.enqueue(TEXT_REPLY)
    await connection.achat([ChatMessage.user("hi")], **setup.model_kwargs)
    assert server.bodies[0] == {
        "model": "qwen3:8b",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
        "tools": [],
        "think": "high",
        "format": "json",
        "keep_alive": "5m",
        "options": {"top_p": 0.9, "temperature": 0.75, "num_ctx": 2048, "top_k": 20, "seed": 7},
    }


def test_upstream_descriptors_work_unchanged() -> None:
    connection = ResourceDescriptor(
        clazz="flink_agents.integrations.chat_models.ollama_chat_model.OllamaChatModelConnection",
        base_url="http://ollama.internal:11434",
        request_timeout=120.0,
    ).build()
    assert isinstance(connection, OllamaChatModelConnection)
    assert (connection.base_url, connection.request_timeout) == (
        "http://ollama.internal:11434",
        120.0,
    )
    setup = ResourceDescriptor(
        clazz="flink_agents.integrations.chat_models.ollama_chat_model.OllamaChatModelSetup",
        connection="ollama_connection",
        model="qwen3:8b",
        temperature=0.7,
        num_ctx=8192,
        keep_alive="1m",
        think=True,
        extract_reasoning=False,
        additional_kwargs={"top_k": 5},
    ).build()
    assert isinstance(setup, OllamaChatModelSetup)
    assert setup.params == {"top_k": 5}
    assert setup.model_kwargs["extract_reasoning"] is False


def test_connection_defaults_and_refusals() -> None:
    connection = OllamaChatModelConnection()
    assert (connection.base_url, connection.timeout) == ("http://localhost:11434", 30.0)
    with pytest.raises(ValueError, match="does not retry"):
        OllamaChatModelConnection(max_retries=2)
    with pytest.raises(ValueError, match="makes its own HTTP client"):
        OllamaChatModelConnection(http_client=lambda: None)
    with pytest.raises(ValueError, match="same option"):
        OllamaChatModelConnection(timeout=1, request_timeout=2)
    with pytest.raises(UnknownOptionError):
        OllamaChatModelConnection(endpoint="http://x")  # type: ignore[call-arg]


async def test_model_is_required(connection: OllamaChatModelConnection) -> None:
    with pytest.raises(ValueError, match="model parameter is required"):
        await connection.achat([ChatMessage.user("hi")])
    with pytest.raises(ValueError, match="streaming"):
        await connection.achat([ChatMessage.user("hi")], model="m", stream=True)


async def test_api_key_is_a_bearer_token_never_shown(server: FakeProviderServer) -> None:
    connection = OllamaChatModelConnection(
        base_url=server.base_url, api_key=API_KEY, default_headers={"x-team": "a"}
    )
    server.enqueue(TEXT_REPLY)
    await connection.achat([ChatMessage.user("hi")], model="m")
    await close_sdk_client(connection)
    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert server.requests[0].headers["x-team"] == "a"
    assert API_KEY not in repr(connection) and "api_key" not in connection.model_dump()
    assert pickle.loads(pickle.dumps(connection)).api_key == API_KEY


def test_sync_chat(server: FakeProviderServer) -> None:
    connection = OllamaChatModelConnection(base_url=server.base_url)
    server.enqueue(TEXT_REPLY)
    assert connection.chat([ChatMessage.user("a")], model="m").message.text == "It is red."


def test_tool_parameters_as_ollama_takes_them() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name", "minLength": 1},
            "days": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "units": {"enum": ["c", "f"], "type": "string", "title": "Units"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "where": {"$ref": "#/$defs/Place"},
            "opt_list": {
                "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]
            },
        },
        "required": ["city"],
        "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}}},
    }
    wire = tool_to_wire(ToolMetadata(name="forecast", args_schema=schema))
    assert wire == {
        "type": "function",
        "function": {
            "name": "forecast",
            "parameters": {
                "type": "object",
                "required": ["city"],
                "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}}},
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "days": {"type": ["integer", "null"]},
                    "units": {"type": "string", "enum": ["c", "f"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "where": {"type": "object"},
                    "opt_list": {"type": ["array", "null"], "items": {"type": "integer"}},
                },
            },
        },
    }


async def test_tool_parameters_reach_the_server_as_built(
    server: FakeProviderServer, connection: OllamaChatModelConnection
) -> None:
    """The SDK's Tool model keeps exactly what `tool_to_wire` builds (nothing dropped)."""
    schema = {
        "type": "object",
        "properties": {
            "days": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags"},
            "where": {"$ref": "#/$defs/Place"},
        },
        "$defs": {"Place": {"type": "object"}},
    }
    tool = ToolMetadata(name="forecast", description="Forecast.", args_schema=schema)
    server.enqueue(TEXT_REPLY)
    await connection.achat([ChatMessage.user("hi")], [tool], model="m")
    assert server.bodies[0]["tools"] == [tool_to_wire(tool)]


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (400, "bad_request", False),
        (401, "authentication", False),
        (404, "bad_request", False),
        (429, "rate_limit", True),
        (500, "server", True),
        (503, "server", True),
    ],
)
async def test_http_errors(
    server: FakeProviderServer,
    connection: OllamaChatModelConnection,
    status: int,
    kind: str,
    retryable: bool,
) -> None:
    server.enqueue(ScriptedResponse(status, {"error": f"model 'nope' failed ({status})"}))
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="nope")
    error = info.value
    assert (error.status_code, error.kind, error.retryable) == (status, kind, retryable)
    assert error.provider == "ollama"
    assert f"model 'nope' failed ({status})" in error.message
    assert len(server.requests) == 1


async def test_the_key_is_masked_when_the_server_echoes_it(server: FakeProviderServer) -> None:
    connection = OllamaChatModelConnection(base_url=server.base_url, api_key=API_KEY)
    server.enqueue(ScriptedResponse(401, {"error": f"unauthorized: Bearer {API_KEY}"}))
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="m")
    await close_sdk_client(connection)
    assert info.value.kind == "authentication"
    assert API_KEY not in str(info.value) and API_KEY not in repr(info.value)


async def test_a_refused_connection_is_retryable() -> None:
    connection = OllamaChatModelConnection(base_url=refused_url(), request_timeout=5)
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="m")
    assert (info.value.kind, info.value.retryable, info.value.status_code) == (
        "connection",
        True,
        None,
    )


async def test_a_timeout_is_retryable() -> None:
    with held_server(TEXT_REPLY) as server:
        connection = OllamaChatModelConnection(base_url=server.base_url, request_timeout=0.2)
        with pytest.raises(ChatModelError) as info:
            await connection.achat([ChatMessage.user("hi")], model="m")
        await close_sdk_client(connection)
    assert (info.value.kind, info.value.retryable) == ("timeout", True)


@pytest.mark.parametrize(
    "body",
    ["{not json", '{"model": "m", "done": true}', '{"message": {"content": "no role"}}'],
    ids=["not-json", "no-message", "message-without-role"],
)
async def test_malformed_bodies(
    server: FakeProviderServer, connection: OllamaChatModelConnection, body: str
) -> None:
    server.enqueue(ScriptedResponse(200, body))
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="m")
    assert (info.value.kind, info.value.retryable) == ("malformed_response", False)
