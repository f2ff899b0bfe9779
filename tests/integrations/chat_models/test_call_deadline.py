"""A connection's ``timeout`` bounds the whole call, not each read: a server that sends its
answer one byte at a time, each well within the SDK's read timeout, still fails the call
once ``timeout`` has passed, as a timeout (not a connection error). Through the real SDKs
to a local fake server; the real clock bounds the call's time from above only."""

from __future__ import annotations

import time

import pytest

from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.integrations.chat_models._provider_connection import ProviderConnection
from tests.fakes.http_server import FakeProviderServer, ScriptedResponse
from tests.integrations.chat_models.test_provider_layer import ADAPTERS, IDS, Adapter

API_KEY = "sk-test-deadline-0123"
TIMEOUT_S = 0.5
DRIP_S = 0.05
"""Seconds between bytes: ten per ``timeout``, so no single read times out."""


def connection_to(adapter: Adapter, server: FakeProviderServer) -> ProviderConnection[object]:
    base_url = server.base_url + ("" if adapter.name == "anthropic" else "/v1")
    return adapter.connect(base_url=base_url, api_key=API_KEY, timeout=TIMEOUT_S)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=IDS)
async def test_a_server_dripping_its_answer_times_out_after_the_timeout(adapter: Adapter) -> None:
    body = adapter.reply({"input_tokens": 1, "output_tokens": 1})
    # The whole body would take len(body) x 50 ms, several seconds.
    with FakeProviderServer() as server:
        server.enqueue(ScriptedResponse(body=body, drip_s=DRIP_S))
        connection = connection_to(adapter, server)
        started = time.monotonic()
        with pytest.raises(ChatModelError) as raised:
            await connection.achat([ChatMessage.user("hi")], model="m")
        elapsed = time.monotonic() - started
    error = raised.value
    assert (error.kind, error.retryable) == ("timeout", True)
    assert "timed out" in error.message and f"{TIMEOUT_S:g} s" in error.message
    assert elapsed < TIMEOUT_S + 1.5
