"""Every adapter's request starts with the same step (`request_options`): unset options
left out, a model required, streaming refused with one message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models import _dashscope_generation_api as dashscope
from flink_agents.integrations.chat_models import _ollama_chat_api as ollama
from flink_agents.integrations.chat_models._request_options import STREAM_REFUSED
from flink_agents.integrations.chat_models.anthropic import _messages_api as anthropic
from flink_agents.integrations.chat_models.bedrock import _converse_api as bedrock
from flink_agents.integrations.chat_models.gemini import _generate_content_api as gemini
from flink_agents.integrations.chat_models.openai import _chat_completions_api as chat
from flink_agents.integrations.chat_models.openai import _responses_api as responses

BuildRequest = Callable[..., dict[str, Any]]

STREAMING_REFUSED: list[BuildRequest] = [
    anthropic.build_request,
    bedrock.build_request,
    chat.build_request,
    dashscope.build_request,
    gemini.build_request,
    ollama.build_request,
]
ALL: list[BuildRequest] = [*STREAMING_REFUSED, responses.build_request]
HELLO = [ChatMessage.user("hi")]


@pytest.mark.parametrize("build_request", STREAMING_REFUSED)
def test_stream_is_refused_in_the_same_words(build_request: BuildRequest) -> None:
    with pytest.raises(ValueError) as refused:
        build_request(HELLO, model="m", stream=True)
    assert str(refused.value) == STREAM_REFUSED
    build_request(HELLO, model="m", stream=False)  # a false one is dropped


@pytest.mark.parametrize("build_request", ALL)
def test_a_model_is_required_and_unset_options_are_not_sent(build_request: BuildRequest) -> None:
    with pytest.raises(ValueError, match="model"):
        build_request(HELLO, temperature=0.5)
    with pytest.raises(ValueError, match="model"):
        build_request(HELLO, model="")
    assert "temperature" not in str(build_request(HELLO, model="m", temperature=None))


SYSTEM_AND_HELLO = [ChatMessage.system("be brief"), *HELLO]


@pytest.mark.parametrize(
    ("build_request", "fields", "conflicting"),
    [
        (anthropic.build_request, lambda request: request, {"system": "x"}),
        (gemini.build_request, lambda request: request["config"], {"system_instruction": "x"}),
    ],
    ids=["anthropic", "gemini"],
)
def test_an_option_not_read_passes_through_unless_it_replaces_a_field(
    build_request: BuildRequest,
    fields: Callable[[dict[str, Any]], dict[str, Any]],
    conflicting: dict[str, Any],
) -> None:
    assert fields(build_request(HELLO, model="m", seed=7))["seed"] == 7
    with pytest.raises(ValueError, match=r"conflicts with a field the adapter sets"):
        build_request(SYSTEM_AND_HELLO, model="m", **conflicting)
