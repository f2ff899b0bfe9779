"""Fixtures: the test MCP server (`servers.py`) over stdio and over streamable HTTP."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from flink_agents.integrations.mcp import MCPServer
from tests.integrations.mcp.servers import HttpServer, start_http_server, stdio_command


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on (just released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stdio_server(**options: object) -> MCPServer:
    command, args = stdio_command()
    return MCPServer(command=command, args=args, **options)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def stdio() -> Iterator[MCPServer]:
    """A stdio server (one session for the module's tests)."""
    server = stdio_server(timeout=20)
    yield server
    server.close()


@pytest.fixture(scope="module")
def http_process() -> Iterator[HttpServer]:
    """An HTTP server process for the module's tests."""
    with start_http_server() as process:
        yield process


@pytest.fixture(scope="module")
def http(http_process: HttpServer) -> Iterator[MCPServer]:
    server = MCPServer(endpoint=http_process.endpoint, timeout=20)
    yield server
    server.close()
