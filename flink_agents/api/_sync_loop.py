"""`run_on_sync_loop`: the one background event loop behind the API's blocking calls.

A blocking model call (``setup.chat(...)``, ``setup.embed(...)``) runs its coroutine on
this loop and waits for it. Every such call shares the loop, so async SDK clients (whose
connection pools belong to the loop they first ran on) are made once and reused, whether
or not the caller is itself inside a running loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_on_sync_loop"]

_T = TypeVar("_T")
_sync_loop: asyncio.AbstractEventLoop | None = None
_sync_loop_lock = threading.Lock()


def run_on_sync_loop(
    coro: Coroutine[Any, Any, _T], *, call: str = "chat()", instead: str = "achat()"
) -> _T:
    """Run ``coro`` on the long-lived background loop and wait for its result.

    A blocking ``call`` made from inside that loop itself would wait for ever: it raises
    ``RuntimeError`` saying to await ``instead``.
    """
    global _sync_loop
    with _sync_loop_lock:
        if _sync_loop is None or _sync_loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="flink-agents-sync-chat", daemon=True
            ).start()
            _sync_loop = loop
        loop = _sync_loop
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError(f"{call} was called from inside its own loop; await {instead} instead")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()
