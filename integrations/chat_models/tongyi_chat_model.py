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

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pydantic import AliasChoices, Field, field_validator

try:
    import dashscope
    from dashscope.v2 import errors as dashscope_errors
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the Tongyi chat model needs the dashscope SDK: pip install 'pyflink-agents[dashscope]'"
    ) from exc

from flink_agents.api.chat_models.chat_model import BaseChatModelSetup, ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.api.redaction import redact
from flink_agents.integrations._sdk_errors import (
    call_failed,
    connection_error,
    malformed_response,
    status_error,
    timeout_error,
)
from flink_agents.integrations._secrets import register_provider_secrets
from flink_agents.integrations.chat_models._dashscope_generation_api import (
    PROVIDER,
    ToolMedia,
    build_request,
    parse_response,
)
from flink_agents.integrations.chat_models._provider_connection import ProviderConnection
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


class TongyiChatModelConnection(ProviderConnection[dashscope.AsyncClient]):
    """A connection to DashScope's native generation API.

    Settings: ``api_key`` (else ``DASHSCOPE_API_KEY``; never dumped or shown, masked in
    every error), ``request_timeout`` (seconds, default 60; also accepted as ``timeout``),
    ``base_url`` (the native API root, ``https://dashscope.aliyuncs.com/api/v1`` by
    default; else ``DASHSCOPE_BASE_URL``), ``workspace`` and ``region`` (DashScope's MaaS
    gateways), ``max_retries`` (0: the built-in chat action retries), ``http_client`` (an
    ``httpx.AsyncClient``, or a function that makes one: the dashscope SDK is on
    ``httpx``). The SDK takes no extra headers: ``default_headers`` is refused.
    """

    provider_name: ClassVar[str] = PROVIDER
    sdk_client_class: ClassVar[Callable[..., Any]] = dashscope.AsyncClient
    sdk_error = dashscope_errors.DashScopeError
    sdk_environment: ClassVar[tuple[str, ...]] = (
        "DASHSCOPE_API_KEY",
        "DASHSCOPE_API_KEY_FILE_PATH",
        "DASHSCOPE_BASE_URL",
        "DASHSCOPE_HTTP_BASE_URL",
        "DASHSCOPE_WORKSPACE",
        "DASHSCOPE_REGION",
        "DASHSCOPE_CONFIG",
    )

    timeout: float = Field(
        default=DEFAULT_REQUEST_TIMEOUT,
        validation_alias=AliasChoices("request_timeout", "timeout"),
    )
    """Seconds before a request times out (upstream's name: ``request_timeout``)."""
    workspace: str | None = None
    """The DashScope workspace (MaaS gateway); else ``DASHSCOPE_WORKSPACE``."""
    region: str | None = None
    """The DashScope region (``cn-beijing``, ``ap-southeast-1``...); else ``DASHSCOPE_REGION``."""

    @property
    def request_timeout(self) -> float:
        """Upstream's name of ``timeout``."""
        return self.timeout

    @field_validator("default_headers")
    @classmethod
    def _no_headers(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value:
            raise ValueError(
                "the dashscope SDK sends no extra headers; set them on an http_client "
                "(httpx.AsyncClient(headers=...)) instead"
            )
        return value

    def _client_options(self) -> dict[str, Any]:
        options = super()._client_options()
        del options["default_headers"]
        options.update(workspace=self.workspace, region=self.region, protocol="native")
        return options

    def _new_client(self, options: dict[str, Any]) -> Any:
        client = super()._new_client(options)
        key = client.config.api_key
        if not key:
            raise ChatModelError(
                "no DashScope API key: pass api_key to the connection or set DASHSCOPE_API_KEY",
                retryable=False,
                provider=PROVIDER,
                kind="authentication",
            )
        register_provider_secrets(key)
        return client

    def _error_from_sdk(self, exc: Exception) -> ChatModelError:
        register_provider_secrets(self.api_key)
        if isinstance(exc, dashscope_errors.APITimeoutError):
            return timeout_error(PROVIDER)
        if isinstance(exc, dashscope_errors.APIConnectionError):
            return connection_error(PROVIDER, exc.message)
        # A status the gateway sent, or (an HTTP 200 carrying a business code) the status
        # the SDK's error catalog gives that code.
        sent = exc.status_code if isinstance(exc, dashscope_errors.DashScopeError) else None
        status = sent if isinstance(sent, int) and sent >= 400 else None
        if status is None:
            status = getattr(type(exc), "status_code", None)
        code = getattr(exc, "code", None)
        message = getattr(exc, "message", None) or str(exc)
        text = f"{code}: {message}" if code else message
        if isinstance(status, int):
            error = status_error(PROVIDER, status, text, headers=getattr(exc, "headers", None))
            if status != sent:  # said in a 200 answer's body
                error = ChatModelError(
                    redact(f"{PROVIDER} answered with an error ({status}): {text}"),
                    status_code=status,
                    retryable=error.retryable,
                    retry_after=error.retry_after,
                    provider=PROVIDER,
                    kind=error.kind,
                )
            if isinstance(exc, dashscope_errors.ContentFilterError):
                error.kind = "content_filter"
            return error
        return call_failed(
            PROVIDER, exc, detail=text, retryable=bool(getattr(exc, "allow_retry", False))
        )

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation to DashScope and return the answer.

        ``params``: ``model`` (required), any generation parameter (``temperature``,
        ``top_p``, ``max_tokens``, ``enable_thinking``, ``tool_choice``...; all go in
        ``parameters``), ``tool_media``, ``extract_reasoning`` (default True: keep
        ``reasoning_content``). Unsupported blocks raise `UnsupportedContentBlockError`
        before anything is sent; provider failures raise `ChatModelError`.
        """
        keep_reasoning = bool(params.get("extract_reasoning", True))
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
