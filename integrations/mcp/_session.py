"""This process's link to one MCP server: one session, opened on first use and opened
again after a failure; a timeout on every request; retries when the connection fails.

Everything here runs on the MCP loop (`flink_agents.integrations.mcp._loop`). A session
is owned by a task that enters the transport and the SDK's `ClientSession` and waits
until it is told to close; requests run in tasks of their own, so a transport that
fails ends the owner task and the requests waiting on it hear of it at once (they do not
wait out their timeout).

What is retried: a failure to connect, and a connection that broke under a request
(the request may then have reached the server: an MCP tool call can run twice, as any
tool call that is retried). What is not: an error the server answered with, and a
request that got no answer within the timeout.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, NamedTuple, TypeVar

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from flink_agents.integrations.errors import (
    MCPConnectionError,
    MCPRequestError,
    MCPServerError,
    MCPTimeoutError,
)
from flink_agents.integrations.mcp._loop import when_stopping
from flink_agents.integrations.mcp._transport import Transport, TransportNotes

__all__ = [
    "RetryPolicy",
    "ServerLink",
    "close_all_links",
    "close_link",
    "describe",
    "hold_link",
    "holders",
    "release_link",
    "server_link",
]

_LOG = logging.getLogger(__name__)
_T = TypeVar("_T")

_GUARD_S = 2.0
"""A request whose SDK clock never started (its message could not be written) is given
up this long after the timeout."""
_CLOSE_S = 5.0
"""How long closing a session waits for its owner task before cancelling it."""


class RetryPolicy(NamedTuple):
    """How often a failed connection is tried again, and how long to wait between."""

    max_retries: int = 3
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 10.0

    def wait(self, retry: int) -> float:
        """Seconds before retry number ``retry`` (0 for the first)."""
        return min(self.max_backoff_s, self.initial_backoff_s * 2.0 ** min(retry, 32))


class _Broken(Exception):
    """The connection failed (could not be opened, or broke): worth another try."""

    def __init__(self, cause: BaseException | str, *, opening: bool) -> None:
        super().__init__(cause if isinstance(cause, str) else describe(cause))
        self.opening = opening


class _NoAnswer(Exception):
    """The request got no answer in time."""


def describe(error: BaseException) -> str:
    """``Type: message`` of the error that says the most: the first leaf of an exception
    group that is no cancellation."""
    leaf = _leaf(error)
    text = str(leaf)
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def _leaf(error: BaseException) -> BaseException:
    inner = getattr(error, "exceptions", None)
    if isinstance(inner, tuple) and inner:
        found = [_leaf(e) for e in inner if isinstance(e, BaseException)]
        useful = [e for e in found if not isinstance(e, asyncio.CancelledError)]
        return (useful or found or [error])[0]
    return error


def _is_connection_failure(error: BaseException) -> bool:
    if isinstance(error, MCPError):
        return error.code == CONNECTION_CLOSED
    if isinstance(getattr(error, "exceptions", None), tuple):
        return True  # a transport's task group failed
    return isinstance(
        error,
        (
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            anyio.EndOfStream,
            httpx2.TransportError,
            OSError,
        ),
    )


class _Session:
    """One open session, owned by a task that holds its transport and `ClientSession`."""

    def __init__(self, transport: Transport, timeout: float) -> None:
        self.transport = transport
        self.timeout = timeout
        self.session: ClientSession | None = None
        self.failure: BaseException | None = None
        """Why the owner task ended, when it was not told to."""
        self.notes = TransportNotes()
        """What the transport saw that the SDK's errors do not say."""
        self._stop = asyncio.Event()
        self.closed = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Connect and initialize, within the timeout; `_Broken` when that fails."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._owner = asyncio.ensure_future(self._own(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.timeout)
        except asyncio.TimeoutError:
            await self.aclose()
            raise _Broken(f"no answer within {self.timeout:g} s", opening=True) from None
        except BaseException:
            if not ready.done() or ready.cancelled():  # the caller was cancelled
                await asyncio.shield(self.aclose())
            raise

    async def _own(self, ready: asyncio.Future[None]) -> None:
        try:
            async with (
                self.transport.streams(self.notes) as (read, write),
                ClientSession(read, write, read_timeout_seconds=self.timeout) as session,
            ):
                await session.initialize()
                self.session = session
                if not ready.done():
                    ready.set_result(None)
                await self._stop.wait()
        except BaseException as error:  # the owner ends here, whatever ended it
            if not self._stop.is_set():
                self.failure = error
            if not ready.done():
                ready.set_exception(_Broken(self.explain(error), opening=True))
        finally:
            self.session = None
            self.closed.set()

    def explain(self, error: BaseException | str) -> str:
        """The error, and what the transport noted (``MCPError: Server returned an error
        response (HTTP 401 Unauthorized)``)."""
        text = error if isinstance(error, str) else describe(error)
        notes = list(dict.fromkeys(self.notes.statuses))
        return f"{text} ({', '.join(notes)})" if notes else text

    async def run(self, send: Callable[[ClientSession], Awaitable[_T]]) -> _T:
        """``send(session)``; `_Broken` when the session fails meanwhile, `_NoAnswer`
        when the request could not even be sent in time."""
        session = self.session
        if session is None or self.closed.is_set():
            raise _Broken(self.explain(self.failure or "the session is closed"), opening=False)
        call = asyncio.ensure_future(send(session))
        watch = asyncio.ensure_future(self.closed.wait())
        try:
            done, _ = await asyncio.wait(
                {call, watch},
                timeout=self.timeout + _GUARD_S,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            watch.cancel()
            if not call.done():
                call.cancel()
                call.add_done_callback(_ignore_outcome)
        if call in done:
            return call.result()
        if watch in done:
            raise _Broken(self.explain(self.failure or "the connection closed"), opening=False)
        raise _NoAnswer()

    async def aclose(self) -> None:
        """Close the session (a stdio server is stopped); wait for its owner a while."""
        self._stop.set()
        owner = self._owner
        if owner is None or owner.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(self.closed.wait()), _CLOSE_S)
        except asyncio.TimeoutError:
            owner.cancel()


def _ignore_outcome(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


class ServerLink:
    """This process's session to one server and what it listed; see the module doc."""

    def __init__(self, transport: Transport, timeout: float, retry: RetryPolicy) -> None:
        self.transport = transport
        self.timeout = timeout
        self.retry = retry
        self.listings: dict[str, Any] = {}
        """Cached listings (``tools``, ``prompts``) of this server."""
        self._session: _Session | None = None
        self._opening = asyncio.Lock()
        self._closing: set[asyncio.Future[None]] = set()
        """Failed sessions closing in the background."""

    @property
    def server(self) -> str:
        """The server as errors name it."""
        return self.transport.display

    async def _open_session(self) -> _Session:
        current = self._session
        if current is not None and not current.closed.is_set():
            return current
        async with self._opening:
            current = self._session
            if current is None or current.closed.is_set():
                current = _Session(self.transport, self.timeout)
                await current.open()
                self._session = current
            return current

    def _drop(self, session: _Session | None) -> None:
        """Stop using a failed session; it closes in the background (an HTTP session says
        goodbye to its server, which may take the timeout when the server is gone), so
        the next attempt need not wait for that."""
        if session is None:
            return
        if self._session is session:
            self._session = None
        closing = asyncio.ensure_future(session.aclose())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def request(self, what: str, send: Callable[[ClientSession], Awaitable[_T]]) -> _T:
        """``send(session)`` on this server's session, opened if need be; tried again on
        a connection failure as the retry policy says. ``what`` names the request in
        errors (``tools/call 'add'``).

        Raises `MCPConnectionError`, `MCPTimeoutError` or `MCPRequestError`.
        """
        attempt = 0
        while True:
            session: _Session | None = None
            try:
                session = await self._open_session()
                return await session.run(send)
            except _Broken as broken:
                self._drop(session)
                failure = broken
            except _NoAnswer:
                self._drop(session)  # its writes are stuck: start afresh next time
                raise self._timeout_error(what) from None
            except Exception as error:
                # A server that restarted has forgotten the session: open a new one.
                lost = session is not None and session.notes.session_lost
                if lost or _is_connection_failure(error):
                    self._drop(session)
                    explained = session.explain(error) if session is not None else error
                    failure = _Broken(explained, opening=False)
                elif isinstance(error, (TimeoutError, asyncio.TimeoutError)) or (
                    isinstance(error, MCPError) and error.code == REQUEST_TIMEOUT
                ):
                    raise self._timeout_error(what) from None
                elif isinstance(error, MCPError):
                    raise MCPRequestError(
                        f"MCP server {self.server} refused {what}: {error.message}",
                        server=self.server,
                        code=error.code,
                    ) from None
                elif isinstance(error, MCPServerError):
                    raise
                else:
                    raise MCPRequestError(
                        f"MCP server {self.server}: {what} failed: {describe(error)}",
                        server=self.server,
                    ) from error
            if attempt >= self.retry.max_retries:
                attempts = attempt + 1
                tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
                if failure.opening:
                    message = f"MCP server {self.server} is unreachable: {failure} ({tries})"
                else:
                    message = (
                        f"the connection to MCP server {self.server} failed during {what}: "
                        f"{failure} ({tries})"
                    )
                raise MCPConnectionError(message, server=self.server) from None
            wait = self.retry.wait(attempt)
            _LOG.warning(
                "MCP server %s: %s; connecting again in %.2f s (retry %d of %d)",
                self.server,
                failure,
                wait,
                attempt + 1,
                self.retry.max_retries,
            )
            await asyncio.sleep(wait)
            attempt += 1

    def _timeout_error(self, what: str) -> MCPTimeoutError:
        return MCPTimeoutError(
            f"MCP server {self.server}: no answer to {what} within {self.timeout:g} s",
            server=self.server,
        )

    async def aclose(self) -> None:
        """Close the session (if open) and forget the listings."""
        session, self._session = self._session, None
        self.listings.clear()
        if session is not None:
            await session.aclose()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


# ------------------------------------------------------------------ one link per server
#
# Engines that built a server hold its link (`hold_link`, from any thread); the last one to
# let go (`release_link`) closes it: the session ends (a stdio server is stopped) when no
# engine of the process uses the server any more, not when the first of them closes.

_links: dict[Hashable, ServerLink] = {}
_holds: dict[Hashable, int] = {}
_holds_lock = threading.Lock()


def server_link(key: Hashable, make: Callable[[], ServerLink]) -> ServerLink:
    """The process's link for ``key`` (made on first use). On the MCP loop only."""
    link = _links.get(key)
    if link is None:
        link = _links[key] = make()
    return link


async def close_link(key: Hashable) -> None:
    """Close the link for ``key``, if there is one. On the MCP loop only."""
    link = _links.pop(key, None)
    if link is not None:
        await link.aclose()


def hold_link(key: Hashable) -> None:
    """One more holder of the link for ``key`` (any thread; no connection is made)."""
    with _holds_lock:
        _holds[key] = _holds.get(key, 0) + 1


async def release_link(key: Hashable) -> None:
    """One holder fewer of the link for ``key``; the last one closes the link. On the MCP
    loop only."""
    with _holds_lock:
        left = _holds.get(key, 0) - 1
        if left > 0:
            _holds[key] = left
            return
        _holds.pop(key, None)
        # Taken out under the lock: a holder that comes now gets a new link.
        link = _links.pop(key, None)
    if link is not None:
        await link.aclose()


def holders(key: Hashable) -> int:
    """How many hold the link for ``key``."""
    with _holds_lock:
        return _holds.get(key, 0)


async def close_all_links() -> None:
    """Close every link of the process. On the MCP loop only."""
    links = list(_links.values())
    _links.clear()
    await asyncio.gather(*(link.aclose() for link in links), return_exceptions=True)


def _forget_in_child() -> None:
    global _holds_lock
    _links.clear()  # they belong to the parent's loop
    _holds.clear()  # and to the parent's engines
    _holds_lock = threading.Lock()


when_stopping(close_all_links)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
