"""`BedrockChatModelConnection` through the real ``boto3`` client against a local server.

AWS credentials and region come from the environment, as the standard chain reads them
(fake ones, set here; the shared config files and the instance metadata service are
turned off). Every request test asserts the exact JSON body the server received on
``/model/{modelId}/converse`` (blobs as base64, as boto3 writes them), or that nothing
was sent.
"""

from __future__ import annotations

import base64
import json
import logging
import pickle
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
from flink_agents.api.errors import (
    ChatModelError,
    ResourceUnavailableError,
    UnsupportedContentBlockError,
)
from flink_agents.api.message import ChatMessage
from flink_agents.api.resource import ResourceDescriptor, ResourceName
from flink_agents.api.tool_response import ToolResponse
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.chat_models import _unknown_content
from flink_agents.integrations.chat_models.bedrock import (
    BedrockChatModelConnection,
    BedrockChatModelSetup,
)
from flink_agents.integrations.chat_models.bedrock._converse_api import URL_REASON
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.chat_models.provider_helpers import (
    held_server,
    refused_url,
    through_state,
)

MODEL = "anthropic.claude-test-v1:0"
PATH = "/model/anthropic.claude-test-v1%3A0/converse"
ACCESS_KEY = "AKIAFAKEFAKEFAKEFAKE"
SECRET_KEY = "fake-secret-access-key-0123456789abcdef"
PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\nfake-png").decode()
PDF_B64 = base64.b64encode(b"%PDF-1.4 fake").decode()
MP4_B64 = base64.b64encode(b"fake mp4").decode()
MP3_B64 = base64.b64encode(b"ID3 fake mp3").decode()
REDACTED = base64.b64encode(b"\x00\x01opaque redacted reasoning").decode()

WEATHER = ToolMetadata(
    name="get_weather",
    description="The weather in a city.",
    args_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)
WEATHER_SPEC = {
    "toolSpec": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
}


def reply(
    content: list[dict[str, Any]],
    stop: str | None = "end_turn",
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "output": {"message": {"role": "assistant", "content": content}},
        "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15}
        if usage is None
        else usage,
        "metrics": {"latencyMs": 321},
    }
    if stop is not None:
        body["stopReason"] = stop
    body.update(extra)
    return body


TEXT_REPLY = reply([{"text": "It is red."}])


@pytest.fixture(autouse=True)
def aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and region in the environment; no config files, no instance role."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in (
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def connection(server: FakeProviderServer) -> BedrockChatModelConnection:
    return BedrockChatModelConnection(base_url=server.base_url, timeout=5)


# ------------------------------------------------------------------------ round trips


async def test_text_turn_exact_body_signed_request_and_result(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    result = await connection.achat(
        [
            ChatMessage.system("Be brief."),
            ChatMessage.user("Color?"),
            ChatMessage.system("No lists."),
        ],
        model=MODEL,
        max_tokens=50,
        temperature=0.2,
        top_p=0.9,
        stop_sequences="END",
    )
    [request] = server.requests
    assert (request.method, request.path) == ("POST", PATH)
    # Signed with the environment's credentials for the region from AWS_REGION.
    assert request.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
    assert "/eu-west-1/bedrock/aws4_request" in request.headers["authorization"]
    assert request.body == {
        "messages": [{"role": "user", "content": [{"text": "Color?"}]}],
        "system": [{"text": "Be brief."}, {"text": "No lists."}],
        "inferenceConfig": {
            "maxTokens": 50,
            "temperature": 0.2,
            "topP": 0.9,
            "stopSequences": ["END"],
        },
    }
    assert result.message.blocks == [TextBlock(text="It is red.")]
    assert (result.model, result.response_id) == (MODEL, None)
    assert result.finish_reason == "stop"
    assert result.usage == Usage(input_tokens=12, output_tokens=3, total_tokens=15)
    assert result.metadata == {"raw_finish_reason": "end_turn", "latency_ms": 321}


async def test_user_media_exact_blocks(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    message = ChatMessage.user(
        [
            TextBlock(text="Compare "),
            ImageBlock(mime_type="image/PNG", data=PNG_B64),
            ImageBlock(mime_type="image/jpeg", url="s3://bucket/a.jpg"),
            DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="Q3 report.pdf"),
            DocumentBlock(mime_type="text/plain", url="data:text/plain;base64,aGk="),
            DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="Q3 report.pdf"),
            VideoBlock(mime_type="video/mp4", data=MP4_B64),
            AudioBlock(mime_type="audio/mpeg", url="s3://bucket/memo.mp3"),
            TextBlock(text=""),
        ]
    )
    await connection.achat([message], model=MODEL)
    assert server.bodies[0]["messages"] == [
        {
            "role": "user",
            "content": [
                {"text": "Compare "},
                {"image": {"format": "png", "source": {"bytes": PNG_B64}}},
                {
                    "image": {
                        "format": "jpeg",
                        "source": {"s3Location": {"uri": "s3://bucket/a.jpg"}},
                    }
                },
                {
                    "document": {
                        "format": "pdf",
                        "name": "Q3 report-pdf",
                        "source": {"bytes": PDF_B64},
                    }
                },
                {"document": {"format": "txt", "name": "document-2", "source": {"bytes": "aGk="}}},
                {
                    "document": {
                        "format": "pdf",
                        "name": "Q3 report-pdf (2)",
                        "source": {"bytes": PDF_B64},
                    }
                },
                {"video": {"format": "mp4", "source": {"bytes": MP4_B64}}},
                {
                    "audio": {
                        "format": "mp3",
                        "source": {"s3Location": {"uri": "s3://bucket/memo.mp3"}},
                    }
                },
            ],
        }
    ]


@pytest.mark.parametrize(
    ("message", "match"),
    [
        (ChatMessage.user([ImageBlock(mime_type="image/png", url="https://x/a.png")]), URL_REASON),
        (ChatMessage.user([ImageBlock(mime_type="image/tiff", data=PNG_B64)]), "image/tiff"),
        (
            ChatMessage.user([DocumentBlock(mime_type="application/zip", data=PDF_B64)]),
            "application/zip",
        ),
        (ChatMessage.assistant([ImageBlock(mime_type="image/png", data=PNG_B64)]), "assistant"),
        (ChatMessage.user([ImageBlock(mime_type="image/png", data=PNG_B64).redact()]), "redacted"),
    ],
    ids=["https-url", "tiff", "zip", "assistant-media", "redacted"],
)
async def test_what_cannot_be_sent_raises_before_sending(
    server: FakeProviderServer,
    connection: BedrockChatModelConnection,
    message: ChatMessage,
    match: str,
) -> None:
    with pytest.raises(UnsupportedContentBlockError, match=match):
        await connection.achat([ChatMessage.user("hi"), message], model=MODEL)
    assert server.requests == []


# ------------------------------------------------------------- reasoning and tool calls


THINKING_CALL = reply(
    [
        {"reasoningContent": {"reasoningText": {"text": "Need the tool.", "signature": "sig-1"}}},
        {"reasoningContent": {"redactedContent": REDACTED}},
        {"text": "Checking."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Oslo"}}},
    ],
    stop="tool_use",
    usage={
        "inputTokens": 20,
        "outputTokens": 30,
        "totalTokens": 100,
        "cacheReadInputTokens": 40,
        "cacheWriteInputTokens": 10,
    },
)


async def test_reasoning_is_kept_and_replayed_after_a_json_round_trip(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    server.enqueue(THINKING_CALL, TEXT_REPLY)
    history = [ChatMessage.user("Weather in Oslo?")]
    first = await connection.achat(
        history, [WEATHER], model=MODEL, max_tokens=2048, thinking_budget_tokens=1024
    )
    assert first.message.blocks == [
        ReasoningBlock(text="Need the tool.", provider="bedrock", signature="sig-1"),
        ReasoningBlock(provider="bedrock", redacted_data=REDACTED),
        TextBlock(text="Checking."),
        ToolCallBlock(id="tooluse_1", name="get_weather", input={"city": "Oslo"}),
    ]
    assert first.finish_reason == "tool_calls"
    assert first.usage == Usage(
        input_tokens=20,
        output_tokens=30,
        cache_read_tokens=40,
        cache_write_tokens=10,
        total_tokens=100,
    )
    result = ToolResponse.from_output("tooluse_1", "get_weather", "9 C").to_result_block()
    history = through_state([*history, first.message, ChatMessage.tool_result(result)])
    await connection.achat(
        history, [WEATHER], model=MODEL, max_tokens=2048, thinking_budget_tokens=1024
    )
    first_body, second_body = server.bodies
    assert first_body["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 1024}
    }
    assert second_body["toolConfig"] == {"tools": [WEATHER_SPEC]}
    assert second_body["messages"] == [
        {"role": "user", "content": [{"text": "Weather in Oslo?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {"text": "Need the tool.", "signature": "sig-1"}
                    }
                },
                {"reasoningContent": {"redactedContent": REDACTED}},
                {"text": "Checking."},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_1",
                        "name": "get_weather",
                        "input": {"city": "Oslo"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "9 C"}]}}],
        },
    ]


async def test_unsigned_and_foreign_reasoning_is_not_sent(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    answer = ChatMessage.assistant(
        [
            ReasoningBlock(text="unsigned", provider="bedrock"),
            ReasoningBlock(text="claude direct", provider="anthropic", signature="sig"),
            ReasoningBlock(text="gemini", provider="gemini", signature="c2ln"),
            TextBlock(text="Blue."),
        ]
    )
    await connection.achat(
        [ChatMessage.user("Color?"), answer, ChatMessage.user("Sure?")], model=MODEL
    )
    assert server.bodies[0]["messages"][1] == {"role": "assistant", "content": [{"text": "Blue."}]}


async def test_tool_results_with_text_json_image_document_and_video(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    calls = [
        ToolCallBlock(id="t1", name="report", input={}),
        ToolCallBlock(id="t2", name="stats", input={}),
        ToolCallBlock(id="t3", name="broken", input={}),
    ]
    chart = ToolResultBlock(
        call_id="t1",
        content=[
            TextBlock(text="Chart and report."),
            ImageBlock(mime_type="image/png", data=PNG_B64),
            DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="report.pdf"),
            VideoBlock(mime_type="video/mp4", url="s3://bucket/v.mp4"),
        ],
    )
    stats = ToolResultBlock(
        call_id="t2",
        content=[
            DocumentBlock(
                mime_type="application/json",
                data=base64.b64encode(json.dumps({"mean": 2.5}).encode()).decode(),
            ),
            TextBlock(text='{"n": 4}'),
        ],
    )
    broken = ToolResponse.failure("t3", "broken", "disk full").to_result_block()
    history = through_state(
        [
            ChatMessage.user("Go."),
            ChatMessage.assistant(calls),
            ChatMessage.tool_result(chart),
            ChatMessage.tool_result(stats),
            ChatMessage.tool_result(broken),
            ChatMessage.user("Summarize."),
        ]
    )
    await connection.achat(history, [WEATHER], model=MODEL, json_tool_results=True)
    # The tool results and the user message after them are one user message.
    assert server.bodies[0]["messages"][2] == {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "t1",
                    "content": [
                        {"text": "Chart and report."},
                        {"image": {"format": "png", "source": {"bytes": PNG_B64}}},
                        {
                            "document": {
                                "format": "pdf",
                                "name": "report-pdf",
                                "source": {"bytes": PDF_B64},
                            }
                        },
                        {
                            "video": {
                                "format": "mp4",
                                "source": {"s3Location": {"uri": "s3://bucket/v.mp4"}},
                            }
                        },
                    ],
                }
            },
            {
                "toolResult": {
                    "toolUseId": "t2",
                    "content": [{"json": {"mean": 2.5}}, {"json": {"n": 4}}],
                }
            },
            {
                "toolResult": {
                    "toolUseId": "t3",
                    "content": [{"text": "disk full"}],
                    "status": "error",
                }
            },
            {"text": "Summarize."},
        ],
    }


async def test_text_stays_text_without_json_tool_results(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    history = [
        ChatMessage.user("Go."),
        ChatMessage.assistant([ToolCallBlock(id="t1", name="stats", input={})]),
        ChatMessage.tool_result(
            ToolResultBlock(call_id="t1", content=[TextBlock(text='{"n": 4}')])
        ),
    ]
    await connection.achat(history, [WEATHER], model=MODEL)
    assert server.bodies[0]["messages"][2]["content"] == [
        {"toolResult": {"toolUseId": "t1", "content": [{"text": '{"n": 4}'}]}}
    ]


async def test_audio_in_a_tool_result_raises(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    history = [
        ChatMessage.user("Go."),
        ChatMessage.assistant([ToolCallBlock(id="t1", name="record", input={})]),
        ChatMessage.tool_result(
            ToolResultBlock(
                call_id="t1", content=[AudioBlock(mime_type="audio/mpeg", data=MP3_B64)]
            )
        ),
    ]
    with pytest.raises(UnsupportedContentBlockError, match="cannot carry audio"):
        await connection.achat(history, [WEATHER], model=MODEL)
    assert server.requests == []


async def test_ids_bedrock_would_refuse_are_replaced_on_call_and_result_alike(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    odd = "call/with spaces#" + "x" * 60
    history = [
        ChatMessage.user("Go."),
        ChatMessage.assistant([ToolCallBlock(id=odd, name="get_weather", input={})]),
        ChatMessage.tool_result(ToolResultBlock(call_id=odd, content=[TextBlock(text="ok")])),
    ]
    await connection.achat(history, [WEATHER], model=MODEL)
    messages = server.bodies[0]["messages"]
    call_id = messages[1]["content"][0]["toolUse"]["toolUseId"]
    assert call_id == messages[2]["content"][0]["toolResult"]["toolUseId"]
    assert call_id.startswith("t") and len(call_id) == 41


# ------------------------------------------------------------ usage and stop reasons


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, Usage()),
        (
            {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0, "cacheReadInputTokens": 0},
            Usage(input_tokens=0, output_tokens=0, total_tokens=0, cache_read_tokens=0),
        ),
        (
            {
                "inputTokens": 5,
                "outputTokens": 2,
                "cacheReadInputTokens": 3,
                "cacheWriteInputTokens": 1,
            },
            Usage(
                input_tokens=5,
                output_tokens=2,
                cache_read_tokens=3,
                cache_write_tokens=1,
                total_tokens=11,
            ),
        ),
        ({"inputTokens": -5, "outputTokens": -2, "totalTokens": None}, Usage()),
    ],
    ids=["absent", "zeros", "total-computed-with-cache", "negative"],
)
async def test_usage_unknown_is_not_zero(
    server: FakeProviderServer,
    connection: BedrockChatModelConnection,
    usage: dict[str, Any] | None,
    expected: Usage,
) -> None:
    body = reply([{"text": "ok"}])
    if usage is None:
        del body["usage"]
    else:
        body["usage"] = usage
    server.enqueue(body)
    result = await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert result.usage == expected
    assert result.message.text == "ok"


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("guardrail_intervened", "content_filter"),
        ("content_filtered", "content_filter"),
        ("model_context_window_exceeded", "model_context_window_exceeded"),
    ],
)
async def test_stop_reasons(
    server: FakeProviderServer,
    connection: BedrockChatModelConnection,
    raw: str,
    canonical: str,
) -> None:
    server.enqueue(reply([{"text": "x"}], stop=raw))
    result = await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (result.finish_reason, result.metadata["raw_finish_reason"]) == (canonical, raw)


async def test_unknown_blocks_are_kept_redacted_and_warned_about(
    server: FakeProviderServer,
    connection: BedrockChatModelConnection,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _unknown_content._warned.clear()
    caplog.set_level(logging.WARNING, logger="flink_agents.integrations.chat_models")
    citations = {"citationsContent": {"content": [{"text": "cited"}], "citations": []}}
    server.enqueue(reply([{"text": "Answer."}, citations, {"brandNewBlock": {"a": 1}}]))
    result = await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert result.message.text == "Answer."
    assert result.metadata["unknown_blocks"] == [
        {"type": "citationsContent", **citations},
        {"type": "brandNewBlock"},  # boto3 keeps only the name of a member it does not know
    ]
    messages = [r.getMessage() for r in caplog.records]
    assert any("'citationsContent'" in m for m in messages)
    assert any("'brandNewBlock'" in m for m in messages)


# -------------------------------------------------------------------- options, setup


async def test_tool_choice_and_model_fields(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    await connection.achat(
        [ChatMessage.user("hi")],
        [WEATHER],
        model=MODEL,
        tool_choice="get_weather",
        top_k=40,
        performanceConfig={"latency": "optimized"},
        additionalModelRequestFields={"anthropic_beta": ["x"]},
    )
    body = server.bodies[0]
    assert body["toolConfig"] == {
        "tools": [WEATHER_SPEC],
        "toolChoice": {"tool": {"name": "get_weather"}},
    }
    assert body["additionalModelRequestFields"] == {"anthropic_beta": ["x"], "top_k": 40}
    assert body["performanceConfig"] == {"latency": "optimized"}


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({}, "needs a model id"),
        ({"model": MODEL, "tool_choice": "auto"}, "tool_choice needs tools"),
        ({"model": MODEL, "inferenceConfig": {"maxTokens": 5}, "max_tokens": 9}, "maxTokens"),
        ({"model": MODEL, "stream": True}, "streaming"),
    ],
    ids=["no-model", "choice-without-tools", "clash", "stream"],
)
async def test_bad_options_raise_before_sending(
    server: FakeProviderServer,
    connection: BedrockChatModelConnection,
    params: dict[str, Any],
    match: str,
) -> None:
    with pytest.raises(ValueError, match=match):
        await connection.achat([ChatMessage.user("hi")], **params)
    assert server.requests == []


async def test_setup_options_reach_the_body(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    setup = BedrockChatModelSetup(
        connection="bedrock",
        model=MODEL,
        temperature=0.3,
        max_tokens=100,
        additional_kwargs={"top_k": 5},
        get_resource=lambda name, kind: connection,
    )
    await setup.achat([ChatMessage.user("hi")])
    body = server.bodies[0]
    assert body["inferenceConfig"] == {"maxTokens": 100, "temperature": 0.3}
    assert body["additionalModelRequestFields"] == {"top_k": 5}


def test_settings_descriptor_pickling_and_refusals() -> None:
    descriptor = ResourceDescriptor(
        clazz=ResourceName.ChatModel.BEDROCK_CONNECTION,
        region="us-west-2",
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )
    connection = descriptor.build()
    assert isinstance(connection, BedrockChatModelConnection)
    assert connection.region == "us-west-2"
    assert SECRET_KEY not in repr(connection)
    assert "aws_secret_access_key" not in connection.model_dump()
    again = pickle.loads(pickle.dumps(connection))
    assert (again.region, again.aws_secret_access_key) == ("us-west-2", SECRET_KEY)
    with pytest.raises(ValueError, match="AWS_BEARER_TOKEN_BEDROCK"):
        BedrockChatModelConnection(api_key="abc")
    with pytest.raises(ValueError, match="no http_client"):
        BedrockChatModelConnection(http_client=lambda: None)
    with pytest.raises(ResourceUnavailableError, match=r"ChatModel\.BEDROCK_CONNECTION"):
        ResourceDescriptor(clazz=ResourceName.ChatModel.Java.BEDROCK_CONNECTION).resolve_class()
    setup = ResourceDescriptor(clazz=ResourceName.ChatModel.BEDROCK_SETUP, connection="c").build()
    assert isinstance(setup, BedrockChatModelSetup)
    assert setup.model_kwargs == {"model": "us.anthropic.claude-sonnet-4-20250514-v1:0"}


async def test_explicit_credentials_and_headers(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    connection = BedrockChatModelConnection(
        base_url=server.base_url,
        region="ap-south-1",
        aws_access_key_id="AKIAOTHEROTHEROTHER1",
        aws_secret_access_key="another-secret-key-0123456789",
        default_headers={"x-team": "search"},
    )
    await connection.achat([ChatMessage.user("hi")], model=MODEL)
    headers = server.requests[0].headers
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIAOTHEROTHEROTHER1/")
    assert "/ap-south-1/bedrock/" in headers["authorization"]
    assert headers["x-team"] == "search"


def test_sync_chat(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    connection = BedrockChatModelConnection(base_url=server.base_url)
    assert connection.chat([ChatMessage.user("hi")], model=MODEL).message.text == "It is red."


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("status", "code", "kind", "retryable"),
    [
        (429, "ThrottlingException", "rate_limit", True),
        (429, "ModelNotReadyException", "rate_limit", True),
        (503, "ServiceUnavailableException", "overloaded", True),
        (500, "InternalServerException", "server", True),
        (408, "ModelTimeoutException", "timeout", True),
        (400, "ValidationException", "bad_request", False),
        (403, "AccessDeniedException", "authentication", False),
        (403, "UnrecognizedClientException", "authentication", False),
        (404, "ResourceNotFoundException", "bad_request", False),
        (424, "ModelErrorException", "bad_request", False),
    ],
)
async def test_http_errors(
    server: FakeProviderServer,
    connection: BedrockChatModelConnection,
    status: int,
    code: str,
    kind: str,
    retryable: bool,
) -> None:
    server.enqueue(
        ScriptedResponse(
            status, {"message": "Something went wrong."}, headers={"x-amzn-ErrorType": code}
        )
    )
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    error = info.value
    assert (error.status_code, error.kind, error.retryable, error.provider) == (
        status,
        kind,
        retryable,
        "bedrock",
    )
    assert f"{code}: Something went wrong." in error.message
    assert len(server.requests) == 1  # boto3 does not retry: the chat action does


async def test_secrets_are_masked_when_the_server_echoes_them(
    server: FakeProviderServer, connection: BedrockChatModelConnection
) -> None:
    server.enqueue(
        ScriptedResponse(
            400,
            {"message": f"bad signature for {SECRET_KEY}"},
            headers={"x-amzn-ErrorType": "ValidationException"},
        )
    )
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert SECRET_KEY not in str(info.value)
    assert "bad signature for ***" in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        "{not json",
        "[1, 2]",
        '{"output": {}}',
        '{"output": {"message": {"content": [{"text": 5}]}}}',
        '{"output": {"message": {"content": []}}, "usage": {"inputTokens": "five"}}',
    ],
    ids=["not-json", "a-list", "no-message", "text-not-a-string", "count-not-a-number"],
)
async def test_malformed_bodies(
    server: FakeProviderServer, connection: BedrockChatModelConnection, body: str
) -> None:
    server.enqueue(ScriptedResponse(200, body))
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (info.value.kind, info.value.retryable) == ("malformed_response", False)


async def test_a_refused_connection_is_retryable() -> None:
    connection = BedrockChatModelConnection(base_url=refused_url())
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (info.value.kind, info.value.retryable) == ("connection", True)


async def test_a_timeout_is_retryable() -> None:
    with held_server(TEXT_REPLY) as server:
        connection = BedrockChatModelConnection(base_url=server.base_url, timeout=0.2)
        with pytest.raises(ChatModelError) as info:
            await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (info.value.kind, info.value.retryable) == ("timeout", True)


async def test_no_credentials_and_no_region_say_what_to_set(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    connection = BedrockChatModelConnection(base_url=server.base_url)
    with pytest.raises(ChatModelError, match="AWS_ACCESS_KEY_ID") as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (info.value.kind, info.value.retryable) == ("authentication", False)

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(ChatModelError, match="AWS_REGION") as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (info.value.kind, info.value.retryable) == ("configuration", False)
    assert server.requests == []
