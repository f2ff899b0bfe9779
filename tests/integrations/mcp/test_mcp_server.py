"""`MCPServer` against a real MCP server (the official SDK's, `servers.py`) over stdio and
streamable HTTP: tools and their results, prompts, errors, one session per process, the
async API, pickling, settings."""

from __future__ import annotations

import asyncio
import base64

import cloudpickle
import pytest
from pydantic import ValidationError

from flink_agents.api.content_blocks import AudioBlock, DocumentBlock, ImageBlock, TextBlock
from flink_agents.api.errors import UnknownOptionError
from flink_agents.api.message import ChatMessage
from flink_agents.api.redaction import redact
from flink_agents.api.resource import ResourceType
from flink_agents.api.tools.tool import ToolType
from flink_agents.integrations.mcp import (
    MCPPrompt,
    MCPPromptArgument,
    MCPServer,
    MCPTimeoutError,
    MCPTool,
    MCPToolError,
)
from tests.integrations.mcp.conftest import stdio_server
from tests.integrations.mcp.servers import PDF, PNG, WAV


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> MCPServer:
    return request.getfixturevalue(request.param)


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


# ---------------------------------------------------------------------- tools


def test_list_tools_gives_each_tool_with_its_schema(server: MCPServer) -> None:
    tools = {tool.name: tool for tool in server.list_tools()}
    assert set(tools) >= {"add", "chart", "weather", "stock", "refuse", "hang", "pid"}
    add = tools["add"]
    assert isinstance(add, MCPTool)
    assert add.metadata.description == "Add two integers."
    assert add.metadata.args_schema["type"] == "object"
    assert set(add.metadata.args_schema["properties"]) == {"a", "b"}
    assert add.metadata.args_schema["required"] == ["a", "b"]
    assert add.resource_type() is ResourceType.TOOL
    assert add.tool_type() is ToolType.MCP


def test_get_tool_names_the_servers_tools_when_it_has_no_such_tool(server: MCPServer) -> None:
    assert server.get_tool("add").name == "add"
    assert server.get_tool_metadata("chart").name == "chart"
    with pytest.raises(KeyError, match=r"no tool named 'ad'.*'add'"):
        server.get_tool("ad")


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("add", {"a": 2, "b": 3}, [TextBlock(text="5")]),
        (
            "chart",
            {"metric": "errors"},
            [ImageBlock(mime_type="image/png", data=b64(PNG), size_bytes=len(PNG))],
        ),
        ("jingle", {}, [AudioBlock(mime_type="audio/wav", data=b64(WAV), size_bytes=len(WAV))]),
        (
            "weather",
            {"city": "Oslo"},
            [TextBlock(text='{\n  "city": "Oslo",\n  "celsius": 21.5\n}')],
        ),
        ("stock", {"sku": "a-1"}, [TextBlock(text='{"sku":"a-1","count":3}')]),
        (
            "report",
            {},
            [
                DocumentBlock(
                    mime_type="application/pdf",
                    data=b64(PDF),
                    name="march.pdf",
                    size_bytes=len(PDF),
                )
            ],
        ),
        ("note", {}, [TextBlock(text="Ship on Friday.")]),
    ],
)
def test_tool_results_are_typed_blocks(
    server: MCPServer, tool: str, arguments: dict, expected: list
) -> None:
    assert server.call_tool(tool, arguments) == expected
    assert server.get_tool(tool).call(**arguments) == expected


def test_a_tool_error_raises_with_what_the_tool_said(server: MCPServer) -> None:
    with pytest.raises(MCPToolError, match="order 7 is already shipped") as caught:
        server.call_tool("refuse", {"order": 7})
    assert caught.value.server == server.display_name


def test_a_crash_on_the_server_keeps_its_details_there(server: MCPServer) -> None:
    with pytest.raises(MCPToolError) as caught:
        server.call_tool("crash")
    assert str(caught.value) == "Error executing tool crash"


def test_arguments_that_do_not_fit_are_the_tools_error(server: MCPServer) -> None:
    with pytest.raises(MCPToolError, match="add"):
        server.call_tool("add", {"a": "not a number", "b": 1})


async def test_async_calls_leave_the_callers_loop_free(server: MCPServer) -> None:
    """A call waiting on the server does not hold the caller's loop: another call and the
    loop's own work go on, and the slow call times out by itself.

    The timeout also bounds the session's opening: a stdio server is a new Python process
    that imports the MCP SDK, which took over 3 s on a loaded machine, so 1 s was too
    short for it to start (the test then failed in ``initialize``)."""
    hung = (
        stdio_server(timeout=5.0)
        if server.command
        else MCPServer(endpoint=server.endpoint, timeout=5.0)
    )
    try:
        slow = asyncio.ensure_future(hung.acall_tool("hang"))
        ticks = 0
        while not slow.done() and ticks < 3:
            await asyncio.sleep(0)
            ticks += 1
        assert await server.acall_tool("add", {"a": 1, "b": 1}) == [TextBlock(text="2")]
        assert not slow.done()
        with pytest.raises(MCPTimeoutError, match=r"no answer to tools/call 'hang' within 5 s"):
            await slow
        # The session is still good after a timeout.
        assert await hung.acall_tool("add", {"a": 2, "b": 2}) == [TextBlock(text="4")]
    finally:
        await hung.aclose()


async def test_cancelling_a_call_cancels_it_on_the_server_side(server: MCPServer) -> None:
    task = asyncio.ensure_future(server.acall_tool("hang"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await server.acall_tool("add", {"a": 3, "b": 4}) == [TextBlock(text="7")]


# ---------------------------------------------------------------------- prompts


def test_list_prompts_gives_each_prompt_with_its_arguments(server: MCPServer) -> None:
    [prompt] = server.list_prompts()
    assert isinstance(prompt, MCPPrompt)
    assert prompt.name == "ask_sum"
    assert prompt.description == "Ask for a sum."
    assert prompt.prompt_arguments == [
        MCPPromptArgument(name="a", required=True),
        MCPPromptArgument(name="b", required=True),
    ]


def test_a_prompt_is_rendered_by_the_server(server: MCPServer) -> None:
    [prompt] = server.list_prompts()
    expected = [ChatMessage.user("What is 1 + 2? Use the add tool.")]
    assert prompt.format_messages(a=1, b="2", other="not sent") == expected
    assert prompt.format_string(a=1, b=2) == "What is 1 + 2? Use the add tool."
    assert server.get_prompt("ask_sum", {"a": "1", "b": "2"}) == expected


async def test_a_prompt_renders_without_blocking(server: MCPServer) -> None:
    [prompt] = await server.alist_prompts()
    messages = await prompt.aformat_messages(a=3, b=4)
    assert messages == [ChatMessage.user("What is 3 + 4? Use the add tool.")]
    assert await prompt.aformat_string(a=3, b=4) == "What is 3 + 4? Use the add tool."


def test_a_prompt_needs_its_required_arguments(server: MCPServer) -> None:
    [prompt] = server.list_prompts()
    with pytest.raises(ValueError, match=r"needs the argument\(s\) \['b'\]"):
        prompt.format_messages(a=1)


# ---------------------------------------------------------------------- as a source


def test_the_server_offers_its_tools_and_prompts_by_name(stdio: MCPServer) -> None:
    tool = stdio.offered_resource("chart", ResourceType.TOOL)
    assert isinstance(tool, MCPTool) and tool.name == "chart"
    prompt = stdio.offered_resource("ask_sum", ResourceType.PROMPT)
    assert isinstance(prompt, MCPPrompt) and prompt.name == "ask_sum"
    assert stdio.offered_resource("nothing", ResourceType.TOOL) is None
    assert stdio.offered_resource("chart", ResourceType.PROMPT) is None
    assert stdio.offered_resource("chart", ResourceType.CHAT_MODEL) is None


# ---------------------------------------------------------------------- sessions


def test_one_session_per_server_per_process(stdio: MCPServer) -> None:
    """Equal settings share the process's session (a stdio server is one process); a
    copy that traveled by cloudpickle too. Other settings get their own."""
    first = stdio.call_tool("pid")
    same = stdio_server(timeout=20)
    copy = cloudpickle.loads(cloudpickle.dumps(stdio))
    assert same.call_tool("pid") == first
    assert copy.call_tool("pid") == first
    other = stdio_server(timeout=19)
    try:
        assert other.call_tool("pid") != first
    finally:
        other.close()


def test_close_stops_the_session_and_the_next_call_opens_another() -> None:
    server = stdio_server(timeout=20)
    first = server.call_tool("pid")
    server.close()
    try:
        assert server.call_tool("pid") != first
    finally:
        server.close()


def test_a_held_session_closes_when_its_last_holder_lets_go() -> None:
    from flink_agents.integrations.mcp._session import holders

    server, other = stdio_server(timeout=15), stdio_server(timeout=15)
    key = server._link_key()
    server.open()
    other.open()
    copy = cloudpickle.loads(cloudpickle.dumps(server))  # holds stay in their process
    first = server.call_tool("pid")
    assert holders(key) == 2
    server.close()
    assert holders(key) == 1
    assert other.call_tool("pid") == first  # still open for the other holder
    other.close()
    assert holders(key) == 0
    try:
        assert copy.call_tool("pid") != first  # that closed it: a new session
    finally:
        copy.close()  # held by nobody: closes at once


def test_closing_after_interpreter_exit_began_does_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At exit the MCP loop's stop hooks closed every session and the loop stopped: an
    engine closed after that must not wait on it."""
    from flink_agents.integrations.mcp import _loop

    monkeypatch.setattr(_loop, "_stopped", True)
    stdio_server(timeout=15).close()  # returns
    with pytest.raises(RuntimeError, match="the MCP loop has stopped"):
        _loop.run_blocking(asyncio.sleep(0))


# ---------------------------------------------------------------------- settings


def test_the_server_pickles_with_its_settings_and_auth() -> None:
    import httpx

    server = MCPServer(
        endpoint="http://127.0.0.1:1/mcp",
        headers={"X-Team": "ops"},
        auth=httpx.BasicAuth("me", "pw-1234567"),
        timeout=3,
        max_retries=1,
    )
    copy = cloudpickle.loads(cloudpickle.dumps(server))
    assert copy.model_dump(exclude={"auth"}) == server.model_dump(exclude={"auth"})
    assert isinstance(copy.auth, httpx.BasicAuth)
    assert copy.auth._auth_header == server.auth._auth_header


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "endpoint= .* or command="),
        ({"endpoint": "http://h/mcp", "command": "x"}, "not both"),
        ({"endpoint": "ftp://h/mcp"}, "must be an http"),
        ({"endpoint": "localhost:8000/mcp"}, "must be an http"),
        ({"endpoint": "http://h/mcp", "args": ["x"]}, "args are for a stdio server"),
        ({"command": "x", "headers": {"A": "b"}}, "headers and auth are for an HTTP server"),
        ({"endpoint": "http://h/mcp", "auth": "token"}, "auth must be an httpx.Auth"),
        ({"endpoint": "http://h/mcp", "timeout": 0}, "greater than 0"),
    ],
)
def test_settings_that_cannot_work_are_refused(options: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MCPServer(**options)


def test_an_unknown_option_names_the_closest() -> None:
    with pytest.raises(UnknownOptionError, match="endpoint"):
        MCPServer(endpont="http://h/mcp")


def test_credentials_in_headers_and_env_are_never_shown() -> None:
    MCPServer(endpoint="http://h/mcp", headers={"Authorization": "Bearer tok-8c1e55a0b2"})
    MCPServer(command="srv", env={"SERVICE_API_KEY": "key-77f0e2d1c9", "MODE": "fast-mode-on"})
    shown = redact("sent tok-8c1e55a0b2 and key-77f0e2d1c9 in fast-mode-on")
    assert "tok-8c1e55a0b2" not in shown
    assert "key-77f0e2d1c9" not in shown
    assert "fast-mode-on" in shown


def test_upstreams_resource_name_is_this_class() -> None:
    from flink_agents.api.resource import ResourceDescriptor, ResourceName

    descriptor = ResourceDescriptor(clazz=ResourceName.MCP_SERVER, endpoint="http://h/mcp")
    assert descriptor.resolve_class() is MCPServer
    assert isinstance(descriptor.build(), MCPServer)


class _StdErrCatcher:
    """What a Flink worker in thread mode has as ``sys.stderr``: no file descriptor."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def test_a_stdio_server_starts_where_stderr_has_no_file_descriptor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setattr(sys, "stderr", _StdErrCatcher())
    monkeypatch.setattr(sys, "__stderr__", _StdErrCatcher())
    server = stdio_server(timeout=21, max_retries=0)
    try:
        assert server.call_tool("add", {"a": 4, "b": 4}) == [TextBlock(text="8")]
    finally:
        server.close()
