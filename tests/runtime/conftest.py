"""Fixtures shared by the runtime's tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of each test: lets every hung sync call (a tool, an action) return."""
    event = threading.Event()
    yield event
    event.set()
