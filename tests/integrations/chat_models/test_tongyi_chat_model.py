"""`TongyiChatModelConnection` through the real ``dashscope`` SDK (2.x ``AsyncClient``, native
protocol) against a local fake server: the SDK is pointed at it with ``base_url``."""

from __future__ import annotations

import base64
import pickle
from typing import Any

import httpx
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
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.tongyi_chat_model import (
    TongyiChatModelConnection,
    TongyiChatModelSetup,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.fakes.images import red_png
from tests.integrations.chat_models.provider_helpers import (
    close_sdk_client,
    held_server,
    refused_url,
    through_state,
)

API_KEY = "sk-dashscope-0123456789abcdef"
PNG_B64 = "iVBORw0KGgo="
TEXT_PATH = "/api/v1/services/aigc/text-generation/generation"
MEDIA_PATH = "/api/v1/services/aigc/multimodal-generation/generation"


def reply(message: dict[str, Any], finish: str = "stop", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "request_id": "req-1",
        "output": {
            "choices": [{"finish_reason": finish, "message": {"role": "assistant", **message}}]
        },
        "usage": {"input_tokens": 20, "output_tokens": 4, "total_tokens": 24},
    }
    body.update(extra)
    return body


TEXT_REPLY = reply({"content": "It is red."})


def connect(base_url: str, **settings: Any) -> TongyiChatModelConnection:
    options = {"api_key": API_KEY, "base_url": f"{base_url}/api/v1", "request_timeout": 5}
    return TongyiChatModelConnection(**{**options, **settings})


async def ask(connection: TongyiChatModelConnection, *args: Any, **params: Any) -> Any:
    try:
        return await connection.achat(*args, **params)
    finally:
        await close_sdk_client(connection)


# ------------------------------------------------------------------------ round trips


async def test_text_turn_exact_body_and_result(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    setup = TongyiChatModelSetup(connection="tongyi", additional_kwargs={"top_p": 0.8})
    result = await ask(
        connect(server.base_url),
        [ChatMessage.system("Be brief."), ChatMessage.user("Color?")],
        **setup.model_kwargs,
    )
    [request] = server.requests
    assert request.path == TEXT_PATH
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == {
        "model": "qwen-plus",
        "input": {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Color?"},
            ]
        },
        "parameters": {"result_format": "message", "temperature": 0.7, "top_p": 0.8},
    }
    assert result.message.blocks == [TextBlock(text="It is red.")]
    assert result.model == "qwen-plus"  # the native API names none: the requested one
    assert result.response_id == "req-1"
    assert result.finish_reason == "stop"
    assert result.usage == Usage(input_tokens=20, output_tokens=4, total_tokens=24)


async def test_user_media_go_to_the_multimodal_endpoint(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    message = ChatMessage.user(
        [
            TextBlock(text="Compare"),
            ImageBlock(mime_type="image/png", data=PNG_B64),
            ImageBlock(mime_type="image/jpeg", url="https://x.test/a.jpg"),
            AudioBlock(mime_type="audio/wav", data="UklGRg=="),
            VideoBlock(mime_type="video/mp4", url="oss://bucket/v.mp4"),
        ]
    )
    await ask(connect(server.base_url), [message], model="qwen-omni-turbo")
    [request] = server.requests
    assert request.path == MEDIA_PATH
    assert request.body["input"]["messages"] == [
        {
            "role": "user",
            "content": [
                {"text": "Compare"},
                {"image": f"data:image/png;base64,{PNG_B64}"},
                {"image": "https://x.test/a.jpg"},
                {"audio": "data:audio/wav;base64,UklGRg=="},
                {"video": "oss://bucket/v.mp4"},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        (ImageBlock(mime_type="image/png", url="file:///etc/hosts"), "upload a local file"),
        (ImageBlock(mime_type="image/png", url="/etc/hosts"), "upload a local file"),
        (AudioBlock(mime_type="audio/wav", url="gs://b/a.wav"), "upload a local file"),
        (DocumentBlock(mime_type="application/pdf", data="JVBERi0="), "uploaded files"),
        (ImageBlock(mime_type="image/png", data=PNG_B64).redact(), "redacted"),
    ],
    ids=["file-uri", "local-path", "other-scheme", "pdf", "redacted"],
)
@pytest.mark.parametrize("where", ["user", "tool"])
async def test_unsupported_media_raise_before_sending(
    server: FakeProviderServer, block: Any, reason: str, where: str
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
        await connect(server.base_url).achat(history, model="qwen-vl-plus")
    assert "/etc/hosts" not in str(info.value)
    assert server.requests == []


async def test_media_in_an_assistant_message_raises(server: FakeProviderServer) -> None:
    history = [
        ChatMessage.user("draw"),
        ChatMessage.assistant([ImageBlock(mime_type="image/png", data=PNG_B64)]),
    ]
    with pytest.raises(UnsupportedContentBlockError, match="not assistant messages"):
        await connect(server.base_url).achat(history, model="qwen-plus")
    assert server.requests == []


async def test_tool_round_trip_with_an_image(server: FakeProviderServer) -> None:
    server.enqueue(
        reply(
            {
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_pic",
                        "type": "function",
                        "function": {"name": "get_picture", "arguments": '{"size": 2}'},
                    },
                    {
                        "id": "call_w",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    },
                ],
            },
            finish="tool_calls",
        ),
        TEXT_REPLY,
    )
    connection = connect(server.base_url)
    tools = [
        ToolMetadata(
            name="get_picture",
            description="The picture.",
            args_schema={"type": "object", "properties": {"size": {"type": "integer"}}},
        ),
        ToolMetadata(name="get_weather"),
    ]
    history = [ChatMessage.user("Color and weather?")]
    first = await connection.achat(history, tools, model="qwen-vl-max", tool_choice="auto")
    picture, weather = first.message.tool_calls
    assert (picture.id, picture.input, weather.id) == ("call_pic", {"size": 2}, "call_w")
    assert first.finish_reason == "tool_calls"
    png = red_png(2)
    history = through_state(
        [
            *history,
            first.message,
            ChatMessage.tool_result(
                ToolResultBlock(
                    call_id=picture.id,
                    content=[TextBlock(text="Here:"), ImageBlock(mime_type="image/png", data=png)],
                )
            ),
            ChatMessage.tool_result(
                ToolResponse.failure(weather.id, weather.name, "no data").to_result_block()
            ),
        ]
    )
    await ask(connection, history, tools, model="qwen-vl-max", tool_choice="get_picture")
    png_b64 = base64.b64encode(png).decode()
    assert server.requests[1].path == MEDIA_PATH
    assert server.bodies[1] == {
        "model": "qwen-vl-max",
        "input": {
            "messages": [
                {"role": "user", "content": "Color and weather?"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "call_pic",
                            "type": "function",
                            "function": {"name": "get_picture", "arguments": '{"size": 2}'},
                        },
                        {
                            "id": "call_w",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{}"},
                        },
                    ],
                },
                {
                    "role": "tool",
                    "content": "Here:\n[attached below: image 1 (image/png)]",
                    "tool_call_id": "call_pic",
                    "name": "get_picture",
                },
                {
                    "role": "tool",
                    "content": "Error: no data",
                    "tool_call_id": "call_w",
                    "name": "get_weather",
                },
                {
                    "role": "user",
                    "content": [
                        {"text": "image 1 from tool call call_pic:"},
                        {"image": f"data:image/png;base64,{png_b64}"},
                    ],
                },
            ]
        },
        "parameters": {
            "result_format": "message",
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "get_picture",
                        "description": "The picture.",
                        "parameters": {
                            "type": "object",
                            "properties": {"size": {"type": "integer"}},
                        },
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
            "tool_choice": {"type": "function", "function": {"name": "get_picture"}},
        },
    }


async def test_tool_media_error_option(server: FakeProviderServer) -> None:
    history = [
        ChatMessage.user("go"),
        ChatMessage.assistant("", [ToolCallBlock(id="c1", name="shot")]),
        ChatMessage.tool_result(
            ToolResultBlock(call_id="c1", content=[ImageBlock(mime_type="image/png", data=PNG_B64)])
        ),
    ]
    with pytest.raises(UnsupportedContentBlockError, match="tool_media='error'"):
        await connect(server.base_url).achat(history, model="qwen-vl-plus", tool_media="error")
    assert server.requests == []


async def test_reasoning_is_kept_when_asked_and_never_sent_back(
    server: FakeProviderServer,
) -> None:
    thinking = reply({"content": "Red.", "reasoning_content": "Colors..."})
    server.enqueue(thinking, thinking, thinking, TEXT_REPLY)
    connection = connect(server.base_url)
    history = [ChatMessage.user("Color?")]
    kept = await connection.achat(
        history, **TongyiChatModelSetup(connection="t", extract_reasoning=True).model_kwargs
    )
    dropped = await connection.achat(history, **TongyiChatModelSetup(connection="t").model_kwargs)
    unasked = await connection.achat(history, model="qwen-plus")  # the connection's default
    assert kept.message.blocks == [
        ReasoningBlock(text="Colors...", provider="tongyi"),
        TextBlock(text="Red."),
    ]
    assert dropped.message.blocks == [TextBlock(text="Red.")]  # upstream's default
    assert unasked.message.blocks == dropped.message.blocks  # the same default
    history = through_state([*history, kept.message, ChatMessage.user("Sure?")])
    await ask(connection, history, model="qwen-plus", enable_thinking=True)
    assert server.bodies[3]["input"]["messages"] == [
        {"role": "user", "content": "Color?"},
        {"role": "assistant", "content": "Red."},
        {"role": "user", "content": "Sure?"},
    ]
    assert server.bodies[3]["parameters"] == {"result_format": "message", "enable_thinking": True}


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (..., Usage()),
        (None, Usage()),
        (
            {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
            Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        ),
        # The SDK fills counts the server left out with 0: they stay unknown here.
        ({"input_tokens": 9}, Usage(input_tokens=9)),
        (
            {
                "input_tokens": 9,
                "output_tokens": 30,
                "prompt_tokens_details": {"cached_tokens": 8},
                "output_tokens_details": {"reasoning_tokens": 25},
            },
            Usage(
                input_tokens=9,
                output_tokens=30,
                total_tokens=39,
                cache_read_tokens=8,
                reasoning_tokens=25,
            ),
        ),
    ],
    ids=["absent", "null", "zero", "partial", "details"],
)
async def test_usage_unknown_is_not_zero(
    server: FakeProviderServer, usage: Any, expected: Usage
) -> None:
    body = reply({"content": "ok"})
    if usage is ...:
        del body["usage"]
    else:
        body["usage"] = usage
    server.enqueue(body)
    result = await ask(connect(server.base_url), [ChatMessage.user("hi")], model="qwen-plus")
    assert result.usage == expected


# ------------------------------------------------------------------ settings, setup


def test_upstream_descriptors_work_unchanged() -> None:
    module = "flink_agents.integrations.chat_models.tongyi_chat_model"
    connection = ResourceDescriptor(
        clazz=f"{module}.TongyiChatModelConnection", api_key=API_KEY, request_timeout=30.0
    ).build()
    setup = ResourceDescriptor(
        clazz=f"{module}.TongyiChatModelSetup",
        connection="tongyi_connection",
        model="qwen-max",
        temperature=0.2,
        extract_reasoning=True,
        additional_kwargs={"enable_search": True},
    ).build()
    assert isinstance(connection, TongyiChatModelConnection)
    assert connection.request_timeout == 30.0
    assert isinstance(setup, TongyiChatModelSetup)
    assert setup.model_kwargs == {
        "model": "qwen-max",
        "temperature": 0.2,
        "extract_reasoning": True,
        "tool_media": "user_message",
        "enable_search": True,
    }


def test_settings_and_secrets() -> None:
    connection = TongyiChatModelConnection(api_key=API_KEY)
    assert connection.timeout == 60.0
    assert API_KEY not in repr(connection) and "api_key" not in connection.model_dump()
    assert pickle.loads(pickle.dumps(connection)).api_key == API_KEY
    with pytest.raises(ValueError, match="no extra headers"):
        TongyiChatModelConnection(default_headers={"x": "y"})


async def test_no_key_fails_before_sending(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    monkeypatch.setenv("DASHSCOPE_API_KEY_FILE_PATH", str(tmp_path / "none"))
    monkeypatch.setenv("DASHSCOPE_CONFIG", str(tmp_path / "none.toml"))
    connection = connect(server.base_url, api_key=None)
    with pytest.raises(ChatModelError, match="DASHSCOPE_API_KEY") as info:
        await connection.achat([ChatMessage.user("hi")], model="qwen-plus")
    assert (info.value.kind, info.value.retryable) == ("authentication", False)
    assert server.requests == []


async def test_an_http_client_of_your_own_gets_the_key_and_the_url(
    server: FakeProviderServer,
) -> None:
    server.enqueue(TEXT_REPLY)
    made: list[httpx.AsyncClient] = []

    def make() -> httpx.AsyncClient:
        made.append(httpx.AsyncClient(headers={"x-team": "search"}))
        return made[-1]

    connection = connect(server.base_url, http_client=make)
    await ask(connection, [ChatMessage.user("hi")], model="qwen-plus")
    [request] = server.requests
    assert request.path == TEXT_PATH
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["x-team"] == "search"
    assert len(made) == 1
    await made[0].aclose()


def test_sync_chat(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    connection = connect(server.base_url)
    assert connection.chat([ChatMessage.user("hi")], model="qwen-plus").message.text == "It is red."


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("status", "code", "kind", "retryable"),
    [
        (400, "InvalidParameter", "bad_request", False),
        (401, "InvalidApiKey", "authentication", False),
        (400, "DataInspectionFailed", "content_filter", False),
        (429, "Throttling.RateQuota", "rate_limit", True),
        (500, "InternalError", "server", True),
        (503, "ServiceUnavailable", "server", True),
    ],
)
async def test_http_errors(
    server: FakeProviderServer, status: int, code: str, kind: str, retryable: bool
) -> None:
    server.enqueue(
        ScriptedResponse(
            status,
            {"request_id": "req-e", "code": code, "message": f"{code} happened"},
            headers={"retry-after": "3"},
        )
    )
    with pytest.raises(ChatModelError) as info:
        await ask(connect(server.base_url), [ChatMessage.user("hi")], model="qwen-plus")
    error = info.value
    assert (error.status_code, error.kind, error.retryable) == (status, kind, retryable)
    assert error.provider == "tongyi"
    assert f"{code}: {code} happened" in error.message
    assert error.retry_after == 3.0
    assert len(server.requests) == 1  # the SDK does not retry (max_retries=0)


@pytest.mark.parametrize(
    ("code", "status", "kind", "retryable"),
    [
        ("Throttling", 429, "rate_limit", True),
        ("InvalidApiKey", 401, "authentication", False),
        ("DataInspectionFailed", 400, "content_filter", False),
    ],
)
async def test_errors_in_an_http_200_body(
    server: FakeProviderServer, code: str, status: int, kind: str, retryable: bool
) -> None:
    server.enqueue({"request_id": "req-e", "code": code, "message": "said in a 200"})
    with pytest.raises(ChatModelError) as info:
        await ask(connect(server.base_url), [ChatMessage.user("hi")], model="qwen-plus")
    error = info.value
    assert (error.status_code, error.kind, error.retryable) == (status, kind, retryable)
    assert "said in a 200" in error.message


async def test_an_echoed_key_is_masked(server: FakeProviderServer) -> None:
    server.enqueue(
        ScriptedResponse(401, {"code": "InvalidApiKey", "message": f"Invalid API-key {API_KEY}"})
    )
    with pytest.raises(ChatModelError) as info:
        await ask(connect(server.base_url), [ChatMessage.user("hi")], model="qwen-plus")
    assert API_KEY not in str(info.value) and API_KEY not in repr(info.value)


async def test_timeout_and_refused_connection_are_retryable() -> None:
    with held_server(TEXT_REPLY) as server, pytest.raises(ChatModelError) as slow:
        await ask(
            connect(server.base_url, request_timeout=0.2),
            [ChatMessage.user("hi")],
            model="qwen-plus",
        )
    with pytest.raises(ChatModelError) as refused:
        await ask(connect(refused_url()), [ChatMessage.user("hi")], model="qwen-plus")
    assert (slow.value.kind, slow.value.retryable) == ("timeout", True)
    assert (refused.value.kind, refused.value.retryable) == ("connection", True)


@pytest.mark.parametrize(
    "body",
    ["{not json", "[1, 2]", '{"request_id": "r", "output": {}}'],
    ids=["not-json", "not-an-object", "no-choices"],
)
async def test_malformed_bodies(server: FakeProviderServer, body: str) -> None:
    server.enqueue(ScriptedResponse(200, body))
    with pytest.raises(ChatModelError) as info:
        await ask(connect(server.base_url), [ChatMessage.user("hi")], model="qwen-plus")
    assert (info.value.kind, info.value.retryable) == ("malformed_response", False)
