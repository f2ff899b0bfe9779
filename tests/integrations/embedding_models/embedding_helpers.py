"""What the embedding adapter tests share: a setup bound to its connection, and one call
through it that closes the SDK client inside the test's event loop."""

from __future__ import annotations

from typing import Any

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
)
from flink_agents.integrations._sdk_clients import sdk_clients

__all__ = ["bound", "embed_once"]


def bound(setup_class: type[BaseEmbeddingModelSetup], connection: Any, **options: Any) -> Any:
    """``setup_class(connection="conn", **options)`` that finds ``connection`` by name."""
    assert isinstance(connection, BaseEmbeddingModelConnection)
    return setup_class(connection="conn", get_resource=lambda name, kind: connection, **options)


async def embed_once(setup: BaseEmbeddingModelSetup, text: Any, **kwargs: Any) -> Any:
    """``await setup.aembed_with_usage(text)``, then the SDK client is closed (inside the
    test's event loop) and forgotten."""
    connection: Any = setup.resolve_connection()
    try:
        return await setup.aembed_with_usage(text, **kwargs)
    finally:
        client: Any = connection._sdk_client()
        close = getattr(client, "aclose", None) or client.close
        await close()
        sdk_clients.forget(client)
