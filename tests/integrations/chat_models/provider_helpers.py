"""Helpers the adapter tests share: a server that answers only when released, a URL
nobody listens on, and a history's round trip through the JSON form agent state keeps."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from flink_agents.api._values import decode_value, encode_value
from flink_agents.api.message import ChatMessage
from tests.fakes.http_server import FakeProviderServer, RecordedRequest, ScriptedResponse

__all__ = ["held_server", "refused_url", "through_state"]


@contextmanager
def held_server(reply: Any) -> Iterator[FakeProviderServer]:
    """A server that holds every request until the block ends, then answers ``reply``:
    a client with a short timeout gives up first (no sleeping on either side)."""
    release = threading.Event()

    def hold(request: RecordedRequest) -> ScriptedResponse:
        release.wait(timeout=30)
        return ScriptedResponse(body=reply)

    with FakeProviderServer(hold) as server:
        try:
            yield server
        finally:
            release.set()


def refused_url() -> str:
    """``http://127.0.0.1:<port>`` of a port that was just free: connecting is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def through_state(history: Sequence[ChatMessage]) -> list[ChatMessage]:
    """``history`` after the JSON round trip agent state and events make (value codec)."""
    decoded = decode_value(json.loads(json.dumps(encode_value(list(history)))))
    assert all(isinstance(message, ChatMessage) for message in decoded)
    return decoded
