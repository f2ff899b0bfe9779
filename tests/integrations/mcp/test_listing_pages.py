"""Listing a server's tools and prompts: every page, following the cursor, bounded."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from mcp_types import ListPromptsResult, ListToolsResult, PaginatedRequestParams, Prompt, Tool

from flink_agents.integrations.mcp import mcp as mcp_module


class PagedSession:
    """A session whose listings come in pages; records the cursor of each request."""

    def __init__(self, tools: dict[str | None, ListToolsResult], prompts: Any = None) -> None:
        self.tool_pages = tools
        self.prompt_pages = prompts or {}
        self.asked: list[str | None] = []
        self.server_capabilities = SimpleNamespace(prompts=object() if prompts else None)

    def _cursor(self, params: PaginatedRequestParams | None) -> str | None:
        cursor = params.cursor if params is not None else None
        self.asked.append(cursor)
        return cursor

    async def list_tools(self, *, params: PaginatedRequestParams | None) -> ListToolsResult:
        return self.tool_pages[self._cursor(params)]

    async def list_prompts(self, *, params: PaginatedRequestParams | None) -> ListPromptsResult:
        return self.prompt_pages[self._cursor(params)]


def _tool(name: str) -> Tool:
    return Tool(name=name, input_schema={"type": "object"})


def test_tools_and_prompts_of_every_page_in_order() -> None:
    session = PagedSession(
        tools={
            None: ListToolsResult(tools=[_tool("a"), _tool("b")], next_cursor="p2"),
            "p2": ListToolsResult(tools=[_tool("c")], next_cursor="p3"),
            "p3": ListToolsResult(tools=[_tool("d")]),
        },
        prompts={
            None: ListPromptsResult(prompts=[Prompt(name="x")], next_cursor="q2"),
            "q2": ListPromptsResult(prompts=[Prompt(name="y")]),
        },
    )
    tools = asyncio.run(mcp_module._all_tools(session))  # type: ignore[arg-type]
    prompts = asyncio.run(mcp_module._all_prompts(session))  # type: ignore[arg-type]
    assert [tool.name for tool in tools] == ["a", "b", "c", "d"]
    assert [prompt.name for prompt in prompts] == ["x", "y"]
    assert session.asked == [None, "p2", "p3", None, "q2"]


def test_a_server_whose_cursor_never_ends_is_read_for_a_bounded_number_of_pages() -> None:
    endless = ListToolsResult(tools=[_tool("t")], next_cursor="again")
    session = PagedSession(tools={None: endless, "again": endless})
    tools = asyncio.run(mcp_module._all_tools(session))  # type: ignore[arg-type]
    assert len(tools) == mcp_module._MAX_PAGES
    assert len(session.asked) == mcp_module._MAX_PAGES


def test_a_server_without_prompts_is_not_asked_for_them() -> None:
    session = PagedSession(tools={})
    assert asyncio.run(mcp_module._all_prompts(session)) == []  # type: ignore[arg-type]
    assert session.asked == []
