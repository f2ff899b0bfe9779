"""Amazon Bedrock chat models on the Converse API, through ``boto3`` (``bedrock-runtime``).

`BedrockChatModelConnection` holds the AWS settings and the ``bedrock-runtime`` client;
`BedrockChatModelSetup` the model and its options. The wire mapping is in
`_converse_api`. boto3 is synchronous: each call runs on a thread of a bounded pool
shared by the process (`CALL_THREADS`), so the event loop never blocks. Install the SDK
with the ``bedrock`` extra (``pip install 'pyflink-agents[bedrock]'``).
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from pydantic import AliasChoices, Field, field_validator

from flink_agents.integrations._extras import requires_extra

with requires_extra("bedrock", "the Bedrock chat model needs boto3"):
    import botocore.config
    import botocore.exceptions
    from boto3.session import Session
    from botocore.parsers import ResponseParserError

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
from flink_agents.integrations.chat_models._provider_connection import ProviderConnection
from flink_agents.integrations.chat_models._setup_options import set_options
from flink_agents.integrations.chat_models.bedrock._converse_api import (
    PROVIDER,
    build_request,
    parse_response,
)

__all__ = [
    "CALL_THREADS",
    "DEFAULT_MODEL",
    "BedrockChatModelConnection",
    "BedrockChatModelSetup",
]

CALL_THREADS = 16
"""Threads the process runs ``converse`` calls on (more calls wait for a free one)."""

DEFAULT_MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"
"""The model `BedrockChatModelSetup` uses when none is given (upstream's Java example)."""

_RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelTimeoutException",
        "ModelNotReadyException",
    }
)
_AUTH_CODES = frozenset(
    {
        "AccessDeniedException",
        "UnrecognizedClientException",
        "ExpiredTokenException",
        "InvalidSignatureException",
        "IncompleteSignature",
    }
)
_CODE_KINDS = {
    "ThrottlingException": "rate_limit",
    "ModelNotReadyException": "rate_limit",
    "ServiceUnavailableException": "overloaded",  # the request limiter backs off
    "ModelTimeoutException": "timeout",
}
_TIMEOUT_ERRORS = (botocore.exceptions.ConnectTimeoutError, botocore.exceptions.ReadTimeoutError)

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _call_pool() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(CALL_THREADS, thread_name_prefix="bedrock-converse")
        return _executor


class BedrockChatModelConnection(ProviderConnection[Any]):
    """Calls Amazon Bedrock's Converse API through ``boto3``.

    Credentials and region come from the standard AWS chain (environment, shared config
    and credentials files, ``AWS_PROFILE``, container and instance roles, and Bedrock API
    keys in ``AWS_BEARER_TOKEN_BEDROCK``) unless given here. Settings: ``region``
    (``region_name``), ``base_url`` (``endpoint_url``: a VPC endpoint, a local server),
    ``profile_name``, ``aws_access_key_id`` / ``aws_secret_access_key`` /
    ``aws_session_token`` (never dumped or shown, masked in every error), ``timeout``
    (seconds, for connecting and for reading), ``max_retries`` (0: the built-in chat
    action retries), ``default_headers``. boto3 takes no HTTP client of yours
    (``http_client`` is refused) and no ``api_key``.
    """

    provider_name: ClassVar[str] = PROVIDER
    sdk_client_class: ClassVar[Callable[..., Any]] = Session
    sdk_error = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError)
    sdk_environment: ClassVar[tuple[str, ...]] = (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    )
    http_client_refusal: ClassVar[str | None] = (
        "boto3 makes its own HTTP connections and takes no http_client; it reads "
        "proxy and TLS settings from the environment (HTTPS_PROXY, AWS_CA_BUNDLE)"
    )
    secret_fields: ClassVar[tuple[str, ...]] = (
        "api_key",
        "aws_secret_access_key",
        "aws_session_token",
    )

    region: str | None = Field(default=None, validation_alias=AliasChoices("region", "region_name"))
    """The AWS region (``us-east-1``); None for the standard chain (``AWS_REGION``...)."""
    profile_name: str | None = None
    """A profile of the shared AWS config files; None for the default (``AWS_PROFILE``)."""
    aws_access_key_id: str | None = Field(default=None, exclude=True, repr=False)
    """An access key id; None for the standard chain."""
    aws_secret_access_key: str | None = Field(default=None, exclude=True, repr=False)
    """The secret of ``aws_access_key_id``. Never dumped or shown."""
    aws_session_token: str | None = Field(default=None, exclude=True, repr=False)
    """A session token of temporary credentials. Never dumped or shown."""

    @field_validator("api_key")
    @classmethod
    def _no_api_key(cls, value: Any) -> Any:
        if value is not None:
            raise ValueError(
                "Bedrock signs requests with AWS credentials: give aws_access_key_id and "
                "aws_secret_access_key (or a profile, or the standard chain); a Bedrock API "
                "key goes in AWS_BEARER_TOKEN_BEDROCK"
            )
        return value

    def _client_options(self) -> dict[str, Any]:
        return {
            **super()._client_options(),
            "region": self.region,
            "profile_name": self.profile_name,
            "aws_access_key_id": self.aws_access_key_id,
            "aws_secret_access_key": self.aws_secret_access_key,
            "aws_session_token": self.aws_session_token,
        }

    def _new_client(self, options: dict[str, Any]) -> Any:
        session = Session(
            aws_access_key_id=options["aws_access_key_id"],
            aws_secret_access_key=options["aws_secret_access_key"],
            aws_session_token=options["aws_session_token"],
            profile_name=options["profile_name"],
        )
        config = botocore.config.Config(
            connect_timeout=options["timeout"],
            read_timeout=options["timeout"],
            retries={"total_max_attempts": options["max_retries"] + 1, "mode": "standard"},
            max_pool_connections=CALL_THREADS,
        )
        # boto3 reads AWS_DEFAULT_REGION and the config files; the other AWS SDKs (and
        # Lambda, ECS) use AWS_REGION, so it counts here too.
        region = options["region"] or session.region_name or os.environ.get("AWS_REGION")
        client = session.client(
            "bedrock-runtime",
            region_name=region,
            endpoint_url=options["base_url"],
            config=config,
        )
        headers = dict(options["default_headers"] or {})
        if headers:
            client.meta.events.register(
                "before-sign.bedrock-runtime.*", functools.partial(_add_headers, headers)
            )
        credentials = session.get_credentials()  # what the chain found, to mask it
        if credentials is not None:
            frozen = credentials.get_frozen_credentials()
            register_provider_secrets(frozen.secret_key, frozen.token)
        register_provider_secrets(self.aws_secret_access_key, self.aws_session_token)
        return client

    def _error_from_sdk(self, exc: Exception) -> ChatModelError:
        register_provider_secrets(self.aws_secret_access_key, self.aws_session_token)
        if isinstance(exc, botocore.exceptions.ClientError):
            return _client_error(exc)
        if isinstance(exc, _TIMEOUT_ERRORS):
            return timeout_error(PROVIDER)
        if isinstance(exc, botocore.exceptions.EndpointConnectionError):
            return connection_error(PROVIDER, exc)
        if isinstance(exc, botocore.exceptions.NoCredentialsError):
            return _not_retried(
                "authentication",
                f"{PROVIDER}: no AWS credentials: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or a role) where the agent runs (on "
                "Flink: on every TaskManager), or pass them to BedrockChatModelConnection",
            )
        if isinstance(exc, botocore.exceptions.NoRegionError):
            return _not_retried(
                "configuration",
                f"{PROVIDER}: no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION) where the "
                "agent runs, or pass region=... to BedrockChatModelConnection",
            )
        if isinstance(exc, botocore.exceptions.ParamValidationError):
            detail = redact(f"{PROVIDER} request refused by boto3 before sending: {exc}")
            return _not_retried("bad_request", detail)
        return call_failed(PROVIDER, exc)

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """One ``converse`` call, on a thread of the shared pool (`CALL_THREADS`).
        Unsupported blocks and bad options raise before anything is sent; provider
        failures raise `ChatModelError`."""
        request = build_request(messages, tools, **params)
        loop = asyncio.get_running_loop()

        async def converse(client: Any) -> Any:
            call = functools.partial(_converse, client, request)
            return await loop.run_in_executor(_call_pool(), call)

        response = await self._send(converse)
        return parse_response(response, model=request["modelId"])


def _not_retried(kind: str, message: str) -> ChatModelError:
    """A failure trying again cannot mend (a setting, a refused request)."""
    return ChatModelError(message, retryable=False, provider=PROVIDER, kind=kind)


def _converse(client: Any, request: dict[str, Any]) -> Any:
    """``client.converse(**request)``; a body boto3 fails to read (a count that is no
    integer, a list where an object belongs) is a malformed response."""
    try:
        return client.converse(**request)
    except botocore.exceptions.BotoCoreError:
        raise
    except (ResponseParserError, ValueError, TypeError, AttributeError, KeyError) as exc:
        raise malformed_response(
            PROVIDER, f"boto3 could not read the response ({type(exc).__name__})"
        ) from None


def _add_headers(headers: dict[str, str], request: Any, **_: Any) -> None:
    for name, value in headers.items():
        request.headers[name] = value


def _client_error(exc: botocore.exceptions.ClientError) -> ChatModelError:
    error = exc.response.get("Error") or {}
    metadata = exc.response.get("ResponseMetadata") or {}
    code = str(error.get("Code") or "")
    message = str(error.get("Message") or exc)
    status = metadata.get("HTTPStatusCode")
    headers = metadata.get("HTTPHeaders")
    if not isinstance(status, int):
        status = 400
    result = status_error(
        PROVIDER, status, f"{code}: {message}" if code else message, headers=headers
    )
    if code in _RETRYABLE_CODES:
        result.retryable = True
    if code in _AUTH_CODES:
        result.kind = "authentication"
    result.kind = _CODE_KINDS.get(code, result.kind)
    return result


_TYPED_OPTIONS = (
    "model",
    "temperature",
    "max_tokens",
    "top_p",
    "stop_sequences",
    "thinking_budget_tokens",
    "tool_choice",
)


class BedrockChatModelSetup(BaseChatModelSetup):
    """Model and options for a `BedrockChatModelConnection` (upstream's Java names:
    ``model``, ``temperature``, ``max_tokens``).

    Typed options left at None are not sent. ``params`` (``additional_kwargs``) adds a
    Converse request field by its name (``guardrailConfig``, ``performanceConfig``...) or,
    for any other name, a field of the model's own request (``additionalModelRequestFields``:
    ``top_k``...); it overrides the typed options.
    """

    model: str | None = DEFAULT_MODEL
    """The model id or inference profile id (``us.anthropic.claude-...``)."""
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    """Sampling temperature; None leaves the model's default (upstream's Java setup sends
    0.1, which Anthropic models refuse with thinking on)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Most tokens to generate; None leaves the model's default."""
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    """Nucleus sampling."""
    stop_sequences: list[str] | None = None
    """Texts that stop generation."""
    thinking_budget_tokens: int | None = Field(default=None, gt=0)
    """Extended thinking with this budget (Anthropic models on Bedrock)."""
    tool_choice: str | dict[str, Any] | None = None
    """``"auto"``, ``"any"`` / ``"required"``, a tool name, or the API's dict."""
    json_tool_results: bool = False
    """Send a tool result whose text is a JSON object as a ``json`` block."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        kwargs = set_options(self, _TYPED_OPTIONS)
        if self.json_tool_results:
            kwargs["json_tool_results"] = True
        kwargs.update(self.params)
        return kwargs
