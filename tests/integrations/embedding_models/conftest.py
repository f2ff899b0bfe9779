"""The adapter tests' fake provider server fixtures (one server per module), as for the
chat model adapters."""

from __future__ import annotations

from tests.integrations.chat_models.conftest import server, shared_server

__all__ = ["server", "shared_server"]
