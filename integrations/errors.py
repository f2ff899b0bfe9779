"""Errors the integrations raise themselves. Catch at the level you care about:

    MCPServerError                      a request to an MCP server failed; ``server`` names
    │                                   it (its endpoint without credentials, or its command)
    ├── MCPConnectionError              the server could not be reached, or the connection
    │                                   broke, on every attempt (the message says how often)
    ├── MCPTimeoutError                 (TimeoutError) a request got no answer within the
    │                                   server's ``timeout``
    ├── MCPRequestError                 the server refused a request (an unknown tool or
    │                                   prompt, arguments that do not fit)
    └── MCPToolError                    a tool answered with ``isError``; the message is what
                                        it said

A built-in Python base in parentheses is a second base class. In an agent, the built-in
tool action turns any of them into an error result the model reads (``is_error``); the
chat model adapters raise the API's `ChatModelError` (`flink_agents.api.errors`).
"""

from __future__ import annotations

from typing import Any

from flink_agents.api.redaction import redact

__all__ = [
    "MCPConnectionError",
    "MCPRequestError",
    "MCPServerError",
    "MCPTimeoutError",
    "MCPToolError",
]


class MCPServerError(Exception):
    """A request to an MCP server failed. The message is redacted and names the server."""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(redact(message))
        self.server = server
        """The server, as errors show it: its endpoint without credentials, query or
        fragment, or ``stdio: <command> <args>``."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles (to another process, into a failure record) with its keywords.
        return (_rebuild, (type(self), str(self), dict(self.__dict__)))


class MCPConnectionError(MCPServerError):
    """The server could not be reached, or the connection broke, on every attempt."""


class MCPTimeoutError(MCPServerError, TimeoutError):
    """A request got no answer within the server's ``timeout``."""


class MCPRequestError(MCPServerError):
    """The server answered a request with an error (an unknown tool or prompt, arguments
    that do not fit its schema...)."""

    def __init__(self, message: str, *, server: str, code: int | None = None) -> None:
        super().__init__(message, server=server)
        self.code = code
        """The JSON-RPC error code, when the server sent one."""


class MCPToolError(MCPServerError):
    """A tool answered with ``isError``: it ran and failed. The message is its text."""


def _rebuild(cls: type[MCPServerError], message: str, fields: dict[str, Any]) -> MCPServerError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(fields)
    return error
