"""Upstream's Java chat model wrappers: refused here (no Java runtime, `JavaResourceWrapper`);
use the Python connection and setup of the same provider."""

from __future__ import annotations

from flink_agents.api._java_wrappers import JavaResourceWrapper
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup

__all__ = ["JavaChatModelConnection", "JavaChatModelSetup"]


class JavaChatModelConnection(JavaResourceWrapper, BaseChatModelConnection):  # pyright: ignore[reportUnsafeMultipleInheritance]
    """Upstream's connection to a Java chat model: refused here."""


class JavaChatModelSetup(JavaResourceWrapper, BaseChatModelSetup):  # pyright: ignore[reportUnsafeMultipleInheritance]
    """Upstream's setup of a Java chat model: refused here."""
