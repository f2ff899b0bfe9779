"""`MCPServer`: an MCP server as a source of an agent's tools and prompts (upstream's
module and names), on the official ``mcp`` SDK.

Declare one like any resource; its tools and prompts are then the agent's, by name:

>>> class ReviewAgent(Agent):
...     @mcp_server
...     @staticmethod
...     def reviews() -> ResourceDescriptor:
...         return ResourceDescriptor(clazz=MCPServer, endpoint="http://127.0.0.1:8000/mcp")
...
...     @chat_model_setup
...     @staticmethod
...     def model() -> ResourceDescriptor:
...         return ResourceDescriptor(clazz=..., connection="...", tools=["notify_shipping"])

Two transports: streamable HTTP (``endpoint``, ``headers``, ``auth``) and stdio
(``command``, ``args``, ``env``, ``cwd``). The server object is plain settings: it pickles
and travels to Flink workers; each process opens one session per server on first use,
on a loop thread of its own (`flink_agents.integrations.mcp._loop`), and opens it again
after a failure (`flink_agents.integrations.mcp._session`). Every request has the
``timeout``; a connection that fails is tried again ``max_retries`` times.
"""

from __future__ import annotations

import collections
import hashlib
import re
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import cloudpickle
from mcp.client.session import ClientSession
from mcp_types import CallToolResult, GetPromptResult, PaginatedRequestParams, PaginatedResult
from mcp_types import Prompt as MCPPromptInfo
from mcp_types import Tool as MCPToolInfo
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from flink_agents._compat.pydantic import with_private
from flink_agents.api.content_blocks import TextBlock, ToolResultContent
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.redaction import register_secret
from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.tools.tool import BaseTool, ToolMetadata, ToolType
from flink_agents.integrations.errors import MCPToolError
from flink_agents.integrations.mcp._content import (
    joined_text,
    prompt_messages,
    tool_result_content,
)
from flink_agents.integrations.mcp._loop import has_stopped, run_blocking, run_on_mcp_loop
from flink_agents.integrations.mcp._session import (
    RetryPolicy,
    ServerLink,
    close_link,
    hold_link,
    release_link,
    server_link,
)
from flink_agents.integrations.mcp._transport import (
    HttpTransport,
    StdioTransport,
    Transport,
    endpoint_for_display,
    http_auth,
)

__all__ = ["MCPPrompt", "MCPPromptArgument", "MCPServer", "MCPTool"]

_T = TypeVar("_T")
_Page = TypeVar("_Page", bound=PaginatedResult)

_MAX_PAGES = 100
"""A listing stops after this many pages (a server whose cursor never ends cannot hang it)."""
_RENDERED_PROMPTS = 256
"""Prompts rendered per server and process, kept for the same arguments."""
_CREDENTIAL_NAME = re.compile(r"auth|key|token|secret|password|passwd|cookie|credential", re.I)


class MCPServer(Resource):
    """An MCP server whose tools and prompts an agent uses by name; see the module doc.

    Give ``endpoint`` (streamable HTTP) or ``command`` (stdio), not both.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    endpoint: str | None = None
    """The streamable HTTP endpoint, ``http(s)://host:port/mcp``."""
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    """HTTP headers sent with every request (values of credential headers, such as
    ``Authorization`` or ``X-API-Key``, are never shown in logs or errors)."""
    auth: Any = Field(default=None, repr=False)
    """An ``httpx.Auth`` (or ``httpx2.Auth``, which the SDK's client is built on) for the
    HTTP transport. It travels to Flink workers with the server, so it must pickle."""
    command: str | None = None
    """The program that runs a stdio server."""
    args: list[str] = Field(default_factory=list)
    """Its arguments."""
    env: dict[str, str] | None = Field(default=None, repr=False)
    """Environment variables for it, over the SDK's safe defaults (``PATH``, ``HOME``...;
    not the whole environment of the worker)."""
    cwd: str | None = None
    """Its working directory."""
    timeout: float = Field(default=30.0, gt=0)
    """Seconds to connect and initialize, and for each request to be answered."""
    sse_read_timeout: float = Field(default=300.0, gt=0)
    """Seconds an HTTP event stream from the server may stay silent."""
    max_retries: int = Field(default=3, ge=0)
    """How often a failed connection is tried again before the request fails."""
    initial_backoff_s: float = Field(default=0.1, ge=0)
    """Seconds before the first retry (doubling for each next one)."""
    max_backoff_s: float = Field(default=10.0, ge=0)
    """The longest wait between retries."""

    _key: Hashable | None = PrivateAttr(default=None)
    _holds: int = PrivateAttr(default=0)
    """`open` calls of this object not yet given back by `close`."""

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.MCP_SERVER

    # ------------------------------------------------------------------ settings

    @field_validator("auth")
    @classmethod
    def _check_auth(cls, auth: Any) -> Any:
        try:
            http_auth(auth)
        except TypeError as error:
            raise ValueError(str(error)) from None
        return auth

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServer:
        if (self.endpoint is None) == (self.command is None):
            raise ValueError(
                "MCPServer needs endpoint= (streamable HTTP) or command= (stdio), not both"
            )
        if self.endpoint is not None:
            _check_endpoint(self.endpoint)
            stdio_only = [n for n in ("args", "env", "cwd") if getattr(self, n)]
            if stdio_only:
                raise ValueError(f"MCPServer: {', '.join(stdio_only)} are for a stdio server")
        elif self.headers or self.auth is not None:
            raise ValueError("MCPServer: headers and auth are for an HTTP server (endpoint=)")
        return self

    def model_post_init(self, context: Any, /) -> None:
        """Registers credential values (of headers and env) with the redactor."""
        super().model_post_init(context)
        for values in (self.headers, self.env or {}):
            for name, value in values.items():
                if _CREDENTIAL_NAME.search(name):
                    register_secret(_header_secret(value))

    @property
    def display_name(self) -> str:
        """The server as errors and logs name it (no credentials)."""
        if self.endpoint is not None:
            return endpoint_for_display(self.endpoint)
        return self._transport().display

    def _transport(self) -> Transport:
        if self.endpoint is not None:
            return HttpTransport(
                endpoint=self.endpoint,
                headers=dict(self.headers),
                auth=self.auth,
                timeout=self.timeout,
                sse_read_timeout=self.sse_read_timeout,
            )
        assert self.command is not None
        return StdioTransport(
            command=self.command, args=tuple(self.args), env=self.env, cwd=self.cwd
        )

    def _link_key(self) -> Hashable:
        """Servers with the same settings share one session per process."""
        if self._key is None:
            self._key = (
                self.endpoint,
                tuple(sorted(self.headers.items())),
                _auth_key(self.auth),
                self.command,
                tuple(self.args),
                tuple(sorted((self.env or {}).items())),
                self.cwd,
                self.timeout,
                self.sse_read_timeout,
                self.max_retries,
                self.initial_backoff_s,
                self.max_backoff_s,
            )
        return self._key

    def _link(self) -> ServerLink:
        """This process's link to the server (on the MCP loop)."""
        retry = RetryPolicy(self.max_retries, self.initial_backoff_s, self.max_backoff_s)
        return server_link(
            self._link_key(), lambda: ServerLink(self._transport(), self.timeout, retry)
        )

    async def _on_loop(self, work: Callable[[ServerLink], Awaitable[_T]]) -> _T:
        async def run() -> _T:
            return await work(self._link())

        return await run_on_mcp_loop(run())

    def _blocking(self, work: Callable[[ServerLink], Awaitable[_T]]) -> _T:
        async def run() -> _T:
            return await work(self._link())

        return run_blocking(run())

    def __getstate__(self) -> dict[Any, Any]:
        # holds are this process's
        return with_private(super().__getstate__(), _key=None, _holds=0)

    # ------------------------------------------------------------------ tools

    async def alist_tools(self) -> list[MCPTool]:
        """The server's tools (listed once per process, then from memory)."""
        infos = await self._on_loop(_tool_infos)
        return [self._tool(info) for info in infos]

    def list_tools(self) -> list[MCPTool]:
        """`alist_tools`, blocking."""
        return [self._tool(info) for info in self._blocking(_tool_infos)]

    async def aget_tool(self, name: str) -> MCPTool:
        """The tool ``name``; `KeyError` naming the server's tools when it has none."""
        return _named(await self.alist_tools(), name, "tool", self.display_name)

    def get_tool(self, name: str) -> MCPTool:
        """`aget_tool`, blocking."""
        return _named(self.list_tools(), name, "tool", self.display_name)

    def get_tool_metadata(self, name: str) -> ToolMetadata:
        """What a model sees of the tool ``name``."""
        return self.get_tool(name).metadata

    async def acall_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> list[ToolResultContent]:
        """Call the tool ``name``: its result as blocks (`flink_agents.integrations.mcp`
        maps text, media, resources and structured content). Raises `MCPToolError` when
        the tool reports an error, and the other `MCPServerError`s when the request fails."""
        return await self._on_loop(lambda link: _call_tool(link, name, dict(arguments or {})))

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> list[ToolResultContent]:
        """`acall_tool`, blocking."""
        return self._blocking(lambda link: _call_tool(link, name, dict(arguments or {})))

    def _tool(self, info: MCPToolInfo) -> MCPTool:
        schema = dict(info.input_schema or {})
        schema.setdefault("type", "object")
        metadata = ToolMetadata(
            name=info.name, description=info.description or info.title or "", args_schema=schema
        )
        return MCPTool(metadata=metadata, server=self, get_resource=self.get_resource)

    # ------------------------------------------------------------------ prompts

    async def alist_prompts(self) -> list[MCPPrompt]:
        """The server's prompts (none when it does not offer prompts)."""
        return [self._prompt(info) for info in await self._on_loop(_prompt_infos)]

    def list_prompts(self) -> list[MCPPrompt]:
        """`alist_prompts`, blocking."""
        return [self._prompt(info) for info in self._blocking(_prompt_infos)]

    async def aget_prompt(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> list[ChatMessage]:
        """The prompt ``name`` rendered by the server with ``arguments``, as messages
        with the roles the server gave them."""
        values = _prompt_values(arguments)
        return await self._on_loop(lambda link: _render_prompt(link, name, values))

    def get_prompt(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> list[ChatMessage]:
        """`aget_prompt`, blocking."""
        values = _prompt_values(arguments)
        return self._blocking(lambda link: _render_prompt(link, name, values))

    def _prompt(self, info: MCPPromptInfo) -> MCPPrompt:
        arguments = [
            MCPPromptArgument(name=a.name, description=a.description, required=bool(a.required))
            for a in info.arguments or []
        ]
        return MCPPrompt(
            name=info.name,
            title=info.title,
            description=info.description,
            prompt_arguments=arguments,
            server=self,
            get_resource=self.get_resource,
        )

    # ------------------------------------------------------------------ as a source

    def offered_resource(self, name: str, resource_type: ResourceType) -> Resource | None:
        """The tool or prompt ``name`` of this server, or None when it has none (the
        runtime asks this for a name the agent does not declare itself). Lists the
        server's tools or prompts on first use: `MCPConnectionError` when it cannot be
        reached."""
        if resource_type is ResourceType.TOOL:
            return next((t for t in self.list_tools() if t.name == name), None)
        if resource_type is ResourceType.PROMPT:
            return next((p for p in self.list_prompts() if p.name == name), None)
        return None

    # ------------------------------------------------------------------ opening, closing

    def open(self) -> None:
        """Hold this process's session to the server (the runtime calls this when an
        engine builds the server; nothing is connected until the first request). Servers
        with the same settings share the session: it stays open while any holds it."""
        hold_link(self._link_key())
        self._holds += 1

    async def aclose(self) -> None:
        """After `open`: let go of the session, which closes (a stdio server is stopped)
        when no other engine of the process holds it. Else: close the session now. Either
        way the next request opens a new one."""
        await run_on_mcp_loop(self._closing())

    def close(self) -> None:
        """`aclose`, blocking (the runtime calls this when the engine closes). Nothing
        after interpreter exit began: every session was closed then."""
        if has_stopped():
            return
        run_blocking(self._closing())

    def _closing(self) -> Coroutine[Any, Any, None]:
        key = self._link_key()
        if self._holds > 0:
            self._holds -= 1
            return release_link(key)
        return close_link(key)


class MCPTool(BaseTool):
    """A tool of an MCP server: calling it calls the server (`MCPServer.acall_tool`)."""

    server: MCPServer = Field(repr=False)
    """The server that has the tool."""

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.MCP

    async def acall(self, **arguments: Any) -> list[ToolResultContent]:
        """Call the tool with the model's arguments (the server checks them)."""
        return await self.server.acall_tool(self.name, arguments)

    def call(self, **arguments: Any) -> list[ToolResultContent]:
        """`acall`, blocking."""
        return self.server.call_tool(self.name, arguments)


class MCPPromptArgument(BaseModel):
    """An argument an MCP prompt takes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Its name."""
    description: str | None = None
    """What it is, as the server says."""
    required: bool = False
    """Whether the prompt needs it."""


class MCPPrompt(Prompt):
    """A prompt of an MCP server, rendered by the server with the arguments given.

    Of the keyword arguments of `format_messages` only those the prompt declares are
    sent (as text); a required one that is missing raises `ValueError`. The messages
    keep the roles the server gave them (``role`` is not used). The same arguments
    render once per process (the chat loop puts the prompt before each model call).
    """

    name: str
    """The prompt's name on the server."""
    title: str | None = None
    """Its display title."""
    description: str | None = None
    """What it is for."""
    prompt_arguments: list[MCPPromptArgument] = Field(default_factory=list)
    """The arguments it takes."""
    server: MCPServer = Field(repr=False)
    """The server that renders it."""

    def _arguments(self, given: Mapping[str, Any]) -> dict[str, str]:
        missing = [a.name for a in self.prompt_arguments if a.required and a.name not in given]
        if missing:
            raise ValueError(
                f"MCP prompt {self.name!r} needs the argument(s) {missing} (given: {sorted(given)})"
            )
        declared = {a.name for a in self.prompt_arguments}
        return _prompt_values({k: v for k, v in given.items() if k in declared})

    def format_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        """The messages the server renders (blocking)."""
        return self.server.get_prompt(self.name, self._arguments(kwargs))

    async def aformat_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        """`format_messages` without blocking."""
        return await self.server.aget_prompt(self.name, self._arguments(kwargs))

    def format_string(self, **kwargs: Any) -> str:
        """The text of the rendered messages, one a line (blocking)."""
        return joined_text(self.format_messages(**kwargs))

    async def aformat_string(self, **kwargs: Any) -> str:
        """`format_string` without blocking."""
        return joined_text(await self.aformat_messages(**kwargs))


# ---------------------------------------------------------------------- on the MCP loop


async def _tool_infos(link: ServerLink) -> list[MCPToolInfo]:
    return await _listing(link, "tools", _all_tools)


async def _all_tools(session: ClientSession) -> list[MCPToolInfo]:
    return await _all_pages(lambda params: session.list_tools(params=params), lambda p: p.tools)


async def _prompt_infos(link: ServerLink) -> list[MCPPromptInfo]:
    return await _listing(link, "prompts", _all_prompts)


async def _listing(
    link: ServerLink, kind: str, list_all: Callable[[ClientSession], Awaitable[list[_T]]]
) -> list[_T]:
    """The server's ``kind`` (``tools``, ``prompts``): listed once (``{kind}/list``), then
    from the link's cache until its session is closed."""
    cached = link.listings.get(kind)
    if cached is None:
        cached = await link.request(f"{kind}/list", list_all)
        link.listings[kind] = cached
    return list(cached)


async def _all_prompts(session: ClientSession) -> list[MCPPromptInfo]:
    capabilities = session.server_capabilities
    if capabilities is None or capabilities.prompts is None:
        return []
    return await _all_pages(
        lambda params: session.list_prompts(params=params), lambda page: page.prompts
    )


async def _all_pages(
    list_page: Callable[[PaginatedRequestParams | None], Awaitable[_Page]],
    items: Callable[[_Page], Sequence[_T]],
) -> list[_T]:
    """The items of every page of a listing (``tools/list``, ``prompts/list``), following
    its cursor for at most `_MAX_PAGES` pages."""
    found: list[_T] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await list_page(PaginatedRequestParams(cursor=cursor) if cursor else None)
        found.extend(items(page))
        cursor = page.next_cursor
        if not cursor:
            break
    return found


async def _call_tool(
    link: ServerLink, name: str, arguments: dict[str, Any]
) -> list[ToolResultContent]:
    async def send(session: ClientSession) -> CallToolResult:
        result = await session.call_tool(name, arguments)
        if not isinstance(result, CallToolResult):
            raise TypeError(f"the server answered with a {type(result).__name__}")
        return result

    result = await link.request(f"tools/call {name!r}", send)
    content = tool_result_content(result)
    if result.is_error:
        text = "\n".join(b.text for b in content if isinstance(b, TextBlock))
        raise MCPToolError(text or f"tool {name!r} reported an error", server=link.server)
    return content


async def _render_prompt(
    link: ServerLink, name: str, arguments: dict[str, str]
) -> list[ChatMessage]:
    rendered: collections.OrderedDict[Hashable, list[ChatMessage]] = link.listings.setdefault(
        "rendered", collections.OrderedDict()
    )
    key = (name, tuple(sorted(arguments.items())))
    messages = rendered.get(key)
    if messages is None:

        async def send(session: ClientSession) -> GetPromptResult:
            return await session.get_prompt(name, arguments)

        messages = prompt_messages(await link.request(f"prompts/get {name!r}", send))
        rendered[key] = messages
        while len(rendered) > _RENDERED_PROMPTS:
            rendered.popitem(last=False)
    else:
        rendered.move_to_end(key)
    return [m.model_copy(deep=True) for m in messages]


# ---------------------------------------------------------------------- helpers


def _check_endpoint(endpoint: str) -> None:
    try:
        parts = urlsplit(endpoint)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        valid = False
    if not valid:
        raise ValueError(
            f"MCPServer endpoint must be an http(s) URL, got {endpoint_for_display(endpoint)!r}"
        )


def _header_secret(value: str) -> str:
    """The secret part of a credential header: the token after a scheme word."""
    scheme, _, token = value.partition(" ")
    return token if token and scheme.isalpha() else value


def _auth_key(auth: Any) -> Hashable:
    if auth is None:
        return None
    try:
        return hashlib.sha256(cloudpickle.dumps(auth)).hexdigest()
    except Exception:  # an auth that does not pickle: this object only
        return ("object", id(auth))


def _prompt_values(arguments: Mapping[str, Any] | None) -> dict[str, str]:
    return {k: v if isinstance(v, str) else str(v) for k, v in (arguments or {}).items()}


def _named(items: list[Any], name: str, kind: str, server: str) -> Any:
    for item in items:
        if item.name == name:
            return item
    known = sorted(item.name for item in items)
    raise KeyError(f"MCP server {server} has no {kind} named {name!r} (its {kind}s: {known})")
