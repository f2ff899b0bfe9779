"""Tongyi (Qwen on Alibaba Cloud DashScope) through the ``dashscope`` SDK's native API.

`TongyiChatModelConnection` and `TongyiChatModelSetup` keep upstream's module path, class
names and fields (connection: ``api_key``, ``request_timeout``; setup: ``model``,
``temperature``, ``extract_reasoning``, ``additional_kwargs``), so upstream descriptors
work unchanged. The wire mapping is in `_dashscope_generation_api`; this module sends it
through ``dashscope.AsyncClient`` (the SDK's 2.x client, native protocol) and parses its
typed answer.

Install the SDK with the ``dashscope`` extra (``pip install 'pyflink-agents[dashscope]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from flink_agents.api.chat_models.chat_model import (
    BaseChatModelConnection,
    BaseChatModelSetup,
    ToolSpec,
)
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.message import ChatMessage
from flink_agents.integrations._dashscope_client import DashScopeClient
from flink_agents.integrations._provider_client import timeout_field
from flink_agents.integrations._sdk_errors import malformed_response
from flink_agents.integrations.chat_models._dashscope_generation_api import (
    PROVIDER,
    ToolMedia,
    build_request,
    parse_response,
)
from flink_agents.integrations.chat_models._setup_options import set_options

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_REQUEST_TIMEOUT",
    "TongyiChatModelConnection",
    "TongyiChatModelSetup",
]

DEFAULT_MODEL = "qwen-plus"
"""The model `TongyiChatModelSetup` uses when none is given (upstream's)."""
DEFAULT_REQUEST_TIMEOUT = 60.0
"""Seconds before a request times out (upstream's default)."""


class TongyiChatModelConnection(BaseChatModelConnection, DashScopeClient):
    """A chat connection to DashScope's native generation API.

    Settings (`DashScopeClient`): ``api_key`` (else ``DASHSCOPE_API_KEY``; never dumped or
    shown, masked in every error), ``request_timeout`` (seconds, default 60; also accepted
    as ``timeout``), ``base_url`` (the native API root,
    ``https://dashscope.aliyuncs.com/api/v1`` by default; else ``DASHSCOPE_BASE_URL``),
    ``workspace`` and ``region`` (DashScope's MaaS gateways), ``max_retries`` (0: the
    built-in chat action retries), ``http_client`` (an ``httpx.AsyncClient``, or a function
    that makes one: the dashscope SDK is on ``httpx``). The SDK takes no extra headers:
    ``default_headers`` is refused.
    """

    timeout: float = timeout_field(DEFAULT_REQUEST_TIMEOUT)
    """Seconds before a request times out (upstream's name: ``request_timeout``)."""

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation to DashScope and return the answer.

        ``params``: ``model`` (required), any generation parameter (``temperature``,
        ``top_p``, ``max_tokens``, ``enable_thinking``, ``tool_choice``...; all go in
        ``parameters``), ``tool_media``, ``extract_reasoning`` (keep ``reasoning_content``
        as a reasoning block; default False, as the setup's and upstream's). Unsupported
        blocks raise `UnsupportedContentBlockError` before anything is sent; provider
        failures raise `ChatModelError`.
        """
        keep_reasoning = bool(params.get("extract_reasoning", False))
        body = build_request(messages, tools, **params)

        async def create(client: Any) -> Any:
            config = client.config
            try:
                return await client.chat.completions.create(
                    model=body["model"],
                    messages=body["input"]["messages"],
                    parameters=body["parameters"],
                    api_key=config.api_key,  # per call: an injected http_client has no auth
                    workspace=config.workspace,
                )
            except (AttributeError, TypeError, KeyError) as exc:  # the SDK reading the body
                raise malformed_response(
                    PROVIDER, f"the SDK could not read the response ({type(exc).__name__})"
                ) from None

        completion = await self._send(create)
        return parse_response(
            completion, keep_reasoning=keep_reasoning, requested_model=body["model"]
        )


class TongyiChatModelSetup(BaseChatModelSetup):
    """Model and options for a `TongyiChatModelConnection` (upstream's fields).

    ``temperature`` and the entries of ``additional_kwargs`` (``params``: ``top_p``,
    ``max_tokens``, ``enable_thinking``, ``enable_search``...) go in the request's
    ``parameters``.
    """

    model: str | None = DEFAULT_MODEL
    """The DashScope model name (``qwen-plus``, ``qwen-max``, ``qwen3-vl-plus``...)."""
    temperature: float | None = Field(default=0.7, ge=0.0, le=2.0)
    """Sampling temperature (upstream's default 0.7)."""
    extract_reasoning: bool = False
    """Keep the model's reasoning (``reasoning_content``) as a reasoning block (upstream's
    default: not kept)."""
    tool_media: ToolMedia = "user_message"
    """Media in tool results: move them into a user message after the tool messages
    (``"user_message"``) or raise before sending (``"error"``)."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        kwargs = set_options(self, ("model", "temperature"))
        kwargs["extract_reasoning"] = self.extract_reasoning
        kwargs["tool_media"] = self.tool_media
        kwargs.update(self.params)
        return kwargs
