"""What both OpenAI connections share: the ``openai`` SDK client and ``organization``.

`OpenAIChatModelConnection` (Chat Completions) and `OpenAIResponsesChatModelConnection`
(Responses) subclass `OpenAIConnection`; the settings, the shared client and the
error mapping come from `ProviderConnection`. Both APIs with the same settings share
one ``openai.AsyncOpenAI`` client per event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import openai

from flink_agents.integrations.chat_models._provider_connection import ProviderConnection

__all__ = ["OpenAIConnection"]


class OpenAIConnection(ProviderConnection[openai.AsyncOpenAI]):
    """A connection through ``openai.AsyncOpenAI``; ``api_key`` defaults to ``OPENAI_API_KEY``."""

    sdk_client_class: ClassVar[Callable[..., Any]] = openai.AsyncOpenAI
    aiohttp_client_class: ClassVar[Callable[[], Any] | None] = openai.DefaultAioHttpClient
    sdk_error = openai.OpenAIError
    sdk_environment: ClassVar[tuple[str, ...]] = (
        "OPENAI_API_KEY",
        "OPENAI_ADMIN_KEY",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
        "OPENAI_BASE_URL",
    )
    credential_environment: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY")

    organization: str | None = None
    """OpenAI organization id; ``None`` for the SDK default (``OPENAI_ORG_ID``)."""

    def _client_options(self) -> dict[str, Any]:
        return {**super()._client_options(), "organization": self.organization}
