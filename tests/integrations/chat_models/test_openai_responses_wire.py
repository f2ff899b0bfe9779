"""OpenAI Responses adapter through the real ``openai`` SDK against a local server.

Every test asserts the exact JSON body the server received. The seed's interaction
table and numbered contracts (PR #1364) are referenced in the test names/docstrings.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest

from flink_agents.api.content_blocks import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultContent,
    VideoBlock,
)
from flink_agents.api.errors import UnsupportedContentBlockError
from flink_agents.api.message import ChatMessage
from flink_agents.api.tools.tool import BaseTool, ToolMetadata
from flink_agents.integrations.chat_models.openai import (
    OpenAIResponsesChatModelConnection,
    OpenAIResponsesChatModelSetup,
)
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.chat_models.provider_helpers import response_body

API_KEY = "sk-test-responses-0123456789"
PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
PDF_B64 = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PD4+CmVuZG9iagp0cmFpbGVyCjw8Pj4KJSVFT0YK"
IMAGE_URL = "https://media.example.com/secret-chart.png"
DOC_URL = "https://media.example.com/secret-report.pdf"

TEXT_REPLY = response_body(
    "ok",
    usage={
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 2,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 12,
    },
)

# Audio and video: the kinds the Responses API cannot take, shared by the user-message
# and the tool-result tests so their errors are compared one to one.
UNSUPPORTED_MEDIA: list[AudioBlock | VideoBlock] = [
    AudioBlock(mime_type="audio/wav", data="UklGRg=="),
    AudioBlock(mime_type="audio/mpeg", url="https://media.example.com/secret.mp3"),
    VideoBlock(mime_type="video/mp4", data="AAAAGGZ0eXA="),
    VideoBlock(mime_type="video/mp4", url="https://media.example.com/secret.mp4"),
]

# Each accepted media kind and source, with the exact part it must become.
ACCEPTED_MEDIA: list[tuple[ToolResultContent, dict[str, Any]]] = [
    (
        ImageBlock(mime_type="image/png", data=PNG_B64),
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_B64}", "detail": "auto"},
    ),
    (
        ImageBlock(mime_type="image/png", url=IMAGE_URL),
        {"type": "input_image", "image_url": IMAGE_URL, "detail": "auto"},
    ),
    (
        DocumentBlock(mime_type="application/pdf", data=PDF_B64, name="report.pdf"),
        {
            "type": "input_file",
            "file_data": f"data:application/pdf;base64,{PDF_B64}",
            "filename": "report.pdf",
        },
    ),
    (
        DocumentBlock(mime_type="application/pdf", data=PDF_B64),
        {
            "type": "input_file",
            "file_data": f"data:application/pdf;base64,{PDF_B64}",
            "filename": "document",
        },
    ),
    (
        DocumentBlock(mime_type="application/pdf", url=DOC_URL, name="report.pdf"),
        {"type": "input_file", "file_url": DOC_URL, "filename": "report.pdf"},
    ),
    (
        DocumentBlock(mime_type="application/pdf", url=DOC_URL),
        {"type": "input_file", "file_url": DOC_URL},
    ),
]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(responder=lambda _request: ScriptedResponse(body=TEXT_REPLY)) as fake:
        yield fake


@pytest.fixture
def connection(server: FakeProviderServer) -> OpenAIResponsesChatModelConnection:
    server.requests.clear()
    return OpenAIResponsesChatModelConnection(api_key=API_KEY, base_url=server.base_url)


def _send(
    connection: OpenAIResponsesChatModelConnection,
    server: FakeProviderServer,
    messages: list[ChatMessage],
    **params: Any,
) -> dict[str, Any]:
    """Send through the SDK; the one JSON body the server received."""
    params.setdefault("model", "gpt-test")
    connection.chat(messages, **params)
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request.method == "POST"
    assert request.path == "/responses"
    return request.body


def _input(connection: Any, server: FakeProviderServer, messages: list[ChatMessage]) -> list[Any]:
    return _send(connection, server, messages)["input"]


def _user(*blocks: Any) -> ChatMessage:
    return ChatMessage.user(list(blocks))


def _tool(call_id: str, *content: Any, is_error: bool = False) -> ChatMessage:
    return ChatMessage.tool_result(
        ToolResultBlock(call_id=call_id, content=list(content), is_error=is_error)
    )


def _call_turn(*ids: str) -> ChatMessage:
    return ChatMessage.assistant(
        tool_calls=[ToolCallBlock(id=i, name="lookup", input={"q": i}) for i in ids]
    )


def _function_call(call_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": "lookup",
        "arguments": f'{{"q": "{call_id}"}}',
    }


def _raises_before_sending(
    connection: OpenAIResponsesChatModelConnection,
    server: FakeProviderServer,
    messages: list[ChatMessage],
) -> UnsupportedContentBlockError:
    with pytest.raises(UnsupportedContentBlockError) as info:
        connection.chat(messages, model="gpt-test")
    assert server.requests == []
    return info.value


def _assert_log_safe(error: Exception) -> None:
    text = str(error)
    assert "http" not in text and "example.com" not in text
    assert "base64" not in text
    for block in UNSUPPORTED_MEDIA:
        if block.data:
            assert block.data not in text


# ----------------------------------------------------------------- user messages (table row 1)


def test_user_text_is_an_input_text_message(connection, server) -> None:
    body = _send(connection, server, [ChatMessage.user("What is in the chart?")])
    assert body == {
        "model": "gpt-test",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "What is in the chart?"}],
            }
        ],
    }


def test_user_image_and_document_parts_in_order(connection, server) -> None:
    blocks = [TextBlock(text="look:")] + [block for block, _ in ACCEPTED_MEDIA]
    items = _input(connection, server, [_user(*blocks)])
    assert items == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "look:"}]
            + [part for _, part in ACCEPTED_MEDIA],
        }
    ]


def test_user_document_given_as_data_uri_url_travels_as_file_data(connection, server) -> None:
    uri = f"data:application/pdf;base64,{PDF_B64}"
    items = _input(connection, server, [_user(DocumentBlock(mime_type="application/pdf", url=uri))])
    assert items[0]["content"] == [{"type": "input_file", "file_data": uri, "filename": "document"}]


@pytest.mark.parametrize("block", UNSUPPORTED_MEDIA, ids=lambda b: f"{b.type}-{bool(b.url)}")
def test_user_audio_and_video_raise_before_sending(connection, server, block) -> None:
    error = _raises_before_sending(connection, server, [_user(TextBlock(text="hi"), block)])
    assert error.block_type == block.type
    assert error.provider == "openai-responses"
    assert "audio or video" in error.reason
    _assert_log_safe(error)


def test_redacted_media_cannot_be_sent(connection, server) -> None:
    message = _user(ImageBlock(mime_type="image/png", data=PNG_B64)).sanitize()
    error = _raises_before_sending(connection, server, [message])
    assert error.block_type == "image"
    assert "redacted" in error.reason


# ------------------------------------------------------- tool results (contracts 1-5, 7, 8)


def test_contract_1_2_tool_result_media_is_one_item_with_a_list_output_in_order(
    connection, server
) -> None:
    content = [TextBlock(text="here:")] + [block for block, _ in ACCEPTED_MEDIA]
    content.insert(3, TextBlock(text="and the documents:"))
    items = _input(connection, server, [_call_turn("call_a"), _tool("call_a", *content)])
    expected_parts = (
        [{"type": "input_text", "text": "here:"}]
        + [part for _, part in ACCEPTED_MEDIA[:2]]
        + [{"type": "input_text", "text": "and the documents:"}]
        + [part for _, part in ACCEPTED_MEDIA[2:]]
    )
    assert items == [
        _function_call("call_a"),
        {"type": "function_call_output", "call_id": "call_a", "output": expected_parts},
    ]


def test_contract_3_tool_result_parts_equal_the_user_message_parts(connection, server) -> None:
    blocks = [TextBlock(text="t")] + [block for block, _ in ACCEPTED_MEDIA]
    items = _input(
        connection,
        server,
        [_user(*blocks), _call_turn("call_a"), _tool("call_a", *blocks)],
    )
    user_parts = items[0]["content"]
    tool_parts = items[2]["output"]
    assert tool_parts == user_parts
    assert len(tool_parts) == len(blocks)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ([TextBlock(text="42 degrees")], "42 degrees"),
        ([TextBlock(text="part one, "), TextBlock(text="part two")], "part one, part two"),
        ([], ""),
        ([TextBlock(text="")], ""),
    ],
    ids=["one-text", "texts-concatenated", "empty", "empty-text"],
)
def test_contract_4_text_only_tool_result_is_one_string(
    connection, server, content, expected
) -> None:
    items = _input(connection, server, [_call_turn("call_a"), _tool("call_a", *content)])
    assert items[1] == {"type": "function_call_output", "call_id": "call_a", "output": expected}


@pytest.mark.parametrize("block", UNSUPPORTED_MEDIA, ids=lambda b: f"{b.type}-{bool(b.url)}")
@pytest.mark.parametrize("is_error", [False, True], ids=["ok", "is_error"])
def test_contract_5_tool_result_audio_video_fail_as_in_user_messages(
    connection, server, block, is_error
) -> None:
    user_error = _raises_before_sending(connection, server, [_user(block)])
    tool_error = _raises_before_sending(
        connection,
        server,
        [_call_turn("call_a"), _tool("call_a", TextBlock(text="x"), block, is_error=is_error)],
    )
    assert type(tool_error) is type(user_error) is UnsupportedContentBlockError
    assert str(tool_error) == str(user_error)
    assert (tool_error.block_type, tool_error.reason) == (user_error.block_type, user_error.reason)
    _assert_log_safe(tool_error)


def test_contract_5_async_chat_keeps_the_error_type(connection, server) -> None:
    messages = [_call_turn("call_a"), _tool("call_a", UNSUPPORTED_MEDIA[0])]
    with pytest.raises(UnsupportedContentBlockError):
        asyncio.run(connection.achat(messages, model="gpt-test"))
    assert server.requests == []


@pytest.mark.parametrize(
    ("content", "expected_output"),
    [
        ([TextBlock(text="lookup failed: timeout")], "lookup failed: timeout"),
        (
            [TextBlock(text="partial"), ACCEPTED_MEDIA[0][0]],
            [{"type": "input_text", "text": "partial"}, ACCEPTED_MEDIA[0][1]],
        ),
    ],
    ids=["text-only", "with-media"],
)
def test_contract_7_error_flag_is_not_sent(connection, server, content, expected_output) -> None:
    items = _input(
        connection, server, [_call_turn("call_a"), _tool("call_a", *content, is_error=True)]
    )
    assert items[1] == {
        "type": "function_call_output",
        "call_id": "call_a",
        "output": expected_output,
    }


def test_contract_8_parallel_tool_results_keep_their_correlation(connection, server) -> None:
    messages = [
        _call_turn("call_a", "call_b", "call_c"),
        _tool("call_a", TextBlock(text="sunny")),
        _tool("call_b", ACCEPTED_MEDIA[0][0]),
        _tool("call_c", is_error=True),
    ]
    items = _input(connection, server, messages)
    assert items == [
        _function_call("call_a"),
        _function_call("call_b"),
        _function_call("call_c"),
        {"type": "function_call_output", "call_id": "call_a", "output": "sunny"},
        {"type": "function_call_output", "call_id": "call_b", "output": [ACCEPTED_MEDIA[0][1]]},
        {"type": "function_call_output", "call_id": "call_c", "output": ""},
    ]


# --------------------------------------------------------- assistant and system messages


def test_assistant_text_is_an_output_text_message(connection, server) -> None:
    items = _input(
        connection,
        server,
        [ChatMessage.user("hi"), ChatMessage.assistant("Hello! How can I help?")],
    )
    assert items[1] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hello! How can I help?", "annotations": []}],
    }


@pytest.mark.parametrize(
    "block",
    [block for block, _ in ACCEPTED_MEDIA] + UNSUPPORTED_MEDIA,
    ids=lambda b: f"{b.type}-{bool(b.url)}",
)
def test_contract_6_media_in_assistant_messages_fails_with_the_role_reason(
    connection, server, block
) -> None:
    error = _raises_before_sending(
        connection, server, [ChatMessage.assistant([TextBlock(text="see"), block])]
    )
    assert error.block_type == block.type
    assert error.reason == (
        "only user messages and tool results can carry media, not assistant messages"
    )
    _assert_log_safe(error)


def test_system_message_is_a_system_role_item_in_place(connection, server) -> None:
    items = _input(connection, server, [ChatMessage.system("Be brief."), ChatMessage.user("hi")])
    assert items == [
        {
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": "Be brief."}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    ]


def test_assistant_blocks_keep_their_order(connection, server) -> None:
    reasoning = ReasoningBlock(
        provider="openai-responses",
        id="rs_1",
        summary=["Checked the weather first."],
        encrypted_content="gAAAA-opaque",
        text="Checked the weather first.",
    )
    message = ChatMessage.assistant(
        [
            reasoning,
            TextBlock(text="Let me check. "),
            TextBlock(text="One moment."),
            ToolCallBlock(id="call_w", name="weather", input={"city": "Zürich"}),
            ReasoningBlock(provider="anthropic", text="private", signature="sig", id="th_1"),
            ReasoningBlock(provider="openai-chat", text="other", id="rs_other"),
            ReasoningBlock(text="unknown origin", id="rs_x", encrypted_content="E"),
            ReasoningBlock(provider="openai-responses", text="no id"),
        ]
    )
    items = _input(connection, server, [ChatMessage.user("weather?"), message])
    assert items[1:] == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Checked the weather first."}],
            "encrypted_content": "gAAAA-opaque",
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": "Let me check. ", "annotations": []},
                {"type": "output_text", "text": "One moment.", "annotations": []},
            ],
        },
        {
            "type": "function_call",
            "call_id": "call_w",
            "name": "weather",
            "arguments": '{"city": "Zürich"}',
        },
    ]


def test_reasoning_and_tool_calls_round_trip_across_turns(connection, server) -> None:
    first_reply = {
        "id": "resp_a",
        "model": "gpt-test",
        "status": "completed",
        "output": [
            {
                "type": "reasoning",
                "id": "rs_abc",
                "summary": [{"type": "summary_text", "text": "Need the tool."}],
                "encrypted_content": "ENC-1",
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_xyz",
                "name": "get_image",
                "arguments": '{"size": 8}',
                "status": "completed",
            },
        ],
    }
    server.enqueue(first_reply)
    history = [ChatMessage.user("Which colour?")]
    result = connection.chat(history, model="gpt-test", encrypted_reasoning=True)
    assert result.finish_reason == "tool_calls"
    call = result.message.tool_calls[0]
    assert call.id == "call_xyz"
    history += [result.message, _tool(call.id, ACCEPTED_MEDIA[0][0])]
    connection.chat(history, model="gpt-test", encrypted_reasoning=True)
    first, second = server.bodies
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["store"] is False
    assert second == {
        "model": "gpt-test",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Which colour?"}],
            },
            {
                "type": "reasoning",
                "id": "rs_abc",
                "summary": [{"type": "summary_text", "text": "Need the tool."}],
                "encrypted_content": "ENC-1",
            },
            {
                "type": "function_call",
                "call_id": "call_xyz",
                "name": "get_image",
                "arguments": '{"size": 8}',
            },
            {
                "type": "function_call_output",
                "call_id": "call_xyz",
                "output": [ACCEPTED_MEDIA[0][1]],
            },
        ],
        "include": ["reasoning.encrypted_content"],
        "store": False,
    }


# --------------------------------------------------------------------- tools and options


class _WeatherTool(BaseTool):
    async def acall(self, **arguments: Any) -> Any:
        return "sunny"


def test_tools_are_non_strict_function_tools(connection, server) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools = [
        ToolMetadata(name="weather", description="Current weather", args_schema=schema),
        _WeatherTool(metadata=ToolMetadata(name="forecast")),
    ]
    connection.chat([ChatMessage.user("hi")], tools, model="gpt-test")
    assert server.bodies[0]["tools"] == [
        {
            "type": "function",
            "name": "weather",
            "description": "Current weather",
            "parameters": schema,
            "strict": False,
        },
        {
            "type": "function",
            "name": "forecast",
            "description": "",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        },
    ]


def test_setup_options_become_request_fields(connection, server) -> None:
    setup = OpenAIResponsesChatModelSetup(
        connection="openai",
        model="gpt-6-luna",
        max_output_tokens=256,
        temperature=0.2,
        reasoning_effort="low",
        reasoning_summary="auto",
        tool_choice="weather",
        store=True,
        encrypted_reasoning=True,
        params={"top_p": 0.9, "parallel_tool_calls": False, "metadata": {"job": "j1"}},
    )
    body = _send(connection, server, [ChatMessage.user("hi")], **setup.model_kwargs)
    assert body == {
        "model": "gpt-6-luna",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
        ],
        "reasoning": {"effort": "low", "summary": "auto"},
        "tool_choice": {"type": "function", "name": "weather"},
        "include": ["reasoning.encrypted_content"],
        "top_p": 0.9,
        "parallel_tool_calls": False,
        "metadata": {"job": "j1"},
        "max_output_tokens": 256,
        "temperature": 0.2,
        "store": True,
    }


def test_setup_defaults_send_only_the_model(connection, server) -> None:
    setup = OpenAIResponsesChatModelSetup(connection="openai")
    assert setup.model_kwargs == {"model": "gpt-6-luna"}
    body = _send(connection, server, [ChatMessage.user("hi")], **setup.model_kwargs)
    assert set(body) == {"model", "input"}


@pytest.mark.parametrize("mode", ["auto", "none", "required"])
def test_tool_choice_modes_are_sent_as_strings(connection, server, mode) -> None:
    assert (
        _send(connection, server, [ChatMessage.user("hi")], tool_choice=mode)["tool_choice"] == mode
    )


def test_connection_headers_and_settings(server) -> None:
    server.requests.clear()
    connection = OpenAIResponsesChatModelConnection(
        api_key=API_KEY,
        base_url=server.base_url,
        organization="org-123",
        default_headers={"x-team": "agents"},
    )
    connection.chat([ChatMessage.user("hi")], model="gpt-test")
    headers = server.requests[0].headers
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert headers["openai-organization"] == "org-123"
    assert headers["x-team"] == "agents"
    assert connection.max_retries == 0 and connection.timeout == 60.0
    assert API_KEY not in repr(connection)
    assert "api_key" not in connection.model_dump()


def test_api_key_falls_back_to_the_environment(server, monkeypatch) -> None:
    server.requests.clear()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-987654")
    connection = OpenAIResponsesChatModelConnection(base_url=server.base_url)
    connection.chat([ChatMessage.user("hi")], model="gpt-test")
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env-987654"


def test_the_sdk_client_is_created_once_and_reused(connection, server) -> None:
    async def two_calls() -> None:
        await connection.achat([ChatMessage.user("a")], model="gpt-test")
        first = connection._sdk_client()
        await connection.achat([ChatMessage.user("b")], model="gpt-test")
        assert connection._sdk_client() is first

    asyncio.run(two_calls())
    assert [b["input"][0]["content"][0]["text"] for b in server.bodies] == ["a", "b"]


def test_sync_chat_works_on_repeated_calls(connection, server) -> None:
    for text in ("one", "two"):
        result = connection.chat([ChatMessage.user(text)], model="gpt-test")
        assert result.message.text == "ok"
    assert len(server.requests) == 2


def test_missing_model_and_reserved_params_raise_before_sending(connection, server) -> None:
    with pytest.raises(ValueError, match="model"):
        connection.chat([ChatMessage.user("hi")])
    with pytest.raises(ValueError, match=re.escape("['input']")):
        connection.chat([ChatMessage.user("hi")], model="gpt-test", input=[])
    assert server.requests == []
