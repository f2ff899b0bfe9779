"""Fixtures the adapter tests share: one fake provider server per test module.

``shared_server`` is module-scoped (shutting a server down takes about half a second);
``server`` is the same server for one test, its recorded requests and scripted replies
cleared before and after. A module that needs a server of its own (one with a
responder) defines its own ``server`` fixture, which takes precedence.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.http_server import FakeProviderServer


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def _clear(server: FakeProviderServer) -> None:
    server.requests.clear()
    server._queue.clear()


@pytest.fixture
def server(shared_server: FakeProviderServer) -> Iterator[FakeProviderServer]:
    _clear(shared_server)
    yield shared_server
    _clear(shared_server)
