"""OpenAI Chat Completions: the connection and the setup.

Also for OpenAI-compatible servers (vLLM, Ollama, llama.cpp...): point ``base_url``
at the server. The wire mapping lives in `_chat_completions_api`; this module only
sends the request through the official async SDK (its client's ``post``, see
`_connection`) and parses its typed answer.
"""

from __future__ import annotations

from typing import Any, ClassVar

from openai.types.chat import ChatCompletion

from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.integrations.chat_models._setup_options import set_options
from flink_agents.integrations.chat_models.openai._chat_completions_api import (
    PROVIDER,
    MaxTokensParam,
    ToolMedia,
    build_request,
    parse_response,
)
from flink_agents.integrations.chat_models.openai._connection import OpenAIApi, OpenAIConnection

__all__ = ["OpenAIChatModelConnection", "OpenAIChatModelSetup"]


class OpenAIChatModelConnection(OpenAIConnection):
    """A connection to the Chat Completions API (``POST {base_url}/chat/completions``).

    Settings (``api_key``, ``base_url``, ``timeout``, ``max_retries`` = 0 by default,
    ``default_headers``, ``organization``, ``http_client``) come from the shared base.
    For a compatible server that needs no key, pass any non-empty ``api_key`` (the SDK
    requires one).

    A call's ``params``: ``model`` (required), ``max_tokens`` with ``max_tokens_param``,
    ``temperature``, ``tool_choice``, ``response_format``, ``tool_media`` and any other
    request field.
    """

    provider_name: ClassVar[str] = PROVIDER
    api: ClassVar[OpenAIApi] = OpenAIApi(
        "/chat/completions", ChatCompletion, build_request, parse_response
    )


class OpenAIChatModelSetup(BaseChatModelSetup):
    """Model and options for a Chat Completions connection.

    The typed options below are sent when set; entries of ``params`` are sent as
    well and win over a typed option of the same name.
    """

    model: str | None = "gpt-4.1-mini"
    """The model name (for a compatible server, the name it serves)."""
    max_tokens: int | None = None
    """Most tokens to generate; sent in the field named by ``max_tokens_param``."""
    max_tokens_param: MaxTokensParam = "max_tokens"
    """``"max_tokens"`` (what compatible servers read) or ``"max_completion_tokens"``
    (what OpenAI's reasoning models require)."""
    temperature: float | None = None
    """Sampling temperature."""
    tool_choice: str | dict[str, Any] | None = None
    """``"auto"``, ``"none"``, ``"required"``, a tool name, or the API's object form."""
    response_format: dict[str, Any] | None = None
    """Passed through, e.g. ``{"type": "json_schema", "json_schema": {...}}``."""
    tool_media: ToolMedia = "user_message"
    """Media in tool results: move them into a user message after the tool messages
    (``"user_message"``) or raise before sending (``"error"``)."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        kwargs = set_options(
            self, ("model", "max_tokens", "temperature", "tool_choice", "response_format")
        )
        if self.max_tokens is not None:
            kwargs["max_tokens_param"] = self.max_tokens_param
        kwargs["tool_media"] = self.tool_media
        kwargs.update(self.params)
        return kwargs
