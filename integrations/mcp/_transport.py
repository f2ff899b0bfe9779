"""How a session reaches its server (streamable HTTP or stdio), and how errors name it."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import urlsplit

import httpx
import httpx2
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from flink_agents.api.redaction import redact

__all__ = [
    "HttpTransport",
    "StdioTransport",
    "Transport",
    "TransportNotes",
    "endpoint_for_display",
    "http_auth",
    "server_errlog",
]

Streams = tuple[Any, Any]
"""The (read, write) stream pair a `ClientSession` runs over."""


@dataclass
class TransportNotes:
    """What a session's transport saw that the SDK's errors do not say."""

    statuses: list[str] = field(default_factory=list)
    """HTTP error statuses the server answered with (``HTTP 401 Unauthorized``)."""
    session_lost: bool = False
    """The server answered a request of the session with 404: it no longer knows the
    session (it restarted, or expired it), and the client must open a new one."""


def endpoint_for_display(endpoint: str) -> str:
    """``endpoint`` as errors and logs show it: scheme, host, port and path; no user,
    password, query or fragment (where credentials travel)."""
    try:
        parts = urlsplit(endpoint)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<an endpoint that is no URL>"
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return f"{parts.scheme}://{netloc}{parts.path}"


class _HttpxAuth(httpx2.Auth):
    """An ``httpx.Auth`` working inside the ``httpx2`` client the MCP SDK sends through.

    Its auth flow sees ``httpx2`` requests and responses, which have the same shape
    (headers, url, status code, ``aread``).
    """

    def __init__(self, auth: httpx.Auth) -> None:
        self.auth = auth
        self.requires_request_body = auth.requires_request_body
        self.requires_response_body = auth.requires_response_body

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self.auth.async_auth_flow(request)  # type: ignore[arg-type]
        outgoing: Any = await flow.__anext__()
        while True:
            response = yield outgoing
            try:
                outgoing = await flow.asend(response)  # type: ignore[arg-type]
            except StopAsyncIteration:
                return


def http_auth(auth: Any) -> httpx2.Auth | None:
    """What the SDK's HTTP client takes for ``auth``: an ``httpx2.Auth`` as it is, an
    ``httpx.Auth`` adapted. `TypeError` for anything else."""
    if auth is None or isinstance(auth, httpx2.Auth):
        return auth
    if isinstance(auth, httpx.Auth):
        return _HttpxAuth(auth)
    raise TypeError(f"auth must be an httpx.Auth or an httpx2.Auth, not {type(auth).__name__}")


@dataclass(frozen=True)
class HttpTransport:
    """Streamable HTTP to ``endpoint``."""

    endpoint: str
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: Any = None
    """An ``httpx.Auth`` or ``httpx2.Auth``, or None."""
    timeout: float = 30.0
    """Seconds to connect, write and wait for a pool connection."""
    sse_read_timeout: float = 300.0
    """Seconds a server-sent event stream may stay silent."""

    @property
    def display(self) -> str:
        return endpoint_for_display(self.endpoint)

    @asynccontextmanager
    async def streams(self, notes: TransportNotes) -> AsyncIterator[Streams]:
        """The session's streams; HTTP errors go to ``notes``."""

        async def note_status(response: httpx2.Response) -> None:
            status = response.status_code
            if status >= 400:
                notes.statuses.append(f"HTTP {status} {response.reason_phrase}".strip())
            if status == 404 and response.request.headers.get("mcp-session-id"):
                notes.session_lost = True

        client = httpx2.AsyncClient(
            headers=dict(self.headers),
            timeout=httpx2.Timeout(self.timeout, read=max(self.timeout, self.sse_read_timeout)),
            auth=http_auth(self.auth),
            event_hooks={"response": [note_status]},
        )
        async with client, streamable_http_client(self.endpoint, http_client=client) as streams:
            yield streams[0], streams[1]


_fallback_errlog: TextIO | None = None


def server_errlog() -> TextIO:
    """Where a stdio server's stderr goes: this process's stderr. A Flink worker in thread
    mode replaces ``sys.stderr`` with an object that has no file descriptor, which a child
    process cannot write to: then file descriptor 2 itself (the TaskManager's log), or
    nowhere when there is none."""
    global _fallback_errlog
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None and stream.fileno() >= 0:
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    if _fallback_errlog is None:
        try:
            _fallback_errlog = os.fdopen(os.dup(2), "w", buffering=1)
        except OSError:
            _fallback_errlog = open(os.devnull, "w")  # noqa: SIM115 (kept for the process)
    return _fallback_errlog


@dataclass(frozen=True)
class StdioTransport:
    """A server process started with ``command`` and ``args``, spoken to over its stdin
    and stdout (its stderr goes to ``errlog``)."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    """Variables set over the SDK's safe default environment (``PATH``, ``HOME``...)."""
    cwd: str | None = None
    errlog: TextIO | None = None
    """Where its stderr goes (`server_errlog` when None)."""

    @property
    def display(self) -> str:
        return redact(f"stdio: {shlex.join([self.command, *self.args])}")

    @asynccontextmanager
    async def streams(self, notes: TransportNotes) -> AsyncIterator[Streams]:
        """The session's streams (no notes: the server's stderr says more)."""
        parameters = StdioServerParameters(
            command=self.command,
            args=list(self.args),
            env=dict(self.env) if self.env is not None else None,
            cwd=self.cwd,
        )
        async with stdio_client(parameters, errlog=self.errlog or server_errlog()) as streams:
            yield streams[0], streams[1]


Transport = HttpTransport | StdioTransport
