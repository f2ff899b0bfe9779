"""A real MCP server for the tests, written with the official SDK (`mcp.server.mcpserver`).

Run it over stdio (``python servers.py stdio``) or streamable HTTP on 127.0.0.1
(``python servers.py http [--port N] [--token T]``: it binds, prints ``port N`` on stdout
and serves; with ``--token`` a request without ``Authorization: Bearer T`` gets 401).
`start_http_server` starts one from a test and stops it afterwards.

Its tools: ``add`` (text, with structured content), ``chart`` (an image), ``jingle``
(audio), ``weather`` (a model: JSON text and structured content), ``stock`` (structured
content only), ``report`` (an embedded PDF), ``note`` (an embedded text resource),
``refuse`` (a tool error with a message), ``crash`` (a crash, whose text stays on the
server), ``hang`` (never answers), ``count`` (how often it was called), ``pid`` (the server's
process id). Its prompt:
``ask_sum``.
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # run as a script: find the tests package
    sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
from mcp.server.mcpserver import Audio, Image, MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from mcp_types import (  # noqa: E402
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    TextResourceContents,
)
from pydantic import BaseModel  # noqa: E402

from tests.fakes.images import red_png  # noqa: E402

SCRIPT = Path(__file__).resolve()
PNG = red_png(4)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "
PDF = b"%PDF-1.4\n% a tiny report\n"
TOKEN = "test-token-7f3a9c"


class Weather(BaseModel):
    city: str
    celsius: float


def build_server() -> MCPServer:
    server = MCPServer("flink-agents-test")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def chart(metric: str) -> Image:
        """Render a chart of a metric."""
        return Image(data=PNG, format="png")

    @server.tool()
    def jingle() -> Audio:
        """Play the jingle."""
        return Audio(data=WAV, format="wav")

    @server.tool()
    def weather(city: str) -> Weather:
        """The weather in a city."""
        return Weather(city=city, celsius=21.5)

    @server.tool()
    def stock(sku: str) -> CallToolResult:
        """How many of an item are in stock (structured content only)."""
        return CallToolResult(content=[], structured_content={"sku": sku, "count": 3})

    @server.tool()
    def report() -> list[EmbeddedResource]:
        """The monthly report."""
        blob = BlobResourceContents(
            uri="file:///reports/march.pdf",
            mime_type="application/pdf",
            blob=base64.b64encode(PDF).decode("ascii"),
        )
        return [EmbeddedResource(type="resource", resource=blob)]

    @server.tool()
    def note() -> list[EmbeddedResource]:
        """The note of the day."""
        text = TextResourceContents(
            uri="memo://today", mime_type="text/plain", text="Ship on Friday."
        )
        return [EmbeddedResource(type="resource", resource=text)]

    @server.tool()
    def refuse(order: int) -> str:
        """Cancel an order."""
        raise ToolError(f"order {order} is already shipped")

    @server.tool()
    def crash() -> str:
        """Always crashes."""
        raise RuntimeError("internal detail that stays on the server")

    @server.tool()
    async def hang() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return "never"

    calls = {"count": 0}

    @server.tool()
    def count() -> int:
        """How often this tool was called (in this server process)."""
        calls["count"] += 1
        return calls["count"]

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.prompt()
    def ask_sum(a: str, b: str) -> str:
        """Ask for a sum."""
        return f"What is {a} + {b}? Use the add tool."

    return server


def _require_token(app: Any, token: str) -> Any:
    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-length", b"0")],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await app(scope, receive, send)

    return guarded


def serve_http(port: int, token: str | None) -> None:
    import uvicorn

    server = build_server()
    app = server.streamable_http_app()
    if token:
        app = _require_token(app, token)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    print(f"port {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token")
    options = parser.parse_args()
    if options.transport == "stdio":
        build_server().run("stdio")
    else:
        serve_http(options.port, options.token)


# ---------------------------------------------------------------------- for the tests


def stdio_command() -> tuple[str, list[str]]:
    """``command`` and ``args`` of a stdio server."""
    return sys.executable, [str(SCRIPT), "stdio"]


@dataclass
class HttpServer:
    """A running HTTP server process."""

    process: subprocess.Popen[str]
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def launch_http_server(port: int = 0, token: str | None = None) -> HttpServer:
    """Start an HTTP server process; returns once its socket listens."""
    command = [sys.executable, str(SCRIPT), "http", "--port", str(port)]
    if token:
        command += ["--token", token]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("port "):
        process.kill()
        raise RuntimeError(f"the test MCP server did not start: {line!r}")
    return HttpServer(process, int(line.split()[1]))


@contextmanager
def start_http_server(port: int = 0, token: str | None = None) -> Iterator[HttpServer]:
    server = launch_http_server(port, token)
    try:
        yield server
    finally:
        server.stop()


if __name__ == "__main__":
    main()
