"""`max-retry-wait-interval-s` caps every retry wait, a provider's retry-after included, and
the pause of the connection's limiter after an overload."""

from __future__ import annotations

import email.utils
import math

import pytest

from flink_agents.api import ChatModelError, ScriptedChatModelConnection
from flink_agents.integrations._sdk_errors import (
    chat_model_error_from_sdk,
    parse_retry_after,
)
from flink_agents.runtime import builtin_actions
from flink_agents.runtime.builtin_actions import retry_delay
from flink_agents.runtime.request_gate import use_limiter
from flink_agents.runtime.request_limiter import RequestLimiter, RequestLimits
from tests.api.fake_clock import SkippingClock
from tests.runtime.chat_agents import chat_agent, only_response, run_local


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Retry waits, recorded instead of slept."""
    recorded: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(builtin_actions, "_sleep", fake_sleep)
    return recorded


def rate_limited(retry_after: float | None) -> ChatModelError:
    return ChatModelError(
        "rate limited", status_code=429, retryable=True, retry_after=retry_after, kind="rate_limit"
    )


def test_retry_after_longer_than_the_backoff_is_honoured_up_to_the_cap() -> None:
    assert retry_delay(0, 1.0, 10.0, retry_after=7.0) == 7.0
    assert retry_delay(0, 1.0, 10.0, retry_after=30.0) == 10.0
    assert retry_delay(0, 1.0, 2.0, retry_after=3600.0) == 2.0
    assert retry_delay(0, 1.0, 2.0, retry_after=math.inf) == 2.0


def test_a_short_or_odd_retry_after_leaves_the_backoff_as_it_is() -> None:
    for retry_after in (0.0, 0.1, math.nan):
        delay = retry_delay(2, 1.0, 60.0, retry_after=retry_after)
        assert 2.0 <= delay <= 4.0


def test_many_attempts_stay_within_the_cap() -> None:
    assert 5.0 <= retry_delay(5000, 1.0, 10.0) <= 10.0


def test_a_provider_retry_after_of_an_hour_waits_max_retry_wait_interval(
    sleeps: list[float],
) -> None:
    model = ScriptedChatModelConnection(replies=[rate_limited(3600.0), "ok"])
    outputs, _ = run_local(
        chat_agent(model), [{"key": "k", "value": "x"}], {"max-retry-wait-interval-s": 2}
    )
    response = only_response(outputs)
    assert response.ok and response.response is not None and response.response.text == "ok"
    assert sleeps == [2.0]


def test_a_limiter_pause_for_an_hours_retry_after_lasts_max_retry_wait_interval(
    sleeps: list[float],
) -> None:
    model = ScriptedChatModelConnection(replies=[rate_limited(3600.0), "ok"], adaptive_limit=True)
    clock = SkippingClock()
    limiter = RequestLimiter(RequestLimits(), clock=clock, sleep=clock.sleep)
    use_limiter(model, limiter)
    outputs, _ = run_local(
        chat_agent(model), [{"key": "k", "value": "x"}], {"max-retry-wait-interval-s": 1}
    )
    assert only_response(outputs).ok
    assert sleeps == [0.0]  # the limiter holds the retry, no backoff of the chat action's
    assert clock.slept == [1.0]  # and its pause lasts the cap, not an hour (nor 60 s)
    assert limiter.paused_until is None


class APIStatusError(Exception):
    """Shaped like the SDKs' status error (the mapping reads the class name)."""

    def __init__(self, status_code: int, headers: dict[str, str]) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code
        self.response = type("Response", (), {"headers": headers})()
        self.body = None


def test_a_far_http_date_retry_after_is_capped_by_the_same_rule(sleeps: list[float]) -> None:
    far = email.utils.formatdate(4102444800.0, usegmt=True)  # 2100-01-01
    error = chat_model_error_from_sdk(APIStatusError(429, {"retry-after": far}), provider="p")
    assert error.retry_after is not None and error.retry_after > 365 * 24 * 3600
    assert retry_delay(0, 1.0, 2.0, error.retry_after) == 2.0

    model = ScriptedChatModelConnection(replies=[error, "ok"])
    outputs, _ = run_local(
        chat_agent(model), [{"key": "k", "value": "x"}], {"max-retry-wait-interval-s": 2}
    )
    assert only_response(outputs).ok
    assert sleeps == [2.0]


NOW = 1_700_000_000.0
"""A fixed "now" (epoch seconds) for date-form values."""


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "3600"}, 3600.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "-5"}, 0.0),
        ({"retry-after": email.utils.formatdate(NOW + 90, usegmt=True)}, 90.0),
        ({"retry-after": email.utils.formatdate(NOW - 90, usegmt=True)}, 0.0),
        # "-0000" makes a naive datetime: still UTC, not local time.
        ({"retry-after": email.utils.formatdate(NOW + 30)}, 30.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": ""}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after-ms": "1e400"}, None),
        ({}, None),
        # Without retry-after: until a used-up limit resets.
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"}, 1.0),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, 360.0),
        ({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "20ms"}, 0.02),
        (
            {
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "1.5s",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-tokens": "1m30s",
            },
            90.0,
        ),
        ({"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "9s"}, None),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "soon"}, None),
        (
            {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "9s"}
            | {"retry-after": "2"},
            2.0,
        ),
        (
            {
                "anthropic-ratelimit-requests-remaining": "0",
                "anthropic-ratelimit-requests-reset": "2023-11-14T22:13:40Z",  # NOW + 20
            },
            20.0,
        ),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == pytest.approx(expected)


def test_an_unparsable_retry_after_still_maps_to_a_retryable_error() -> None:
    error = chat_model_error_from_sdk(APIStatusError(503, {"retry-after": "later"}), provider="p")
    assert (error.retryable, error.retry_after, error.kind) == (True, None, "server")
