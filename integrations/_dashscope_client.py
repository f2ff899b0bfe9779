"""`DashScopeClient`: the ``dashscope`` SDK's client settings (Tongyi, Alibaba Cloud), for
chat and embedding connections.

`flink_agents.integrations.chat_models.tongyi_chat_model.TongyiChatModelConnection` and
`flink_agents.integrations.embedding_models.tongyi_embedding_model.TongyiEmbeddingModelConnection`
put it beside their API base class: ``dashscope.AsyncClient`` (the SDK's 2.x client, native
protocol; one per settings and event loop, from the shared cache of `ProviderClient`), the
key (else ``DASHSCOPE_API_KEY``), upstream's ``request_timeout``, the workspace and region,
and the SDK's errors mapped to `ChatModelError`.

Install the SDK with the ``dashscope`` extra (``pip install 'pyflink-agents[dashscope]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import field_validator

from flink_agents.integrations._extras import requires_extra

with requires_extra("dashscope", "the Tongyi models need the dashscope SDK"):
    import dashscope
    from dashscope.v2 import errors as dashscope_errors

from flink_agents.api.errors import ChatModelError
from flink_agents.api.redaction import redact
from flink_agents.integrations._provider_client import (
    ProviderClient,
    UpstreamTimeoutName,
    timeout_field,
)
from flink_agents.integrations._sdk_errors import (
    call_failed,
    connection_error,
    status_error,
    timeout_error,
)
from flink_agents.integrations._secrets import register_provider_secrets

__all__ = ["PROVIDER", "DashScopeClient", "dashscope"]

PROVIDER = "tongyi"
"""Name used in `ChatModelError.provider` and error messages."""


class DashScopeClient(UpstreamTimeoutName, ProviderClient[dashscope.AsyncClient]):
    """Settings of DashScope's native API (``dashscope.AsyncClient``, native protocol).

    Settings: ``api_key`` (else ``DASHSCOPE_API_KEY``; never dumped or shown, masked in
    every error), ``request_timeout`` (seconds, default 60; also accepted as ``timeout``),
    ``base_url`` (the native API root, ``https://dashscope.aliyuncs.com/api/v1`` by
    default; else ``DASHSCOPE_BASE_URL``), ``workspace`` and ``region`` (DashScope's MaaS
    gateways), ``max_retries`` (0: the built-in actions retry), ``http_client`` (an
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

    timeout: float = timeout_field(60.0)
    """Seconds before a request times out (upstream's name: ``request_timeout``)."""
    workspace: str | None = None
    """The DashScope workspace (MaaS gateway); else ``DASHSCOPE_WORKSPACE``."""
    region: str | None = None
    """The DashScope region (``cn-beijing``, ``ap-southeast-1``...); else ``DASHSCOPE_REGION``."""

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
