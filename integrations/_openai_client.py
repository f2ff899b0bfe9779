"""`OpenAIClient`: the ``openai`` SDK's client settings, for chat and embedding connections.

`flink_agents.integrations.chat_models.openai._connection.OpenAIConnection` (Chat
Completions and Responses) and
`flink_agents.integrations.embedding_models.openai_embedding_model.OpenAIEmbeddingModelConnection`
put it beside their API base class: ``openai.AsyncOpenAI`` (one per settings and event
loop, from the shared cache of `ProviderClient`), the variables it reads, its errors,
and ``organization`` / ``project``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import openai
from pydantic import AliasChoices, Field

from flink_agents.integrations._provider_client import ProviderClient

__all__ = ["OpenAIClient"]


class OpenAIClient(ProviderClient[openai.AsyncOpenAI]):
    """Settings of an ``openai.AsyncOpenAI`` client; ``api_key`` defaults to
    ``OPENAI_API_KEY``."""

    sdk_client_class: ClassVar[Callable[..., Any]] = openai.AsyncOpenAI
    aiohttp_client_class: ClassVar[Callable[[], Any] | None] = openai.DefaultAioHttpClient
    httpx_client_class: ClassVar[Callable[[], Any] | None] = openai.DefaultAsyncHttpxClient
    sdk_error = openai.OpenAIError
    sdk_environment: ClassVar[tuple[str, ...]] = (
        "OPENAI_API_KEY",
        "OPENAI_ADMIN_KEY",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
        "OPENAI_BASE_URL",
    )
    credential_environment: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY")

    base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("base_url", "api_base_url")
    )
    """The API's base URL (upstream's name: ``api_base_url``); None for the SDK default
    (``OPENAI_BASE_URL``)."""
    organization: str | None = None
    """OpenAI organization id; ``None`` for the SDK default (``OPENAI_ORG_ID``)."""
    project: str | None = None
    """OpenAI project id; ``None`` for the SDK default (``OPENAI_PROJECT_ID``)."""

    def _client_options(self) -> dict[str, Any]:
        return {
            **super()._client_options(),
            "organization": self.organization,
            "project": self.project,
        }
