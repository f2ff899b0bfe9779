"""The benches' fake model provider: an HTTP/1.1 server on 127.0.0.1 that answers what a
provider SDK sends (OpenAI's Chat Completions and Embeddings, Anthropic's Messages) with
what a handler gives, over kept-alive connections.

- `serve_connection` serves one client connection: it reads each request (`read_request`)
  and writes the handler's `Reply`. The adapter bench runs it in a process of its own.
- `FakeProvider` runs a server of it on an event loop of its own thread (a context manager)
  and counts the requests: the rate-limit and RAG benches use it.

A handler is ``async def handler(path, body) -> Reply``: it may sleep (a provider's
latency) without holding other connections back.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "FakeProvider",
    "Handler",
    "Reply",
    "json_reply",
    "read_json_body",
    "read_request",
    "serve_connection",
]

_P = TypeVar("_P", bound="FakeProvider")
_REASONS = {200: "OK", 400: "Bad Request", 429: "Too Many Requests", 500: "Server Error"}


@dataclass(frozen=True)
class Reply:
    """One HTTP answer."""

    status: int
    """Its HTTP status."""
    body: bytes
    """Its JSON body."""
    headers: dict[str, str] = field(default_factory=dict)
    """Headers beside ``content-type`` and ``content-length``."""

    def encode(self) -> bytes:
        """The answer on the wire."""
        reason = _REASONS.get(self.status, "Status")
        extra = "".join(f"{name}: {value}\r\n" for name, value in self.headers.items())
        return (
            f"HTTP/1.1 {self.status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(self.body)}\r\n{extra}\r\n".encode()
            + self.body
        )


def json_reply(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """A `Reply` of ``payload`` as JSON."""
    return Reply(status, json.dumps(payload).encode(), dict(headers or {}))


Handler = Callable[[str, dict[str, Any]], Awaitable[Reply]]
"""``(path, JSON body) -> Reply``."""


async def read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, Any]]:
    """The path and the JSON body (``{}`` without one) of the next HTTP/1.1 request on
    ``reader``."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    path = lines[0].split(b" ")[1].decode()
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return path, json.loads(await reader.readexactly(length)) if length else {}


async def read_json_body(reader: asyncio.StreamReader) -> dict[str, Any]:
    """The JSON body of the next HTTP/1.1 request on ``reader`` (``{}`` without one)."""
    return (await read_request(reader))[1]


async def serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: Handler
) -> None:
    """Answer the requests of one client connection with ``handler`` until it closes (or
    the task is cancelled)."""
    try:
        while True:
            path, body = await read_request(reader)
            writer.write((await handler(path, body)).encode())
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass  # the client went away, or the server stops
    finally:
        writer.close()


class FakeProvider:
    """A server answering with ``handler`` on an event loop of its own thread, while in a
    ``with`` block; ``requests`` counts the requests answered."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.requests = 0
        """Requests answered so far."""
        self.port = 0
        """The port it listens on (once started)."""

    def __enter__(self: _P) -> _P:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    @property
    def base_url(self) -> str:
        """The SDKs' ``base_url`` for it."""
        return f"http://127.0.0.1:{self.port}/v1"

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in self._connections:  # the clients' idle keep-alive connections
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _counted(self, path: str, body: dict[str, Any]) -> Reply:
        self.requests += 1
        return await self._handler(path, body)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await serve_connection(reader, writer, self._counted)
        finally:
            self._connections.discard(task)
