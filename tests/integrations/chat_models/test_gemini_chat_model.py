"""`GeminiChatModelConnection` through the real ``google-genai`` SDK against a local server.

Every request test asserts the exact JSON body the server received on
``/v1beta/models/{model}:generateContent`` (as the SDK writes it: its own mix of camelCase
and snake_case keys, payloads and signatures as base64), or that nothing was sent.
"""

from __future__ import annotations

import base64
import logging
import pickle
from collections.abc import AsyncIterator
from typing import Any

import cloudpickle
import httpx2
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
from flink_agents.integrations.chat_models.gemini import (
    GeminiChatModelConnection,
    GeminiChatModelSetup,
)
from flink_agents.integrations.chat_models.gemini._generate_content_api import (
    TOOL_MEDIA_ERROR_REASON,
    is_generated_id,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.chat_models.provider_helpers import (
    close_sdk_client,
    held_server,
    refused_url,
    through_state,
)

MODEL = "gemini-test"
PATH = f"/v1beta/models/{MODEL}:generateContent"
API_KEY = "AIzaSy-gemini-test-key-0123456789"
PNG = b"\x89PNG\r\n\x1a\nfake-png"
PNG_B64 = base64.b64encode(PNG).decode()
PDF_B64 = base64.b64encode(b"%PDF-1.4 fake").decode()
GIF_B64 = base64.b64encode(b"GIF89a fake").decode()
WAV_B64 = base64.b64encode(b"RIFF fake wav").decode()
SIG_THOUGHT = base64.b64encode(b"\xfb\xffsignature of the thought").decode()  # has + and /
SIG_CALL = base64.b64encode(b"signature of the call").decode()
SIG_TEXT = base64.b64encode(b"signature of the text").decode()

WEATHER = ToolMetadata(
    name="get_weather",
    description="The weather in a city.",
    args_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
WEATHER_DECLARATION = {
    "functionDeclarations": [
        {
            "description": "The weather in a city.",
            "name": "get_weather",
            "parameters_json_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ]
}


def on_wire(data: str) -> str:
    """``data`` (base64) as the SDK writes bytes: URL-safe base64 (the API takes both)."""
    return base64.urlsafe_b64encode(base64.b64decode(data)).decode()


def reply(
    parts: list[dict[str, Any]],
    finish: str | None = "STOP",
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-test-001"}
    body["usageMetadata"] = (
        {"promptTokenCount": 12, "candidatesTokenCount": 3, "totalTokenCount": 15}
        if usage is None
        else usage
    )
    body.update(extra)
    return body


TEXT_REPLY = reply([{"text": "It is red."}], responseId="resp-1")


def user_turn(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"parts": list(parts), "role": "user"}


def connect(base_url: str, **settings: Any) -> GeminiChatModelConnection:
    settings = {"api_key": API_KEY, "api_version": "v1beta", "timeout": 5, **settings}
    return GeminiChatModelConnection(base_url=base_url, **settings)


@pytest.fixture
async def connection(server: FakeProviderServer) -> AsyncIterator[GeminiChatModelConnection]:
    connection = connect(server.base_url)
    yield connection
    await close_sdk_client(connection)  # inside the test's loop


# ------------------------------------------------------------------------ round trips


async def test_text_turn_exact_body_and_result(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    result = await connection.achat(
        [ChatMessage.system("Be brief."), ChatMessage.user("Color?"), ChatMessage.system("No.")],
        model=MODEL,
        temperature=0.2,
        max_output_tokens=50,
        include_thoughts=True,
        thinking_budget=128,
    )
    [request] = server.requests
    assert (request.method, request.path) == ("POST", PATH)
    assert request.headers["x-goog-api-key"] == API_KEY
    assert request.body == {
        "contents": [user_turn({"text": "Color?"})],
        "systemInstruction": {"parts": [{"text": "Be brief."}, {"text": "No."}]},
        "generationConfig": {
            "temperature": 0.2,
            "maxOutputTokens": 50,
            "thinkingConfig": {"include_thoughts": True, "thinking_budget": 128},
        },
    }
    assert result.message.blocks == [TextBlock(text="It is red.")]
    assert (result.model, result.response_id) == ("gemini-test-001", "resp-1")
    assert result.finish_reason == "stop"
    assert result.usage == Usage(input_tokens=12, output_tokens=3, total_tokens=15)
    assert result.metadata == {"raw_finish_reason": "STOP"}


async def test_user_media_exact_parts(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    message = ChatMessage.user(
        [
            TextBlock(text="Compare "),
            ImageBlock(mime_type="image/PNG", data=PNG_B64),
            ImageBlock(mime_type="image/jpeg", url="data:image/jpeg;base64,/9j/4AAQ"),
            ImageBlock(mime_type="image/jpeg", url="https://img.example.com/a.jpg"),
            AudioBlock(mime_type="audio/wav", data=WAV_B64),
            VideoBlock(mime_type="video/mp4", url="https://www.youtube.com/watch?v=x"),
            DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="r.pdf"),
            DocumentBlock(mime_type="text/plain", url="https://example.com/notes.txt"),
            TextBlock(text=""),
        ]
    )
    await connection.achat([message], model=MODEL)
    assert server.bodies[0]["contents"] == [
        user_turn(
            {"text": "Compare "},
            {"inlineData": {"data": PNG_B64, "mime_type": "image/png"}},
            {"inlineData": {"data": on_wire("/9j/4AAQ"), "mime_type": "image/jpeg"}},
            {"fileData": {"file_uri": "https://img.example.com/a.jpg", "mime_type": "image/jpeg"}},
            {"inlineData": {"data": WAV_B64, "mime_type": "audio/wav"}},
            {
                "fileData": {
                    "file_uri": "https://www.youtube.com/watch?v=x",
                    "mime_type": "video/mp4",
                }
            },
            {"inlineData": {"data": PDF_B64, "mime_type": "application/pdf"}},
            {"fileData": {"file_uri": "https://example.com/notes.txt", "mime_type": "text/plain"}},
        )
    ]


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (
            ChatMessage.assistant([ImageBlock(mime_type="image/png", data=PNG_B64)]),
            UnsupportedContentBlockError,
        ),
        (
            ChatMessage.user([ImageBlock(mime_type="image/png", data=PNG_B64).redact()]),
            UnsupportedContentBlockError,
        ),
        (ChatMessage.user([ImageBlock(mime_type="image/png", data="not base64!")]), ValueError),
    ],
    ids=["assistant-media", "redacted-media", "bad-base64"],
)
async def test_what_cannot_be_sent_raises_before_sending(
    server: FakeProviderServer,
    connection: GeminiChatModelConnection,
    message: ChatMessage,
    error: type[Exception],
) -> None:
    with pytest.raises(error):
        await connection.achat([ChatMessage.user("hi"), message], model=MODEL)
    assert server.requests == []


# ---------------------------------------------------------- signatures and tool calls


THINKING_CALL = reply(
    [
        {"text": "Oslo: look it up.", "thought": True, "thoughtSignature": SIG_THOUGHT},
        {"text": "Let me check."},
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
            "thoughtSignature": SIG_CALL,
        },
        {"functionCall": {"name": "get_weather", "args": {"city": "Bergen"}}},
    ],
    usage={
        "promptTokenCount": 30,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 50,
        "cachedContentTokenCount": 8,
        "totalTokenCount": 100,
    },
)


async def test_thought_signatures_and_generated_ids_survive_the_round_trip(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    server.enqueue(THINKING_CALL, reply([{"text": "Sunny.", "thoughtSignature": SIG_TEXT}]))
    history = [ChatMessage.user("Weather in Oslo and Bergen?")]
    first = await connection.achat(history, [WEATHER], model=MODEL, include_thoughts=True)

    oslo, bergen = first.message.tool_calls
    assert is_generated_id(oslo.id) and is_generated_id(bergen.id) and oslo.id != bergen.id
    assert first.message.blocks == [
        ReasoningBlock(text="Oslo: look it up.", provider="gemini", signature=SIG_THOUGHT),
        TextBlock(text="Let me check."),
        ToolCallBlock(id=oslo.id, name="get_weather", input={"city": "Oslo"}, signature=SIG_CALL),
        ToolCallBlock(id=bergen.id, name="get_weather", input={"city": "Bergen"}),
    ]
    assert first.finish_reason == "tool_calls"
    assert first.usage == Usage(
        input_tokens=30,
        output_tokens=20,
        reasoning_tokens=50,
        cache_read_tokens=8,
        total_tokens=100,
    )

    history = through_state(
        [
            *history,
            first.message,
            ChatMessage.tool_result(
                ToolResultBlock(call_id=oslo.id, content=[TextBlock(text="9 C")])
            ),
            ChatMessage.tool_result(
                ToolResultBlock(
                    call_id=bergen.id, content=[TextBlock(text="no data")], is_error=True
                )
            ),
        ]
    )
    second = await connection.achat(history, [WEATHER], model=MODEL)
    # A signature on a text part is kept as an empty Gemini reasoning block before the text.
    assert second.message.blocks == [
        ReasoningBlock(provider="gemini", signature=SIG_TEXT),
        TextBlock(text="Sunny."),
    ]

    body = server.bodies[1]
    assert body["tools"] == [WEATHER_DECLARATION]
    assert body["contents"] == [
        user_turn({"text": "Weather in Oslo and Bergen?"}),
        {
            "parts": [
                {
                    "text": "Oslo: look it up.",
                    "thought": True,
                    "thoughtSignature": on_wire(SIG_THOUGHT),
                },
                {"text": "Let me check."},
                {
                    "functionCall": {"args": {"city": "Oslo"}, "name": "get_weather"},
                    "thoughtSignature": SIG_CALL,
                },
                {"functionCall": {"args": {"city": "Bergen"}, "name": "get_weather"}},
            ],
            "role": "model",
        },
        user_turn(
            {"functionResponse": {"name": "get_weather", "response": {"output": "9 C"}}},
            {"functionResponse": {"name": "get_weather", "response": {"error": "no data"}}},
        ),
    ]

    third_history = through_state([*history, second.message, ChatMessage.user("And tomorrow?")])
    server.enqueue(TEXT_REPLY)
    await connection.achat(third_history, model=MODEL)
    assert server.bodies[2]["contents"][3] == {
        "parts": [{"text": "Sunny.", "thoughtSignature": SIG_TEXT}],
        "role": "model",
    }


async def test_provider_call_ids_are_sent_back_on_the_call_and_its_response(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    server.enqueue(
        reply([{"functionCall": {"id": "fc-7", "name": "get_weather", "args": {"city": "Oslo"}}}]),
        TEXT_REPLY,
    )
    history = [ChatMessage.user("Oslo?")]
    first = await connection.achat(history, [WEATHER], model=MODEL)
    [call] = first.message.tool_calls
    assert call.id == "fc-7"
    result = ToolResponse.from_output(call.id, call.name, "9 C").to_result_block()
    history = through_state([*history, first.message, ChatMessage.tool_result(result)])
    await connection.achat(history, [WEATHER], model=MODEL)
    assert server.bodies[1]["contents"][1:] == [
        {
            "parts": [
                {"functionCall": {"args": {"city": "Oslo"}, "id": "fc-7", "name": "get_weather"}}
            ],
            "role": "model",
        },
        user_turn(
            {
                "functionResponse": {
                    "id": "fc-7",
                    "name": "get_weather",
                    "response": {"output": "9 C"},
                }
            }
        ),
    ]


async def test_reasoning_from_other_providers_is_not_sent(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    answer = ChatMessage.assistant(
        [
            ReasoningBlock(text="claude thinks", provider="anthropic", signature="sig"),
            ReasoningBlock(text="gpt thinks", provider="openai-responses", id="rs_1"),
            TextBlock(text="Blue."),
        ]
    )
    only_reasoning = ChatMessage.assistant([ReasoningBlock(text="x", provider="anthropic")])
    await connection.achat(
        [ChatMessage.user("Color?"), answer, ChatMessage.user("Sure?"), only_reasoning],
        model=MODEL,
    )
    assert server.bodies[0]["contents"] == [
        user_turn({"text": "Color?"}),
        {"parts": [{"text": "Blue."}], "role": "model"},
        user_turn({"text": "Sure?"}),
    ]


async def test_tool_media_in_the_function_response_and_after_it(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    call = ToolCallBlock(id="fc-1", name="get_chart", input={})
    result = ToolResultBlock(
        call_id="fc-1",
        content=[
            TextBlock(text="Chart and notes."),
            ImageBlock(mime_type="image/png", data=PNG_B64, name="chart.png"),
            DocumentBlock(mime_type="application/pdf", url="https://example.com/r.pdf"),
            ImageBlock(mime_type="image/gif", data=GIF_B64),
            AudioBlock(mime_type="audio/wav", data=WAV_B64, name="memo.wav"),
        ],
    )
    history = through_state(
        [ChatMessage.user("Chart?"), ChatMessage.assistant([call]), ChatMessage.tool_result(result)]
    )
    await connection.achat(history, model=MODEL)
    assert server.bodies[0]["contents"][2:] == [
        user_turn(
            {
                "functionResponse": {
                    "id": "fc-1",
                    "name": "get_chart",
                    "parts": [
                        {
                            "inline_data": {
                                "mime_type": "image/png",
                                "data": PNG_B64,
                                "display_name": "chart.png",
                            }
                        },
                        {
                            "file_data": {
                                "file_uri": "https://example.com/r.pdf",
                                "mime_type": "application/pdf",
                                "display_name": "document_2",
                            }
                        },
                    ],
                    "response": {
                        "output": "Chart and notes.\n[attached below: image 3 (image/gif), "
                        "audio 4 (audio/wav, memo.wav)]"
                    },
                }
            }
        ),
        user_turn(
            {"text": "image 3 from tool call get_chart fc-1:"},
            {"inlineData": {"data": GIF_B64, "mime_type": "image/gif"}},
            {"text": "audio 4 from tool call get_chart fc-1:"},
            {"inlineData": {"data": WAV_B64, "mime_type": "audio/wav"}},
        ),
    ]


async def test_tool_media_user_message_option_moves_every_media(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    call = ToolCallBlock(id="call_" + "a" * 32, name="get_chart", input={})
    result = ToolResultBlock(
        call_id=call.id, content=[ImageBlock(mime_type="image/png", data=PNG_B64)]
    )
    history = [
        ChatMessage.user("Chart?"),
        ChatMessage.assistant([call]),
        ChatMessage.tool_result(result),
    ]
    await connection.achat(history, model=MODEL, tool_media="user_message")
    assert server.bodies[0]["contents"][2:] == [
        user_turn(
            {
                "functionResponse": {
                    "name": "get_chart",
                    "response": {"output": "[attached below: image 1 (image/png)]"},
                }
            }
        ),
        user_turn(
            {"text": "image 1 from tool call get_chart:"},
            {"inlineData": {"data": PNG_B64, "mime_type": "image/png"}},
        ),
    ]


async def test_tool_media_error_option_raises_for_what_the_response_cannot_carry(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    call = ToolCallBlock(id="fc-1", name="record", input={})
    result = ToolResultBlock(
        call_id="fc-1", content=[AudioBlock(mime_type="audio/wav", data=WAV_B64)]
    )
    history = [
        ChatMessage.user("Record"),
        ChatMessage.assistant([call]),
        ChatMessage.tool_result(result),
    ]
    with pytest.raises(UnsupportedContentBlockError, match="tool_media='error'") as info:
        await connection.achat(history, model=MODEL, tool_media="error")
    assert TOOL_MEDIA_ERROR_REASON in str(info.value)
    assert server.requests == []


async def test_a_result_for_an_unknown_call_raises_before_sending(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    result = ToolResultBlock(call_id="nowhere", content=[TextBlock(text="x")])
    with pytest.raises(ValueError, match="answers no tool call"):
        await connection.achat(
            [ChatMessage.user("hi"), ChatMessage.tool_result(result)], model=MODEL
        )
    assert server.requests == []


# ------------------------------------------------------------ usage and finish reasons


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, Usage()),
        ({}, Usage()),
        (
            {
                "promptTokenCount": 0,
                "candidatesTokenCount": 0,
                "thoughtsTokenCount": 0,
                "totalTokenCount": 0,
            },
            Usage(input_tokens=0, output_tokens=0, reasoning_tokens=0, total_tokens=0),
        ),
        (
            {"promptTokenCount": 10, "candidatesTokenCount": 4, "thoughtsTokenCount": 6},
            Usage(input_tokens=10, output_tokens=4, reasoning_tokens=6, total_tokens=20),
        ),
        (
            {"promptTokenCount": "ten", "candidatesTokenCount": -1, "totalTokenCount": 2.5},
            Usage(),
        ),
    ],
    ids=["absent", "empty", "zeros", "total-computed-with-thoughts", "ill-typed"],
)
async def test_usage_unknown_is_not_zero(
    server: FakeProviderServer,
    connection: GeminiChatModelConnection,
    usage: dict[str, Any] | None,
    expected: Usage,
) -> None:
    body = reply([{"text": "ok"}], usage={})
    if usage is None:
        del body["usageMetadata"]
    else:
        body["usageMetadata"] = usage
    server.enqueue(body)
    result = await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert result.usage == expected
    assert result.message.text == "ok"  # odd usage never fails the answer


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "MALFORMED_FUNCTION_CALL"),
        (None, None),
    ],
)
async def test_finish_reasons(
    server: FakeProviderServer,
    connection: GeminiChatModelConnection,
    raw: str | None,
    canonical: str | None,
) -> None:
    server.enqueue(reply([{"text": "x"}], finish=raw))
    result = await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (result.finish_reason, result.metadata["raw_finish_reason"]) == (canonical, raw)


async def test_a_blocked_prompt_is_an_empty_content_filter_answer(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    server.enqueue(
        {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}}
    )
    result = await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert result.message.blocks == []
    assert result.finish_reason == "content_filter"
    assert result.metadata == {
        "raw_finish_reason": "SAFETY",
        "prompt_feedback": {"blockReason": "SAFETY"},
    }
    assert result.usage == Usage(input_tokens=7)


async def test_unknown_parts_are_kept_redacted_and_warned_about(
    server: FakeProviderServer,
    connection: GeminiChatModelConnection,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _unknown_content._warned.clear()
    caplog.set_level(logging.WARNING, logger="flink_agents.integrations.chat_models")
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    image = {"inlineData": {"mimeType": "image/png", "data": "A" * 300}}
    server.enqueue(reply([{"text": "Ran it."}, code, image]))
    result = await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert result.message.text == "Ran it."
    kept = result.metadata["unknown_blocks"]
    assert kept[0] == code
    assert "A" * 300 not in str(kept[1])
    assert any(
        "executableCode" in r.getMessage() or "<no type>" in r.getMessage() for r in caplog.records
    )


# -------------------------------------------------------------------- options, setup


async def test_tool_choice_and_config_fields(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY, TEXT_REPLY)
    await connection.achat(
        [ChatMessage.user("hi")],
        [WEATHER],
        model=MODEL,
        tool_choice="get_weather",
        seed=7,
        stop_sequences=["END"],
        response_mime_type="application/json",
    )
    await connection.achat([ChatMessage.user("hi")], [WEATHER], model=MODEL, tool_choice="none")
    first, second = server.bodies
    assert first["toolConfig"] == {
        "functionCallingConfig": {"allowedFunctionNames": ["get_weather"], "mode": "ANY"}
    }
    assert first["generationConfig"] == {
        "stopSequences": ["END"],
        "seed": 7,
        "responseMimeType": "application/json",
    }
    assert second["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({}, "needs a model name"),
        ({"model": MODEL, "no_such_field": 1}, "no_such_field"),
        ({"model": MODEL, "temperature": "hot"}, "temperature"),
        ({"model": MODEL, "tool_media": "somewhere"}, "tool_media"),
        ({"model": MODEL, "stream": True}, "streaming"),
    ],
    ids=["no-model", "unknown-field", "wrong-type", "bad-tool-media", "stream"],
)
async def test_bad_options_raise_before_sending(
    server: FakeProviderServer,
    connection: GeminiChatModelConnection,
    params: dict[str, Any],
    match: str,
) -> None:
    with pytest.raises(ValueError, match=match):
        await connection.achat([ChatMessage.user("hi")], **params)
    assert server.requests == []


async def test_setup_options_reach_the_body(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    server.enqueue(TEXT_REPLY)
    setup = GeminiChatModelSetup(
        connection="gemini",
        model=MODEL,
        temperature=0.5,
        max_output_tokens=256,
        top_p=0.9,
        top_k=20,
        thinking_level="low",
        additional_kwargs={"candidate_count": 1},
        get_resource=lambda name, kind: connection,
    )
    await setup.achat([ChatMessage.user("hi")])
    assert server.bodies[0]["generationConfig"] == {
        "temperature": 0.5,
        "topP": 0.9,
        "topK": 20.0,
        "candidateCount": 1,
        "maxOutputTokens": 256,
        "thinkingConfig": {"thinking_level": "LOW"},
    }


def test_resource_descriptor_and_pickling() -> None:
    descriptor = ResourceDescriptor(
        clazz=ResourceName.ChatModel.GEMINI_CONNECTION,
        api_key=API_KEY,
        base_url="http://127.0.0.1:1",
        timeout=10,
    )
    connection = descriptor.build()
    assert isinstance(connection, GeminiChatModelConnection)
    assert API_KEY not in repr(connection) and "api_key" not in connection.model_dump()
    again = pickle.loads(pickle.dumps(connection))
    assert (again.base_url, again.timeout) == ("http://127.0.0.1:1", 10)
    with pytest.raises(ResourceUnavailableError, match=r"ChatModel\.GEMINI_SETUP"):
        ResourceDescriptor(clazz=ResourceName.ChatModel.Java.GEMINI_SETUP).resolve_class()
    setup = ResourceDescriptor(clazz=ResourceName.ChatModel.GEMINI_SETUP, connection="c").build()
    assert isinstance(setup, GeminiChatModelSetup)
    assert setup.model_kwargs == {
        "model": "gemini-3.1-pro-preview",
        "tool_media": "function_response",
    }


def test_sync_chat(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    result = connect(server.base_url).chat([ChatMessage.user("hi")], model=MODEL)
    assert result.message.text == "It is red."


async def test_an_http_client_of_your_own(server: FakeProviderServer) -> None:
    server.enqueue(TEXT_REPLY)
    seen: list[str] = []

    async def record(request: httpx2.Request) -> None:
        seen.append(request.url.path)

    def make_client() -> httpx2.AsyncClient:
        return httpx2.AsyncClient(event_hooks={"request": [record]})

    connection = connect(server.base_url, http_client=make_client)
    result = await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert result.message.text == "It is red."
    assert seen == [PATH]
    cloudpickle.loads(cloudpickle.dumps(connection))  # a function travels, as to Flink workers


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("status", "error_status", "kind", "retryable"),
    [
        (429, "RESOURCE_EXHAUSTED", "rate_limit", True),
        (503, "UNAVAILABLE", "overloaded", True),
        (500, "INTERNAL", "server", True),
        (504, "DEADLINE_EXCEEDED", "server", True),
        (400, "INVALID_ARGUMENT", "bad_request", False),
        (401, "UNAUTHENTICATED", "authentication", False),
        (403, "PERMISSION_DENIED", "authentication", False),
    ],
)
async def test_http_errors(
    server: FakeProviderServer,
    connection: GeminiChatModelConnection,
    status: int,
    error_status: str,
    kind: str,
    retryable: bool,
) -> None:
    body = {
        "error": {"code": status, "message": "The model is overloaded.", "status": error_status}
    }
    server.enqueue(ScriptedResponse(status, body))
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    error = info.value
    assert (error.status_code, error.kind, error.retryable, error.provider) == (
        status,
        kind,
        retryable,
        "gemini",
    )
    assert f"{error_status}: The model is overloaded." in error.message
    assert len(server.requests) == 1  # the SDK does not retry: the chat action does


async def test_the_retry_delay_of_a_rate_limit_is_read(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
    body = {
        "error": {
            "code": 429,
            "message": "Quota",
            "status": "RESOURCE_EXHAUSTED",
            "details": [retry_info],
        }
    }
    server.enqueue(
        ScriptedResponse(429, body), ScriptedResponse(429, body, headers={"retry-after": "3"})
    )
    for expected in (37.0, 3.0):  # the body's RetryInfo; a retry-after header wins
        with pytest.raises(ChatModelError) as info:
            await connection.achat([ChatMessage.user("hi")], model=MODEL)
        assert info.value.retry_after == expected


async def test_the_key_is_masked_when_the_server_echoes_it(
    server: FakeProviderServer, connection: GeminiChatModelConnection
) -> None:
    body = {
        "error": {
            "code": 400,
            "message": f"API key {API_KEY} not valid",
            "status": "INVALID_ARGUMENT",
        }
    }
    server.enqueue(ScriptedResponse(400, body))
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert API_KEY not in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        "{not json",
        "[1, 2]",
        '{"candidates": "x"}',
        '{"candidates": [{"content": {"parts": [{"text": 5}]}}]}',
        "{}",
    ],
    ids=["not-json", "a-list", "candidates-not-a-list", "text-not-a-string", "no-candidates"],
)
async def test_malformed_bodies(
    server: FakeProviderServer, connection: GeminiChatModelConnection, body: str
) -> None:
    server.enqueue(ScriptedResponse(200, body))
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (info.value.kind, info.value.retryable) == ("malformed_response", False)


@pytest.mark.parametrize("own_client", [False, True], ids=["sdk-transport", "httpx2-client"])
async def test_a_refused_connection_is_retryable(own_client: bool) -> None:
    settings: dict[str, Any] = {"http_client": httpx2.AsyncClient} if own_client else {}
    connection = connect(refused_url(), **settings)
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (info.value.kind, info.value.retryable) == ("connection", True)


@pytest.mark.parametrize("own_client", [False, True], ids=["sdk-transport", "httpx2-client"])
async def test_a_timeout_is_retryable(own_client: bool) -> None:
    settings: dict[str, Any] = {"http_client": httpx2.AsyncClient} if own_client else {}
    with held_server(TEXT_REPLY) as server:
        connection = connect(server.base_url, timeout=0.2, **settings)
        with pytest.raises(ChatModelError) as info:
            await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (info.value.kind, info.value.retryable) == ("timeout", True)


async def test_no_key_is_an_authentication_error_before_sending(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    connection = connect(server.base_url, api_key=None)
    with pytest.raises(ChatModelError, match="GOOGLE_API_KEY") as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert (info.value.kind, info.value.retryable) == ("authentication", False)
    assert server.requests == []


async def test_the_environment_key_is_used_and_masked(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "AIzaSy-from-the-environment-987654"
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", key)
    body = {"error": {"code": 400, "message": f"bad key {key}", "status": "INVALID_ARGUMENT"}}
    server.enqueue(ScriptedResponse(400, body))
    connection = connect(server.base_url, api_key=None)
    with pytest.raises(ChatModelError) as info:
        await connection.achat([ChatMessage.user("hi")], model=MODEL)
    assert server.requests[0].headers["x-goog-api-key"] == key
    assert key not in str(info.value)
