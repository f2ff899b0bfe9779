"""BaseChatModelConnection bridges chat and achat."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from flink_agents.api import BaseChatModelConnection, ChatMessage, ChatResult, ToolSpec


class AsyncOnly(BaseChatModelConnection):
    loops: list[int] = []

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        self.loops.append(id(asyncio.get_running_loop()))
        return ChatResult(message=ChatMessage.assistant(f"{len(messages)} {params.get('model')}"))


class SyncOnly(BaseChatModelConnection):
    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        return ChatResult(message=ChatMessage.assistant(threading.current_thread().name))


def test_sync_chat_of_an_async_connection_reuses_one_loop() -> None:
    connection = AsyncOnly()
    assert connection.chat([ChatMessage.user("a")], model="m").message.text == "1 m"
    connection.chat([ChatMessage.user("a")])
    assert len(set(connection.loops)) == 1


async def test_sync_chat_works_inside_a_running_loop() -> None:
    connection = AsyncOnly()
    result = connection.chat([ChatMessage.user("a"), ChatMessage.user("b")])
    assert result.message.text == "2 None"


async def test_achat_of_a_sync_connection_runs_in_a_thread() -> None:
    result = await SyncOnly().achat([ChatMessage.user("a")])
    assert result.message.text != threading.current_thread().name


def test_a_connection_must_implement_one_of_them() -> None:
    class Neither(BaseChatModelConnection):
        pass

    with pytest.raises(NotImplementedError, match="neither chat nor achat"):
        Neither().chat([ChatMessage.user("a")])
