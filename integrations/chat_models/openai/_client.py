"""What both OpenAI connections share: settings, the async SDK client, error mapping.

`OpenAIChatModelConnection` (Chat Completions) and `OpenAIResponsesChatModelConnection`
(Responses) subclass `_OpenAIConnectionBase`. It holds the connection settings,
creates one ``openai.AsyncOpenAI`` client lazily and reuses it, and turns every
exception the SDK raises into a `ChatModelError` (API key scrubbed).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar

import openai
from pydantic import Field, PrivateAttr

from flink_agents.api.chat_models.chat_model import BaseChatModelConnection
from flink_agents.api.errors import ChatModelError
from flink_agents.integrations.chat_models._sdk_errors import chat_model_error_from_sdk
from flink_agents.integrations.chat_models._secrets import (
    register_client_secrets,
    register_provider_secrets,
)

__all__ = ["_OpenAIConnectionBase"]

_T = TypeVar("_T")


class _OpenAIConnectionBase(BaseChatModelConnection):
    """Settings and the reused ``openai.AsyncOpenAI`` client of an OpenAI connection."""

    provider_name: ClassVar[str] = "openai"
    """Put in `ChatModelError.provider` and error messages; subclasses name their API."""

    api_key: str | None = Field(default=None, exclude=True, repr=False)
    """The API key; when ``None`` the SDK reads ``OPENAI_API_KEY``. Never dumped or shown."""
    base_url: str | None = None
    """The API's base URL (e.g. an OpenAI-compatible server); ``None`` for the SDK default
    (which honours ``OPENAI_BASE_URL``)."""
    timeout: float = 60.0
    """Seconds before a request times out."""
    max_retries: int = 0
    """Retries inside the SDK. 0 by default: the built-in chat action owns retries and
    reads `ChatModelError.retryable` / ``retry_after``."""
    default_headers: dict[str, str] | None = None
    """Extra HTTP headers sent with every request."""
    organization: str | None = None
    """OpenAI organization id; ``None`` for the SDK default (``OPENAI_ORG_ID``)."""

    _sdk_client: openai.AsyncOpenAI | None = PrivateAttr(default=None)
    _sdk_loop: asyncio.AbstractEventLoop | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Registers the key (and the environment's) with the redactor."""
        super().model_post_init(context)
        register_provider_secrets(self.api_key)

    def _client(self) -> openai.AsyncOpenAI:
        """The SDK client, created on first use and reused.

        An async client's connection pool belongs to the event loop it ran on, so a
        new client is made when called from a different loop (the sync ``chat``
        runs every call on one shared background loop); within one loop the client is reused.
        """
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if self._sdk_client is None or (loop is not None and loop is not self._sdk_loop):
            self._sdk_client = openai.AsyncOpenAI(
                api_key=self.api_key,
                organization=self.organization,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
                default_headers=self.default_headers,
            )
            register_client_secrets(self._sdk_client)  # the key it resolved, maybe from the env
            self._sdk_loop = loop
        return self._sdk_client

    async def _call(self, fn: Callable[[openai.AsyncOpenAI], Awaitable[_T]]) -> _T:
        """``await fn(client)``, with SDK failures raised as `ChatModelError`.

        A body that is not JSON becomes ``kind="malformed_response"``; every other
        SDK exception goes through `chat_model_error_from_sdk`.
        """
        try:
            client = self._client()
            return await fn(client)
        except ChatModelError:
            raise
        except json.JSONDecodeError:
            raise ChatModelError(
                f"{self.provider_name} sent a response body that is not JSON",
                retryable=False,
                provider=self.provider_name,
                kind="malformed_response",
            ) from None
        except openai.OpenAIError as exc:
            raise chat_model_error_from_sdk(
                exc, provider=self.provider_name, api_key=self._secret()
            ) from None

    def _secret(self) -> str | None:
        client = self._sdk_client
        return self.api_key or (client.api_key if client is not None else None)

    def __getstate__(self) -> dict[Any, Any]:
        # The SDK client and its loop are not picklable; they are rebuilt on next use.
        state = super().__getstate__()
        private = dict(state.get("__pydantic_private__") or {})
        private["_sdk_client"] = None
        private["_sdk_loop"] = None
        state["__pydantic_private__"] = private
        return state
