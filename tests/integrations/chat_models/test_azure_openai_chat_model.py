"""Azure OpenAI (Chat Completions and Responses) through the real ``openai`` SDK's
``AsyncAzureOpenAI`` against a local fake server: exact request JSON, URL, auth headers."""

from __future__ import annotations

import asyncio
import base64
import pickle
from typing import Any

import cloudpickle
import pytest

from flink_agents.api.chat_result import Usage
from flink_agents.api.content_blocks import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    VideoBlock,
)
from flink_agents.api.errors import ChatModelError, UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models.azure import (
    AzureOpenAIChatModelConnection,
    AzureOpenAIChatModelSetup,
    AzureOpenAIResponsesChatModelConnection,
    AzureOpenAIResponsesChatModelSetup,
)
from flink_agents.integrations.chat_models.openai import OpenAIChatModelConnection
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.fakes.images import red_png
from tests.integrations.chat_models.provider_helpers import (
    held_server,
    refused_url,
    through_state,
)

API_KEY = "azure-key-0123456789abcdef"
TOKEN = "entra-token-0123456789abcdef"
VERSION = "2024-10-21"
PNG_B64 = "iVBORw0KGgo="


def completion(message: dict[str, Any], finish: str = "stop", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-az1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "gpt-4o-2024-11-20",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }
    body.update(extra)
    return body


def response(output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "resp_az1",
        "object": "response",
        "status": "completed",
        "model": "gpt-5-mini",
        "output": output,
        "usage": {"input_tokens": 9, "output_tokens": 2, "total_tokens": 11},
    }
    body.update(extra)
    return body


TEXT_REPLY = completion({"content": "It is red."})
TEXT_OUTPUT = response(
    [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "It is red.", "annotations": []}],
        }
    ]
)


def chat_connection(server: FakeProviderServer, **settings: Any) -> AzureOpenAIChatModelConnection:
    options = {"api_key": API_KEY, "api_version": VERSION, "azure_endpoint": server.base_url}
    return AzureOpenAIChatModelConnection(**{**options, **settings})


def responses_connection(
    server: FakeProviderServer, **settings: Any
) -> AzureOpenAIResponsesChatModelConnection:
    options = {"api_key": API_KEY, "api_version": "2025-04-01-preview"}
    return AzureOpenAIResponsesChatModelConnection(
        **{**options, "azure_endpoint": server.base_url, **settings}
    )


# ------------------------------------------------------------------ Chat Completions


async def test_chat_turn_goes_to_the_deployment(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    connection = chat_connection(server)
    result = await connection.achat(
        [ChatMessage.system("Be brief."), ChatMessage.user("Color?")],
        model="prod-gpt4o",
        model_of_azure_deployment="gpt-4o",
        temperature=0.3,
    )
    [request] = server.requests
    assert request.path == f"/openai/deployments/prod-gpt4o/chat/completions?api-version={VERSION}"
    assert request.headers["api-key"] == API_KEY
    assert "authorization" not in request.headers
    assert request.body == {
        "model": "prod-gpt4o",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Color?"},
        ],
        "temperature": 0.3,
    }
    assert result.message.blocks == [TextBlock(text="It is red.")]
    assert result.model == "gpt-4o-2024-11-20"  # the response's name wins
    assert result.usage == Usage(input_tokens=12, output_tokens=3, total_tokens=15)
    assert result.metadata["azure_deployment"] == "prod-gpt4o"


async def test_model_of_azure_deployment_names_the_model_when_the_response_does_not(
    server: FakeProviderServer,
) -> None:
    reply = completion({"content": "ok"})
    del reply["model"]
    server.enqueue(reply)
    result = await chat_connection(server).achat(
        [ChatMessage.user("hi")], model="prod", model_of_azure_deployment="gpt-4o"
    )
    assert result.model == "gpt-4o"


async def test_user_media_as_chat_completions_parts(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    message = ChatMessage.user(
        [
            TextBlock(text="Describe:"),
            ImageBlock(mime_type="image/png", data=PNG_B64),
            ImageBlock(mime_type="image/webp", url="https://x.test/a.webp"),
            AudioBlock(mime_type="audio/wav", data="UklGRg=="),
            DocumentBlock(mime_type="application/pdf", data="JVBERi0=", name="a.pdf"),
        ]
    )
    await chat_connection(server).achat([message], model="prod")
    assert server.bodies[0]["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe:"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
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
    ]


@pytest.mark.parametrize(
    "block",
    [
        VideoBlock(mime_type="video/mp4", url="https://x.test/v.mp4"),
        DocumentBlock(mime_type="application/pdf", url="https://x.test/a.pdf"),
    ],
    ids=["video", "pdf-url"],
)
async def test_unsupported_media_raise_before_sending(
    server: FakeProviderServer, block: Any
) -> None:
    with pytest.raises(UnsupportedContentBlockError):
        await chat_connection(server).achat([ChatMessage.user([block])], model="prod")
    assert server.requests == []


async def test_chat_tool_round_trip_with_an_image(server: FakeProviderServer) -> None:
    """A tool's image reaches the deployment in a user message after the tool run;
    reasoning a server sent is kept and not sent back (Chat Completions takes none)."""
    server.enqueue(
        completion(
            {
                "content": None,
                "reasoning_content": "Need the picture.",
                "tool_calls": [
                    {
                        "id": "call_pic",
                        "type": "function",
                        "function": {"name": "get_picture", "arguments": "{}"},
                    }
                ],
            },
            finish="tool_calls",
        ),
        TEXT_REPLY,
    )
    connection = chat_connection(server)
    tools = [ToolMetadata(name="get_picture", description="The picture.")]
    history = [ChatMessage.user("What color?")]
    first = await connection.achat(history, tools, model="prod")
    assert first.message.blocks[0] == ReasoningBlock(
        text="Need the picture.", provider="openai-chat"
    )
    [call] = first.message.tool_calls
    png = red_png(2)
    result = ToolResponse.from_output(call.id, call.name, png).to_result_block()
    history = through_state([*history, first.message, ChatMessage.tool_result(result)])
    await connection.achat(history, tools, model="prod")
    png_b64 = base64.b64encode(png).decode()
    assert server.bodies[1]["messages"] == [
        {"role": "user", "content": "What color?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_pic",
                    "type": "function",
                    "function": {"name": "get_picture", "arguments": "{}"},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_pic",
            "content": "[attached below: image 1 (image/png)]",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "image 1 from tool call call_pic:"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png_b64}"}},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (..., Usage()),
        (None, Usage()),
        (
            {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        ),
        ({"completion_tokens": 4}, Usage(output_tokens=4)),
    ],
    ids=["absent", "null", "zero", "partial"],
)
async def test_usage_unknown_is_not_zero(
    server: FakeProviderServer, usage: Any, expected: Usage
) -> None:
    reply = completion({"content": "ok"})
    if usage is ...:
        del reply["usage"]
    else:
        reply["usage"] = usage
    server.enqueue(reply)
    result = await chat_connection(server).achat([ChatMessage.user("hi")], model="prod")
    assert result.usage == expected


async def test_a_fixed_deployment_wins_over_the_model(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    connection = chat_connection(server, azure_deployment="fixed")
    result = await connection.achat([ChatMessage.user("hi")], model="ignored-for-the-url")
    assert (
        server.requests[0].path
        == f"/openai/deployments/fixed/chat/completions?api-version={VERSION}"
    )
    assert result.metadata["azure_deployment"] == "fixed"


async def test_base_url_for_a_gateway(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    connection = AzureOpenAIChatModelConnection(
        api_key=API_KEY, api_version=VERSION, base_url=f"{server.base_url}/gw/openai"
    )
    await connection.achat([ChatMessage.user("hi")], model="prod")
    assert server.requests[0].path == (
        f"/gw/openai/deployments/prod/chat/completions?api-version={VERSION}"
    )


# ------------------------------------------------------------------------- Entra ID


async def async_token() -> str:
    return TOKEN


def sync_token() -> str:
    return TOKEN


@pytest.mark.parametrize("provider", [async_token, sync_token], ids=["async", "sync"])
async def test_an_entra_token_provider_authorizes_every_request(
    server: FakeProviderServer, provider: Any
) -> None:
    server.enqueue(TEXT_REPLY, TEXT_REPLY)
    connection = chat_connection(server, api_key=None, azure_ad_token_provider=provider)
    await connection.achat([ChatMessage.user("a")], model="prod")
    await connection.achat([ChatMessage.user("b")], model="prod")
    assert [r.headers.get("authorization") for r in server.requests] == [f"Bearer {TOKEN}"] * 2
    assert all("api-key" not in r.headers for r in server.requests)


async def test_an_echoed_token_is_masked(server: FakeProviderServer) -> None:
    server.enqueue(ScriptedResponse(401, {"error": {"message": f"token {TOKEN} expired"}}))
    connection = chat_connection(server, api_key=None, azure_ad_token_provider=async_token)
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model="prod")
    assert info.value.kind == "authentication" and not info.value.retryable
    assert TOKEN not in str(info.value) and TOKEN not in repr(info.value)


async def test_a_static_entra_token(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    connection = chat_connection(server, api_key=None, azure_ad_token=TOKEN)
    await connection.achat([ChatMessage.user("hi")], model="prod")
    assert server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in repr(connection) and "azure_ad_token" not in connection.model_dump()


def test_a_token_provider_travels_with_the_connection() -> None:
    connection = AzureOpenAIChatModelConnection(
        api_version=VERSION,
        azure_endpoint="https://r.openai.azure.com",
        azure_ad_token_provider=async_token,
    )
    restored = cloudpickle.loads(cloudpickle.dumps(connection))
    assert asyncio.run(restored.azure_ad_token_provider()) == TOKEN


def test_settings_that_conflict_are_refused() -> None:
    with pytest.raises(ValueError, match="not both"):
        AzureOpenAIChatModelConnection(azure_endpoint="https://r", base_url="https://g")
    with pytest.raises(ValueError, match="one credential"):
        AzureOpenAIChatModelConnection(api_key=API_KEY, azure_ad_token=TOKEN)


async def test_missing_api_version_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_VERSION", raising=False)
    connection = AzureOpenAIChatModelConnection(api_key=API_KEY, azure_endpoint="https://r")
    with pytest.raises(ValueError, match="api_version"):
        await connection.achat([ChatMessage.user("hi")], model="prod")


async def test_azure_and_openai_connections_never_share_a_client(
    server: FakeProviderServer,
) -> None:
    azure = chat_connection(server)
    plain = OpenAIChatModelConnection(api_key=API_KEY, base_url=server.base_url)
    assert type(azure._sdk_client()).__name__ == "AsyncAzureOpenAI"
    assert azure._sdk_client() is not plain._sdk_client()


# ---------------------------------------------------------------------------- errors


async def test_throttling_is_retryable_with_retry_after(server: FakeProviderServer) -> None:
    server.enqueue(
        ScriptedResponse(
            429,
            {
                "error": {
                    "code": "429",
                    "message": "Requests to the deployment have exceeded the rate limit",
                }
            },
            headers={"retry-after-ms": "1500"},
        )
    )
    with pytest.raises(ChatModelError) as info:
        await chat_connection(server).achat([ChatMessage.user("hi")], model="prod")
    error = info.value
    assert (error.status_code, error.kind, error.retryable, error.retry_after) == (
        429,
        "rate_limit",
        True,
        1.5,
    )
    assert error.provider == "azure-openai"
    assert len(server.requests) == 1  # the SDK does not retry (max_retries=0)


@pytest.mark.parametrize(
    ("status", "body", "kind", "retryable"),
    [
        (400, {"error": {"code": "content_filter", "message": "filtered"}}, "bad_request", False),
        (
            404,
            {"error": {"code": "DeploymentNotFound", "message": "no deployment"}},
            "bad_request",
            False,
        ),
        (500, {"error": {"message": "internal"}}, "server", True),
        (503, {"error": {"message": "overloaded"}}, "server", True),
    ],
)
async def test_http_errors(
    server: FakeProviderServer, status: int, body: Any, kind: str, retryable: bool
) -> None:
    server.enqueue(ScriptedResponse(status, body))
    with pytest.raises(ChatModelError) as info:
        await chat_connection(server).achat([ChatMessage.user("hi")], model="prod")
    assert (info.value.status_code, info.value.kind, info.value.retryable) == (
        status,
        kind,
        retryable,
    )
    assert body["error"]["message"] in info.value.message


async def test_an_echoed_key_is_masked(server: FakeProviderServer) -> None:
    server.enqueue(
        ScriptedResponse(401, {"error": {"message": f"Access denied for key {API_KEY}"}})
    )
    with pytest.raises(ChatModelError) as info:
        await chat_connection(server).achat([ChatMessage.user("hi")], model="prod")
    assert API_KEY not in str(info.value)
    assert API_KEY not in repr(chat_connection(server))


async def test_timeout_and_refused_connection_are_retryable() -> None:
    with held_server(TEXT_REPLY) as server:
        connection = AzureOpenAIChatModelConnection(
            api_key=API_KEY, api_version=VERSION, azure_endpoint=server.base_url, timeout=0.2
        )
        with pytest.raises(ChatModelError) as slow:
            await connection.achat([ChatMessage.user("hi")], model="prod")
    refused = AzureOpenAIChatModelConnection(
        api_key=API_KEY, api_version=VERSION, azure_endpoint=refused_url()
    )
    with pytest.raises(ChatModelError) as down:
        await refused.achat([ChatMessage.user("hi")], model="prod")
    assert (slow.value.kind, slow.value.retryable) == ("timeout", True)
    assert (down.value.kind, down.value.retryable) == ("connection", True)


# --------------------------------------------------------------------------- setups


async def test_upstream_descriptors_work_unchanged(server: FakeProviderServer) -> None:
    module = "flink_agents.integrations.chat_models.azure.azure_openai_chat_model"
    connection = ResourceDescriptor(
        clazz=f"{module}.AzureOpenAIChatModelConnection",
        api_key=API_KEY,
        api_version=VERSION,
        azure_endpoint=server.base_url,
        timeout=30.0,
        max_retries=0,
    ).build()
    setup = ResourceDescriptor(
        clazz=f"{module}.AzureOpenAIChatModelSetup",
        connection="azure_openai_connection",
        model="my-gpt4-deployment",
        model_of_azure_deployment="gpt-4",
        temperature=0.5,
        max_tokens=64,
        logprobs=True,
        additional_kwargs={"seed": 3},
    ).build()
    assert isinstance(connection, AzureOpenAIChatModelConnection)
    assert isinstance(setup, AzureOpenAIChatModelSetup)
    server.enqueue(TEXT_REPLY)
    await connection.achat([ChatMessage.user("hi")], **setup.model_kwargs)
    assert server.bodies[0] == {
        "model": "my-gpt4-deployment",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 64,
        "temperature": 0.5,
        "logprobs": True,
        "seed": 3,
    }


def test_setups_need_a_deployment() -> None:
    with pytest.raises(ValueError, match="deployment"):
        AzureOpenAIChatModelSetup(connection="c")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="deployment"):
        AzureOpenAIChatModelSetup(connection="c", model=" ")
    with pytest.raises(ValueError, match="deployment"):
        AzureOpenAIResponsesChatModelSetup(connection="c")  # type: ignore[call-arg]


def test_connection_pickles_without_its_key_in_the_dump() -> None:
    connection = AzureOpenAIChatModelConnection(
        api_key=API_KEY, api_version=VERSION, azure_endpoint="https://r.openai.azure.com"
    )
    assert "api_key" not in connection.model_dump()
    assert pickle.loads(pickle.dumps(connection)).api_key == API_KEY


# ------------------------------------------------------------------------- Responses


async def test_responses_turn_goes_to_the_resource(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_OUTPUT)
    setup = AzureOpenAIResponsesChatModelSetup(
        connection="c",
        model="prod-gpt5",
        model_of_azure_deployment="gpt-5-mini",
        max_output_tokens=100,
    )
    result = await responses_connection(server).achat(
        [ChatMessage.user("Color?")], **setup.model_kwargs
    )
    [request] = server.requests
    assert request.path == "/openai/responses?api-version=2025-04-01-preview"
    assert request.headers["api-key"] == API_KEY
    assert request.body == {
        "model": "prod-gpt5",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Color?"}],
            }
        ],
        "max_output_tokens": 100,
    }
    assert result.message.text == "It is red."
    assert result.usage == Usage(input_tokens=9, output_tokens=2, total_tokens=11)
    assert result.metadata["azure_deployment"] == "prod-gpt5"


async def test_responses_reasoning_is_replayed_after_a_json_round_trip(
    server: FakeProviderServer,
) -> None:
    """Seed row: OpenAI Responses retains native reasoning items; the tool's image goes
    back in the function output."""
    server.enqueue(
        response(
            [
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": "Need the picture."}],
                    "encrypted_content": "ENC-AZ",
                },
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_pic",
                    "name": "get_picture",
                    "arguments": "{}",
                    "status": "completed",
                },
            ]
        ),
        TEXT_OUTPUT,
    )
    connection = responses_connection(server)
    tools = [ToolMetadata(name="get_picture", description="The picture.")]
    history = [ChatMessage.user("What color?")]
    first = await connection.achat(history, tools, model="prod", encrypted_reasoning=True)
    assert first.finish_reason == "tool_calls"
    [call] = first.message.tool_calls
    result = ToolResponse.from_output(call.id, call.name, red_png(2)).to_result_block()
    history = through_state([*history, first.message, ChatMessage.tool_result(result)])
    await connection.achat(history, tools, model="prod", encrypted_reasoning=True)
    png_b64 = base64.b64encode(red_png(2)).decode()
    assert server.bodies[1]["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "What color?"}],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Need the picture."}],
            "encrypted_content": "ENC-AZ",
        },
        {"type": "function_call", "call_id": "call_pic", "name": "get_picture", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "call_pic",
            "output": [
                {
                    "type": "input_image",
                    "image_url": f"data:image/png;base64,{png_b64}",
                    "detail": "auto",
                }
            ],
        },
    ]
    assert server.bodies[1]["include"] == ["reasoning.encrypted_content"]
    assert server.bodies[1]["store"] is False


async def test_responses_without_usage_and_failures(server: FakeProviderServer) -> None:
    no_usage = dict(TEXT_OUTPUT)
    del no_usage["usage"]
    server.enqueue(
        no_usage,
        response([], status="failed", error={"code": "server_error", "message": "boom"}),
        ScriptedResponse(429, {"error": {"message": "slow down"}}),
    )
    connection = responses_connection(server)
    assert (await connection.achat([ChatMessage.user("a")], model="prod")).usage.is_unknown
    with pytest.raises(ChatModelError) as failed:
        await connection.achat([ChatMessage.user("b")], model="prod")
    with pytest.raises(ChatModelError) as throttled:
        await connection.achat([ChatMessage.user("c")], model="prod")
    assert (failed.value.kind, failed.value.retryable) == ("response_failed", True)
    assert (throttled.value.kind, throttled.value.retryable) == ("rate_limit", True)
    assert throttled.value.provider == "azure-openai"
