"""`ProviderConnection`: a chat model connection on a provider's official SDK.

The settings, the shared SDK client, the call deadline and the error mapping are the
integrations' `ProviderClient` (`flink_agents.integrations._provider_client`), shared with
the embedding model adapters; this is that mixin on `BaseChatModelConnection`. An adapter
subclasses it, names its SDK client class, and implements ``achat``.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from flink_agents.api.chat_models.chat_model import BaseChatModelConnection
from flink_agents.integrations._provider_client import HttpClient, HttpTransport, ProviderClient

__all__ = ["HttpClient", "HttpTransport", "ProviderConnection"]

ClientT = TypeVar("ClientT")


class ProviderConnection(BaseChatModelConnection, ProviderClient[ClientT], Generic[ClientT]):
    """A chat model connection with the settings, shared async SDK client and error
    mapping of `ProviderClient`.

    ``max_retries`` defaults to 0: the built-in chat action owns retries (it reads
    `ChatModelError.retryable` and ``retry_after``), so the SDK does not retry too.
    """
