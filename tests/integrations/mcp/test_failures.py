"""When the server is not there: unreachable at the start (a clear error naming the
endpoint, without its credentials), gone in the middle (retries, then an error; a new
session once it is back), restarted between calls, refusing the credentials."""

from __future__ import annotations

import os
import pickle
import signal

import httpx
import httpx2
import pytest

from flink_agents.api.content_blocks import TextBlock
from flink_agents.integrations.errors import MCPRequestError, MCPServerError
from flink_agents.integrations.mcp import MCPConnectionError, MCPServer
from tests.integrations.mcp.conftest import free_port, stdio_server
from tests.integrations.mcp.servers import TOKEN, start_http_server

QUICK = {"max_retries": 2, "initial_backoff_s": 0.0, "timeout": 10}


def test_an_unreachable_endpoint_is_named_without_its_credentials() -> None:
    port = free_port()
    server = MCPServer(
        endpoint=f"http://ops:pa55word-x@127.0.0.1:{port}/mcp?api_key=k-123456789#frag",
        headers={"Authorization": "Bearer tok-5e0c2b7d11"},
        **QUICK,
    )
    with pytest.raises(MCPConnectionError) as caught:
        server.list_tools()
    message = str(caught.value)
    assert message == (
        f"MCP server http://127.0.0.1:{port}/mcp is unreachable: "
        "ConnectError: All connection attempts failed (3 attempts)"
    )
    assert caught.value.server == f"http://127.0.0.1:{port}/mcp"
    for secret in ("ops", "pa55word", "k-123456789", "tok-5e0c2b7d11", "frag"):
        assert secret not in message


def test_a_stdio_server_that_does_not_start_is_named() -> None:
    server = MCPServer(command="/nonexistent/mcp-server", args=["--fast"], **QUICK)
    with pytest.raises(
        MCPConnectionError, match=r"stdio: /nonexistent/mcp-server --fast is unreachable"
    ):
        server.call_tool("add", {"a": 1, "b": 2})


def test_a_stdio_server_that_died_is_started_again() -> None:
    server = stdio_server(**QUICK)
    try:
        [first] = server.call_tool("pid")
        assert isinstance(first, TextBlock)
        os.kill(int(first.text), signal.SIGKILL)
        [second] = server.call_tool("pid")
        assert isinstance(second, TextBlock)
        assert second.text != first.text
    finally:
        server.close()


def test_an_http_server_gone_mid_run_fails_the_call_after_the_retries_then_comes_back() -> None:
    with start_http_server() as process:
        server = MCPServer(endpoint=process.endpoint, **QUICK)
        assert server.call_tool("add", {"a": 1, "b": 1}) == [TextBlock(text="2")]
    # The process is gone.
    with pytest.raises(
        MCPConnectionError, match=r"is unreachable: ConnectError: .* \(3 attempts\)"
    ):
        server.call_tool("add", {"a": 1, "b": 2})
    with start_http_server(port=process.port):
        assert server.call_tool("add", {"a": 1, "b": 3}) == [TextBlock(text="4")]
        server.close()


def test_an_http_server_restarted_between_calls_gets_a_new_session() -> None:
    """The restarted server does not know the old session (404 'Session terminated'):
    the call opens a new one instead of failing."""
    with start_http_server() as process:
        server = MCPServer(endpoint=process.endpoint, **QUICK)
        [before] = server.call_tool("pid")
    with start_http_server(port=process.port):
        [after] = server.call_tool("pid")
        assert isinstance(before, TextBlock) and isinstance(after, TextBlock)
        assert after.text != before.text
        server.close()


class Bearer(httpx.Auth):
    """An ``httpx.Auth`` of the application's own."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request):  # type: ignore[no-untyped-def]
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


class Bearer2(httpx2.Auth):
    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request):  # type: ignore[no-untyped-def]
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


@pytest.mark.parametrize(
    "credentials",
    [
        {"headers": {"Authorization": f"Bearer {TOKEN}"}},
        {"auth": Bearer(TOKEN)},
        {"auth": Bearer2(TOKEN)},
    ],
    ids=["headers", "httpx-auth", "httpx2-auth"],
)
def test_credentials_reach_the_server(credentials: dict) -> None:
    with start_http_server(token=TOKEN) as process:
        server = MCPServer(endpoint=process.endpoint, **credentials, **QUICK)
        try:
            assert server.call_tool("add", {"a": 2, "b": 2}) == [TextBlock(text="4")]
        finally:
            server.close()


def test_refused_credentials_say_the_http_status() -> None:
    with start_http_server(token=TOKEN) as process:
        server = MCPServer(endpoint=process.endpoint, auth=Bearer("wrong-token-1"), **QUICK)
        with pytest.raises(MCPConnectionError, match=r"HTTP 401 Unauthorized") as caught:
            server.list_tools()
        assert "wrong-token-1" not in str(caught.value)


def test_errors_pickle_with_their_server() -> None:
    error = MCPRequestError("MCP server x refused it", server="http://h/mcp", code=-32602)
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, MCPRequestError) and isinstance(copy, MCPServerError)
    assert (str(copy), copy.server, copy.code) == (str(error), "http://h/mcp", -32602)
