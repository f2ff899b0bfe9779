"""The integrations' errors: the tree drawn in `flink_agents.integrations.errors` is the real
one, with one root; messages are redacted."""

from __future__ import annotations

import pytest

from flink_agents.integrations import errors
from flink_agents.integrations.errors import (
    MCPConnectionError,
    MCPServerError,
    MCPTimeoutError,
)
from tests.runtime.test_errors import drawn_tree


def test_the_drawn_tree_is_the_real_one_with_one_root() -> None:
    tree = drawn_tree(errors)
    assert set(errors.__all__) <= set(tree)
    assert [name for name, parent in tree.items() if parent is None] == ["MCPServerError"]
    for name, parent in tree.items():
        if parent is not None:
            assert getattr(errors, parent) in getattr(errors, name).__bases__, name


def test_a_timeout_is_also_a_timeout_error() -> None:
    with pytest.raises(TimeoutError):
        raise MCPTimeoutError("no answer", server="http://h/mcp")


def test_messages_are_redacted() -> None:
    error = MCPConnectionError(
        "MCP server failed: Bearer abcdefghijklmnop1234 rejected", server="http://h/mcp"
    )
    assert "abcdefghijklmnop1234" not in str(error)
    assert isinstance(error, MCPServerError)
