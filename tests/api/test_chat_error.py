"""`ChatError`: the event form of a failed chat request never carries a secret."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flink_agents.api.errors import ChatModelError
from flink_agents.api.events.chat_event import ChatError, ChatResponseEvent
from flink_agents.api.redaction import clear_registered_secrets, register_secret

PLAIN_KEY = "ak-live-Zq81LmPq04XyTt7Rw3"


@pytest.fixture(autouse=True)
def no_registered_secrets() -> Iterator[None]:
    clear_registered_secrets()
    yield
    clear_registered_secrets()


def test_from_model_error_redacts_the_message() -> None:
    register_secret(PLAIN_KEY)
    error = ChatModelError(
        f"anthropic returned HTTP 401: invalid x-api-key {PLAIN_KEY}",
        status_code=401,
        provider="anthropic",
        kind="authentication",
    )
    chat_error = ChatError.from_model_error(error)
    assert chat_error.message == "anthropic returned HTTP 401: invalid x-api-key ***7Rw3"
    assert (chat_error.kind, chat_error.status_code) == ("authentication", 401)


def test_every_chat_error_is_redacted_and_so_is_the_event() -> None:
    error = ChatError(
        message='bad request: {"api_key": "sk-abc0123456789abcdef", "url": "data:image/png;'
        'base64,iVBORw0KGgoAAAANSUhEUg=="}',
        kind="bad_request",
    )
    expected = (
        'bad request: {"api_key": "***cdef", "url": "data:image/png;base64,<16 bytes redacted>"}'
    )
    assert error.message == expected
    event = ChatResponseEvent(request_id="r1", error=error)
    restored = ChatResponseEvent.from_json(event.to_json())
    assert isinstance(restored, ChatResponseEvent)
    assert restored.error is not None and restored.error.message == expected
