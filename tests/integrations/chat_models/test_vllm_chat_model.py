"""`VLLMChatModelConnection` through the real ``openai`` SDK against a local fake vLLM server."""

from __future__ import annotations

import base64
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
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.vllm import (
    VLLMChatModelConnection,
    VLLMChatModelSetup,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.fakes.images import red_png
from tests.integrations.chat_models.provider_helpers import (
    held_server,
    refused_url,
    through_state,
)

MODEL = "Qwen/Qwen3-8B"
PNG_B64 = "iVBORw0KGgo="


def completion(message: dict[str, Any], finish: str = "stop", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-vllm1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "tool_calls": [], **message},
                "logprobs": None,
                "finish_reason": finish,
                "stop_reason": None,
            }
        ],
        "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35},
        "prompt_logprobs": None,
    }
    body.update(extra)
    return body


TEXT_REPLY = completion({"content": "It is red.", "reasoning_content": None})


def connect(server: FakeProviderServer, **settings: Any) -> VLLMChatModelConnection:
    return VLLMChatModelConnection(base_url=f"{server.base_url}/v1", **settings)


# ------------------------------------------------------------------ settings, setup


async def test_defaults_and_no_openai_environment(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-0123")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert VLLMChatModelConnection().base_url == "http://localhost:8000/v1"
    blank = VLLMChatModelConnection(api_key=" ", api_base_url="")
    assert (blank.api_key, blank.base_url) == ("EMPTY", "http://localhost:8000/v1")
    server.enqueue(TEXT_REPLY)
    await connect(server).achat([ChatMessage.user("hi")], model=MODEL)
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer EMPTY"


async def test_upstream_descriptors_work_unchanged(server: FakeProviderServer) -> None:
    module = "flink_agents.integrations.chat_models.vllm.vllm_chat_model"
    connection = ResourceDescriptor(
        clazz=f"{module}.VLLMChatModelConnection",
        api_base_url=f"{server.base_url}/v1",
        api_key="vllm-key-0123456789",
    ).build()
    setup = ResourceDescriptor(
        clazz=f"{module}.VLLMChatModelSetup",
        connection="vllm_connection",
        model=MODEL,
        temperature=0.3,
    ).build()
    assert isinstance(connection, VLLMChatModelConnection)
    assert connection.api_base_url == f"{server.base_url}/v1"
    assert isinstance(setup, VLLMChatModelSetup)
    server.enqueue(TEXT_REPLY)
    await connection.achat([ChatMessage.user("hi")], **setup.model_kwargs)
    assert server.requests[0].headers["authorization"] == "Bearer vllm-key-0123456789"
    assert server.bodies[0] == {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.3,
    }


def test_the_setup_needs_the_served_model() -> None:
    with pytest.raises(ValueError, match="GET /v1/models"):
        VLLMChatModelSetup(connection="c")
    with pytest.raises(ValueError, match="GET /v1/models"):
        VLLMChatModelSetup(connection="c", model="  ")


async def test_vllm_extras_reach_the_body(server: FakeProviderServer) -> None:
    schema = {"type": "object", "properties": {"color": {"type": "string"}}}
    setup = VLLMChatModelSetup(
        connection="c",
        model=MODEL,
        max_tokens=64,
        top_k=20,
        min_p=0.05,
        repetition_penalty=1.1,
        chat_template_kwargs={"enable_thinking": False},
        structured_outputs={"json": schema},
        params={"guided_decoding_backend": "xgrammar", "top_k": 40},
    )
    server.enqueue(TEXT_REPLY)
    await connect(server).achat([ChatMessage.user("Color?")], **setup.model_kwargs)
    assert server.bodies[0] == {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Color?"}],
        "max_tokens": 64,
        "top_k": 40,  # params win
        "min_p": 0.05,
        "repetition_penalty": 1.1,
        "chat_template_kwargs": {"enable_thinking": False},
        "structured_outputs": {"json": schema},
        "guided_decoding_backend": "xgrammar",
    }


# ----------------------------------------------------------------------- messages


async def test_user_media_as_chat_parts(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    message = ChatMessage.user(
        [
            TextBlock(text="Describe:"),
            ImageBlock(mime_type="image/png", data=PNG_B64),
            ImageBlock(mime_type="image/jpeg", url="https://x.test/a.jpg"),
            AudioBlock(mime_type="audio/mpeg", data="SUQz"),
        ]
    )
    await connect(server).achat([message], model=MODEL)
    assert server.bodies[0]["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe:"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
                {"type": "image_url", "image_url": {"url": "https://x.test/a.jpg"}},
                {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
            ],
        }
    ]


@pytest.mark.parametrize(
    "block",
    [
        VideoBlock(mime_type="video/mp4", url="https://x.test/v.mp4"),
        DocumentBlock(mime_type="text/plain", data="aGk="),
    ],
    ids=["video", "text-document"],
)
async def test_unsupported_media_raise_before_sending(
    server: FakeProviderServer, block: Any
) -> None:
    with pytest.raises(UnsupportedContentBlockError):
        await connect(server).achat([ChatMessage.user([block])], model=MODEL)
    assert server.requests == []


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_is_parsed_and_not_replayed(server: FakeProviderServer, field: str) -> None:
    server.enqueue(completion({"content": "Red.", field: "Think about colors."}), TEXT_REPLY)
    connection = connect(server)
    history = [ChatMessage.user("Color?")]
    first = await connection.achat(history, model=MODEL)
    assert first.message.blocks == [
        ReasoningBlock(text="Think about colors.", provider="openai-chat"),
        TextBlock(text="Red."),
    ]
    history = through_state([*history, first.message, ChatMessage.user("Sure?")])
    await connection.achat(history, model=MODEL)
    assert server.bodies[1]["messages"] == [
        {"role": "user", "content": "Color?"},
        {"role": "assistant", "content": "Red."},
        {"role": "user", "content": "Sure?"},
    ]


async def test_tool_round_trip_with_an_image(server: FakeProviderServer) -> None:
    server.enqueue(
        completion(
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "chatcmpl-tool-1",
                        "type": "function",
                        "function": {"name": "get_picture", "arguments": '{"size": 2}'},
                    },
                    # Some tool parsers leave the id out: one is generated.
                    {"type": "function", "function": {"name": "get_time", "arguments": ""}},
                ],
            },
            finish="tool_calls",
        ),
        TEXT_REPLY,
    )
    connection = connect(server)
    tools = [ToolMetadata(name="get_picture"), ToolMetadata(name="get_time")]
    history = [ChatMessage.user("Color and time?")]
    first = await connection.achat(history, tools, model=MODEL)
    picture, clock = first.message.tool_calls
    assert (picture.id, picture.input) == ("chatcmpl-tool-1", {"size": 2})
    assert clock.id.startswith("call_") and clock.input == {}
    png = red_png(2)
    history = through_state(
        [
            *history,
            first.message,
            ChatMessage.tool_result(
                ToolResponse.from_output(picture.id, picture.name, png).to_result_block()
            ),
            ChatMessage.tool_result(
                ToolResponse.from_output(clock.id, clock.name, "12:00").to_result_block()
            ),
        ]
    )
    await connection.achat(history, tools, model=MODEL)
    png_b64 = base64.b64encode(png).decode()
    assert server.bodies[1]["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "chatcmpl-tool-1",
                    "type": "function",
                    "function": {"name": "get_picture", "arguments": '{"size": 2}'},
                },
                {
                    "id": clock.id,
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "chatcmpl-tool-1",
            "content": "[attached below: image 1 (image/png)]",
        },
        {"role": "tool", "tool_call_id": clock.id, "content": "12:00"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "image 1 from tool call chatcmpl-tool-1:"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png_b64}"}},
            ],
        },
    ]


async def test_tool_media_error_option(server: FakeProviderServer) -> None:
    history = [
        ChatMessage.user("go"),
        ChatMessage.assistant("", [ToolCallBlock(id="c1", name="shot")]),
        ChatMessage.tool_result(
            ToolResultBlock(call_id="c1", content=[ImageBlock(mime_type="image/png", data=PNG_B64)])
        ),
    ]
    with pytest.raises(UnsupportedContentBlockError, match="tool_media='error'"):
        await connect(server).achat(history, model=MODEL, tool_media="error")
    assert server.requests == []


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, Usage()),
        (
            {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        ),
        (
            {"prompt_tokens": 7, "completion_tokens": 1},
            Usage(input_tokens=7, output_tokens=1, total_tokens=8),
        ),
    ],
    ids=["null", "zero", "no-total"],
)
async def test_usage_unknown_is_not_zero(
    server: FakeProviderServer, usage: Any, expected: Usage
) -> None:
    server.enqueue(completion({"content": "ok"}, usage=usage))
    result = await connect(server).achat([ChatMessage.user("hi")], model=MODEL)
    assert result.usage == expected


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [(400, "bad_request", False), (404, "bad_request", False), (503, "server", True)],
)
async def test_vllm_error_bodies(
    server: FakeProviderServer, status: int, kind: str, retryable: bool
) -> None:
    # vLLM's own error shape: the message at the top level.
    server.enqueue(
        ScriptedResponse(
            status,
            {
                "object": "error",
                "message": f"The model `nope` does not exist ({status}).",
                "type": "NotFoundError",
                "param": None,
                "code": status,
            },
        )
    )
    with pytest.raises(ChatModelError) as info:
        await connect(server).achat([ChatMessage.user("hi")], model="nope")
    error = info.value
    assert (error.status_code, error.kind, error.retryable) == (status, kind, retryable)
    assert error.provider == "vllm"
    assert f"does not exist ({status})" in error.message


async def test_an_echoed_key_is_masked(server: FakeProviderServer) -> None:
    key = "vllm-secret-key-0123456789"
    server.enqueue(ScriptedResponse(401, {"error": f"bad key {key}"}))
    with pytest.raises(ChatModelError) as info:
        await connect(server, api_key=key).achat([ChatMessage.user("hi")], model=MODEL)
    assert info.value.kind == "authentication"
    assert key not in str(info.value)


async def test_timeout_and_refused_connection_are_retryable() -> None:
    with held_server(TEXT_REPLY) as server:
        slow_connection = VLLMChatModelConnection(base_url=f"{server.base_url}/v1", timeout=0.2)
        with pytest.raises(ChatModelError) as slow:
            await slow_connection.achat([ChatMessage.user("hi")], model=MODEL)
    down = VLLMChatModelConnection(base_url=f"{refused_url()}/v1")
    with pytest.raises(ChatModelError) as refused:
        await down.achat([ChatMessage.user("hi")], model=MODEL)
    assert (slow.value.kind, slow.value.retryable) == ("timeout", True)
    assert (refused.value.kind, refused.value.retryable) == ("connection", True)
