"""`is_async_callable`: what the runtime awaits and what it runs in a thread."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.api._callables import is_async_callable


async def fetch(url: str, *, timeout: float = 1.0) -> str:
    return url


def read(path: str) -> str:
    return path


class Client:
    async def get(self, url: str) -> str:
        return url

    def close(self) -> None:
        return None

    @staticmethod
    async def ping() -> None:
        return None

    @classmethod
    async def connect(cls) -> Client:
        return cls()


class AsyncTool:
    async def __call__(self, query: str) -> str:
        return query


class SyncTool:
    def __call__(self, query: str) -> str:
        return query


ASYNC: list[Callable[..., Any]] = [
    fetch,
    Client().get,
    Client.ping,
    Client.connect,
    AsyncTool(),
    functools.partial(fetch, "u"),
    functools.partial(functools.partial(fetch, "u"), timeout=2.0),
    functools.partial(Client().get, "u"),
    functools.partial(AsyncTool(), "q"),
]

SYNC: list[Callable[..., Any]] = [
    read,
    lambda: None,
    Client().close,
    SyncTool(),
    AsyncTool,  # calling the class builds an instance
    functools.partial(read, "p"),
    functools.partial(SyncTool(), "q"),
    len,
    [].append,
]


@pytest.mark.parametrize("func", ASYNC)
def test_async_callables(func: Callable[..., Any]) -> None:
    assert is_async_callable(func) is True


@pytest.mark.parametrize("func", SYNC)
def test_sync_callables(func: Callable[..., Any]) -> None:
    assert is_async_callable(func) is False


def test_is_awaitable_takes_what_await_takes() -> None:
    import asyncio
    import types

    from flink_agents.api._callables import is_awaitable

    async def native() -> int:
        return 1

    @types.coroutine
    def generator_based() -> Any:
        yield

    def plain_generator() -> Any:
        yield

    class HasAwait:
        def __await__(self) -> Any:
            return iter(())

    class InheritsAwait(HasAwait):
        pass

    class AwaitableClasses(type):
        def __await__(cls) -> Any:
            return iter(())

    class ByMetaclass(metaclass=AwaitableClasses):
        pass

    class Model(BaseModel):
        text: str = ""

    coroutine, old_style, generator = native(), generator_based(), plain_generator()
    loop = asyncio.new_event_loop()
    try:
        future = loop.create_future()
        assert is_awaitable(coroutine) and is_awaitable(old_style) and is_awaitable(future)
        assert is_awaitable(HasAwait()) and is_awaitable(InheritsAwait())
        # A class with an awaitable metaclass is awaitable, its instances are not (await
        # looks at the instance's type, not at what the type's own type has).
        assert is_awaitable(ByMetaclass) and not is_awaitable(ByMetaclass())
        for value in ("text", {"a": 1}, [1], None, 3, generator, HasAwait, native, Model()):
            assert not is_awaitable(value), value
    finally:
        coroutine.close()
        old_style.close()
        loop.close()
