"""The process's SDK clients: one per client settings and event loop, shared.

An async SDK client owns an HTTP connection pool, and a pool belongs to the event
loop that opened its connections. So a client is cached per (settings, running
loop): connections with the same settings share one client, and so its pool, on a
loop; connections whose settings differ in anything (key, URL, timeout, headers, the
injected HTTP client, the environment the SDK reads) never do. Nothing here travels
with a pickled connection: a worker makes its own clients on first use. Clients of a
loop that has closed are forgotten when the next client is made, and let go of on a thread
of their own (`_release_elsewhere`). A client made with ``close_at_loop_end`` (one on the
SDK's aiohttp client, whose session logs "Unclosed client session" when it is let go of
open) is closed on its loop when the loop shuts down (`asyncio.run`'s end, the Flink
operator's loop thread: their ``shutdown_asyncgens``).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import AsyncGenerator, Callable, Hashable, Mapping
from typing import Any, TypeVar

__all__ = ["SdkClientCache", "freeze", "sdk_clients"]

_C = TypeVar("_C")


class _Identity:
    """A key part that compares by identity (an injected HTTP client, a factory)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value  # held, so its id is not reused while the key lives

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.value is self.value


def freeze(value: object) -> Hashable:
    """A hashable stand-in for a settings value: dicts by their sorted items, lists as
    tuples, and anything else that is not plain data (a client, a function) by identity."""
    if value is None or isinstance(value, (str, int, float, bool, bytes)):
        return value
    if isinstance(value, Mapping):
        return tuple(sorted((str(key), freeze(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(freeze(item) for item in value)
    return _Identity(value)


class SdkClientCache:
    """SDK clients by (settings key, running event loop); thread-safe."""

    def __init__(self) -> None:
        self._clients: dict[tuple[asyncio.AbstractEventLoop, Hashable], Any] = {}
        self._to_close: dict[asyncio.AbstractEventLoop, list[Any]] = {}
        self._closers: dict[asyncio.AbstractEventLoop, AsyncGenerator[None, None]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], _C], *, close_at_loop_end: bool = False) -> _C:
        """The client for ``key`` on the running loop, made by ``make`` the first time;
        ``close_at_loop_end``: its ``close()`` is awaited on the loop when the loop shuts
        down.

        Raises ``RuntimeError`` outside a running loop (the clients are async).
        """
        loop = asyncio.get_running_loop()
        retired: list[Any] = []
        with self._lock:
            client = self._clients.get((loop, key))
            if client is None:
                retired = self._forget_closed_loops()
                client = make()
                self._clients[(loop, key)] = client
                if close_at_loop_end:
                    self._close_at_loop_end(loop, client)
        if retired:
            _release_elsewhere(retired)
        return client

    def _close_at_loop_end(self, loop: asyncio.AbstractEventLoop, client: Any) -> None:
        """Have ``client`` closed on ``loop`` when it shuts down: the loop's first such client
        starts an async generator on it (run to its first ``yield`` here, on the loop's
        thread, which registers it with the loop), and the loop's ``shutdown_asyncgens``
        closes it, running its ``finally``."""
        self._to_close.setdefault(loop, []).append(client)
        if loop in self._closers:
            return
        closer = self._closing(loop)
        self._closers[loop] = closer  # held: the loop keeps its generators weakly
        # The loop's hooks register the generator with it; this thread's are not the loop's
        # when the Flink operator thread runs the loop's callbacks itself (its inline runs).
        hooks = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(
            firstiter=getattr(loop, "_asyncgen_firstiter_hook", hooks.firstiter),
            finalizer=getattr(loop, "_asyncgen_finalizer_hook", hooks.finalizer),
        )
        try:
            with contextlib.suppress(StopIteration):
                closer.__anext__().send(None)
        finally:
            sys.set_asyncgen_hooks(*hooks)

    async def _closing(self, loop: asyncio.AbstractEventLoop) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with self._lock:
                clients = self._to_close.pop(loop, [])
                self._closers.pop(loop, None)
                for entry in [entry for entry in self._clients if entry[0] is loop]:
                    if self._clients[entry] in clients:
                        del self._clients[entry]
            for client in clients:
                with contextlib.suppress(Exception):
                    await client.close()

    def forget(self, client: object) -> None:
        """Drop ``client`` from the cache (after closing it, say)."""
        with self._lock:
            for entry, cached in list(self._clients.items()):
                if cached is client:
                    del self._clients[entry]

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)

    def _forget_closed_loops(self) -> list[Any]:
        """Drop the clients of closed loops from the cache; they are returned."""
        closed = [entry for entry in self._clients if entry[0].is_closed()]
        for loop in [loop for loop in self._closers if loop.is_closed()]:
            del self._closers[loop]  # shut down without shutdown_asyncgens: nothing runs
            self._to_close.pop(loop, None)
        return [self._clients.pop(entry) for entry in closed]


def _release_elsewhere(clients: list[Any]) -> None:
    """Let go of ``clients`` (of a closed loop; ``clients`` is emptied) on a thread that runs
    no event loop.

    The SDKs' own HTTP client, when it is let go of unclosed, schedules its closing on the
    loop running in that thread. Here that would be the new loop, while the client's
    connections belong to the closed one: the closing task fails ("Event loop is closed")
    and asyncio prints it as an exception never retrieved. On a thread without a loop the
    SDK schedules nothing and the connections' sockets are closed as they are collected.
    """
    moved = clients[:]
    clients.clear()
    threading.Thread(target=moved.clear, name="sdk-client-release", daemon=True).start()


sdk_clients = SdkClientCache()
"""The cache every provider connection of the process uses."""
