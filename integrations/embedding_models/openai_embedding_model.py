"""OpenAI embeddings (``POST /embeddings``) through the official ``openai`` SDK, for OpenAI
and every server with an OpenAI-compatible embeddings API (vLLM, LM Studio, llama.cpp,
DashScope's compatible mode...: set ``base_url``).

`OpenAIEmbeddingModelConnection` and `OpenAIEmbeddingModelSetup` keep upstream's module
path, class names and fields (connection: ``api_key``, ``base_url``,
``request_timeout``, ``max_retries``, ``organization``, ``project``; setup: ``model``,
``encoding_format``, ``dimensions``, ``user``, ``additional_kwargs``). The connection is
the integrations' `OpenAIClient` (shared with the chat connections: cached client, call
deadline, errors mapped and the key masked) on the embedding connections'
`ProviderEmbeddingConnection`.

`embeddings_request` and `embedding_result_of` are the wire mapping (pure functions):
the JSON body sent, and the SDK's typed answer read back.

As upstream's, the connection's ``client`` is the SDK's sync ``openai.OpenAI`` for its
settings, made on first use and held in the same private attribute; a client put there
instead (a test's stand-in, a client of your own) is the one the calls go through (on a
worker thread, with the same deadline and errors). Otherwise the calls go through the
shared async client, which takes no thread.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import openai
from pydantic import Field, PrivateAttr

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelSetup,
    EmbeddingResult,
)
from flink_agents.integrations._openai_client import OpenAIClient
from flink_agents.integrations._provider_client import UpstreamTimeoutName, timeout_field
from flink_agents.integrations._sdk_errors import malformed_response
from flink_agents.integrations._secrets import register_client_secrets
from flink_agents.integrations.embedding_models._embedding_result import (
    embedding_result,
    field_of,
)
from flink_agents.integrations.embedding_models._provider_embedding_connection import (
    EmbeddingCall,
    ProviderEmbeddingConnection,
    request_start,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_REQUEST_TIMEOUT",
    "MAX_TEXTS_PER_REQUEST",
    "PROVIDER",
    "OpenAIEmbeddingModelConnection",
    "OpenAIEmbeddingModelSetup",
    "embedding_result_of",
    "embeddings_request",
]

PROVIDER = "openai"
"""Name used in `ChatModelError.provider` and error messages."""
DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""OpenAI's API (upstream's default ``base_url``)."""
DEFAULT_REQUEST_TIMEOUT = 30.0
"""Seconds one call may take (upstream's default)."""
MAX_TEXTS_PER_REQUEST = 2048
"""Inputs OpenAI takes in one embeddings request."""

_SDK_PARAMS = ("dimensions", "encoding_format", "user")
"""Request fields the SDK's ``embeddings.create`` names; the others go in ``extra_body``."""


def embeddings_request(text: str | Sequence[str], params: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of an embeddings request: ``model`` (required), ``input`` (the text,
    or the list of texts), then every other parameter that is not None
    (``encoding_format``, ``dimensions``, ``user``, a server's own)."""
    body, options = request_start(text, params)
    body.update((key, value) for key, value in options.items() if value is not None)
    return body


def embedding_result_of(response: Any, *, single: bool) -> EmbeddingResult[Any]:
    """An embeddings answer as an `EmbeddingResult`: its JSON body (a dict), or the SDK's
    typed ``CreateEmbeddingResponse`` (a client put in place of `client` gives one); the
    vectors in the order of their ``index`` (floats, or base64 decoded), the usage when
    reported."""
    data = field_of(response, "data")
    if not isinstance(data, list):
        raise malformed_response(PROVIDER, "the answer has no data")
    ordered = sorted(data, key=lambda item: field_of(item, "index") or 0)
    usage = field_of(response, "usage")
    return embedding_result(
        PROVIDER,
        (field_of(item, "embedding") for item in ordered),
        single=single,
        prompt_tokens=field_of(usage, "prompt_tokens"),
        total_tokens=field_of(usage, "total_tokens"),
    )


class OpenAIEmbeddingModelConnection(
    UpstreamTimeoutName, ProviderEmbeddingConnection, OpenAIClient
):
    """A connection to OpenAI's embeddings API, or an OpenAI-compatible server's.

    Settings (upstream's names): ``api_key`` (else ``OPENAI_API_KEY``; never dumped or
    shown, masked in every error), ``base_url`` (default OpenAI's; a compatible server's
    ``.../v1``), ``request_timeout`` (seconds for the whole call, default 30; also accepted
    as ``timeout``), ``max_retries`` (the SDK's retries; 0 by default, unlike upstream's 3:
    the built-in actions retry what can be retried, `ChatModelError.retryable`),
    ``organization``, ``project``, ``default_headers``, ``http_client`` /
    ``http_transport`` (as the chat connections), and the rate limits. A list of texts
    goes in requests of at most 2048 (OpenAI's limit; a setup's ``batch_size`` lowers it).
    """

    provider_name: ClassVar[str] = PROVIDER
    default_batch_size: ClassVar[int | None] = MAX_TEXTS_PER_REQUEST

    base_url: str | None = DEFAULT_BASE_URL
    """The API's base URL (``.../v1``); None for the SDK default (``OPENAI_BASE_URL``)."""
    timeout: float = timeout_field(DEFAULT_REQUEST_TIMEOUT)
    """Seconds one call may take in all (upstream's name: ``request_timeout``)."""

    __client: Any = PrivateAttr(default=None)
    """Upstream's attribute holding the sync SDK client (`client`)."""
    _own_client: Any = PrivateAttr(default=None)
    """The client `client` made (not one put in its place)."""

    @property
    def client(self) -> openai.OpenAI:
        """The official SDK's sync client for these settings, made on first use
        (upstream's property; the calls here send through the shared async client
        unless another client was put in its place, module doc)."""
        held = self.__client
        if held is None:
            self._check_credentials()
            held = openai.OpenAI(**self._client_options())
            register_client_secrets(held)
            self.__client = self._own_client = held
        return held

    def close(self) -> None:
        """Close the sync client `client` made, if any (upstream's ``close``)."""
        held, self.__client = self.__client, None
        own, self._own_client = self._own_client, None
        if held is not None and held is own:
            held.close()

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private:  # a client holds open connections: a worker makes its own
            state["__pydantic_private__"] = {
                **private,
                "_OpenAIEmbeddingModelConnection__client": None,
                "_own_client": None,
            }
        return state

    def _embedding_call(self, text: str | Sequence[str], params: dict[str, Any]) -> EmbeddingCall:
        """``embeddings.create`` of the shared async client, or of a client put in place
        of `client` (module doc). ``params``: ``model`` (required), ``encoding_format``
        (``"float"`` or ``"base64"``: both come back as floats), ``dimensions``, ``user``,
        and any field a compatible server takes."""
        body = embeddings_request(text, params)
        known = {key: body[key] for key in ("model", "input", *_SDK_PARAMS) if key in body}
        extra = {key: value for key, value in body.items() if key not in known}
        held = self.__client
        if held is not None and held is not self._own_client:
            return lambda _: _call_on_thread(held, known, extra)

        async def create(client: Any) -> Any:
            # The JSON body, not the SDK's typed answer: the SDK builds that a number at a
            # time (about half of a call's CPU for a few 64-dimension vectors).
            raw = await client.embeddings.with_raw_response.create(
                **known, extra_body=extra or None
            )
            return raw.http_response.json()

        return create

    def _embedding_result(self, response: Any, *, single: bool) -> EmbeddingResult[Any]:
        return embedding_result_of(response, single=single)


async def _call_on_thread(client: Any, known: dict[str, Any], extra: dict[str, Any]) -> Any:
    """``client.embeddings.create(...)`` of a client given in place of `client`: on a worker
    thread (a sync client blocks), awaited if it is an async one."""
    response = await asyncio.to_thread(
        lambda: client.embeddings.create(**known, extra_body=extra or None)
    )
    if inspect.isawaitable(response):
        response = await response
    return response


class OpenAIEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """Model and options for an `OpenAIEmbeddingModelConnection` (upstream's fields)."""

    encoding_format: str = "float"
    """How the vectors travel: ``"float"`` (upstream's default) or ``"base64"`` (smaller;
    decoded here)."""
    dimensions: int | None = Field(default=None, ge=1)
    """The vectors' dimension (``text-embedding-3`` models and later shorten them); every
    answer is checked against it."""
    user: str | None = None
    """An identifier of your end user, for the provider's abuse monitoring."""
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Other request fields (a compatible server's own), sent as they are."""

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The model, ``encoding_format``, ``dimensions`` and ``user`` when set, then
        ``additional_kwargs``."""
        kwargs: dict[str, Any] = {"model": self.model, "encoding_format": self.encoding_format}
        if self.dimensions is not None:
            kwargs["dimensions"] = self.dimensions
        if self.user is not None:
            kwargs["user"] = self.user
        return {**kwargs, **self.additional_kwargs}

    @property
    def expected_dimensions(self) -> int | None:
        """``dimensions``, when set."""
        return self.dimensions
