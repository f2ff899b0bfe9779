"""The built-in chat action and the connection's limiter: an overload the limiter took is
retried when the limiter lets the call go again, not after a backoff of its own; the
limiter's work shows in the metrics."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.api import ChatModelError, ScriptedChatModelConnection
from flink_agents.api.chat_models.rate_limit import report_used_up_limit
from flink_agents.runtime import builtin_actions
from flink_agents.runtime.metrics import InMemoryMetricGroup
from flink_agents.runtime.request_gate import LimiterGate, limiter_for, use_limiter
from flink_agents.runtime.request_limiter import RequestLimiter, RequestLimits
from tests.api.fake_clock import SkippingClock
from tests.runtime.chat_agents import CONNECTION, chat_agent, only_response, run_local


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The chat action's retry waits, recorded instead of slept."""
    recorded: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(builtin_actions, "_sleep", fake_sleep)
    return recorded


def rate_limited(retry_after: float | None) -> ChatModelError:
    return ChatModelError(
        "slow down", status_code=429, retryable=True, retry_after=retry_after, kind="rate_limit"
    )


def test_an_overload_waits_in_the_limiter_for_retry_after_not_in_a_backoff_too(
    sleeps: list[float],
) -> None:
    model = ScriptedChatModelConnection(
        replies=[rate_limited(retry_after=2.0), "ok"], adaptive_limit=True
    )
    clock = SkippingClock()
    use_limiter(model, RequestLimiter(RequestLimits(), clock=clock, sleep=clock.sleep))
    outputs, runner = run_local(
        chat_agent(model), [{"key": "k", "value": "x"}], {"retry-wait-interval": 5.0}
    )
    response = only_response(outputs)
    assert response.ok and response.response is not None and response.response.text == "ok"
    assert sleeps == [0.0]  # no backoff of its own: the limiter held the retry
    assert clock.slept == [2.0]  # ... until the provider's retry-after had passed
    metrics = runner.metrics
    assert isinstance(metrics, InMemoryMetricGroup)
    limits = metrics.snapshot()["chatModelConnection"][CONNECTION]
    assert limits["overloads"] == 1
    assert limits["limiterWaits"] == 1
    assert limits["limiterWaitMs"]["mean"] == 2000.0
    # Lowered to 1 (no call in flight the provider took), raised by one when it answered.
    assert limits["concurrencyLimit"] == 2
    chat = metrics.snapshot()["chatModel"]["test-model"]
    assert chat["retries"] == 1 and chat["callLatencyMs"]["max"] < 2000.0  # the wait is not


def test_without_a_limiter_the_chat_action_backs_off_itself(sleeps: list[float]) -> None:
    model = ScriptedChatModelConnection(replies=[rate_limited(retry_after=2.0), "ok"])
    assert limiter_for(model) is None  # a function connection does not adapt by default
    outputs, runner = run_local(
        chat_agent(model), [{"key": "k", "value": "x"}], {"retry-wait-interval": 0.1}
    )
    assert only_response(outputs).ok
    assert sleeps == [2.0]
    metrics = runner.metrics
    assert isinstance(metrics, InMemoryMetricGroup)
    assert "chatModelConnection" not in metrics.snapshot()


def test_a_limiter_that_does_not_adapt_leaves_the_backoff_to_the_chat_action(
    sleeps: list[float],
) -> None:
    model = ScriptedChatModelConnection(
        replies=[rate_limited(retry_after=2.0), "ok"], max_concurrent_requests=2
    )
    outputs, runner = run_local(
        chat_agent(model), [{"key": "k", "value": "x"}], {"retry-wait-interval": 0.1}
    )
    assert only_response(outputs).ok
    assert sleeps == [2.0]
    metrics = runner.metrics
    assert isinstance(metrics, InMemoryMetricGroup)
    limits = metrics.snapshot()["chatModelConnection"][CONNECTION]
    assert limits["overloads"] == 1 and limits["concurrencyLimit"] == 2
    assert "limiterWaits" not in limits


def test_the_engine_gives_a_connection_with_limits_its_limiter() -> None:
    model = ScriptedChatModelConnection(replies=["ok"], max_concurrent_requests=1)
    assert model.request_gate is None
    outputs, _ = run_local(chat_agent(model), [{"key": "k", "value": "x"}])
    assert only_response(outputs).ok
    gate = model.request_gate  # given when the engine built the connection's resource
    assert isinstance(gate, LimiterGate) and gate.limiter is limiter_for(model)
    assert gate.limiter.limit == 1 and gate.limiter.in_flight == 0


class UsedUpConnection(ScriptedChatModelConnection):
    """Answers as scripted, and says (as a provider's headers would) that its limit is
    used up for a second."""

    def _reply(self, messages: Any, tools: Any) -> Any:
        report_used_up_limit(1.0)
        return super()._reply(messages, tools)


def test_an_answer_saying_a_limit_is_used_up_is_counted_and_lowers_the_limit() -> None:
    model = UsedUpConnection(replies=["ok"], adaptive_limit=True)
    clock = SkippingClock()
    limiter = RequestLimiter(RequestLimits(), clock=clock, sleep=clock.sleep)
    use_limiter(model, limiter)
    outputs, runner = run_local(chat_agent(model), [{"key": "k", "value": "x"}])
    assert only_response(outputs).ok
    assert limiter.used_up == 1 and limiter.paused_until is not None
    metrics = runner.metrics
    assert isinstance(metrics, InMemoryMetricGroup)
    limits = metrics.snapshot()["chatModelConnection"][CONNECTION]
    assert limits["usedUpLimits"] == 1 and limits["concurrencyLimit"] == 1
    assert "overloads" not in limits
