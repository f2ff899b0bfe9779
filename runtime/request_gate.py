"""How a connection's calls go through its `RequestLimiter`: the runtime's side of the
API's `RequestGate` (`flink_agents.api.chat_models.rate_limit`).

The agent engine gives every connection it builds that declares limits a `LimiterGate`
(`gate_requests`); the API's chat and embedding model setups send each call through their
connection's gate, which waits for the limiter, sends, and reports the answer (its usage)
or the error back to it. `call_within_limits` is that one path; the built-in chat action
reads what the limiter did to its calls through `report_limits`.

Scope: one limiter per connection object (`limiter_for`). The runtime builds a
connection's object once per agent engine: one per local runner, one per Flink subtask. So
a limit applies per subtask; to keep a provider's global limit, give each subtask its share
(``requests_per_second = limit / parallelism``).
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from flink_agents.api.chat_models.rate_limit import (
    RequestLimitOptions,
    bind_used_up_limits,
    release_used_up_limits,
)
from flink_agents.api.chat_result import Usage
from flink_agents.api.errors import ChatModelError
from flink_agents.runtime.request_limiter import RequestLimiter, RequestLimits, is_overload
from flink_agents.runtime.request_tokens import estimate_tokens, text_tokens

if TYPE_CHECKING:
    from flink_agents.api.chat_models.chat_model import ToolSpec
    from flink_agents.api.chat_result import ChatResult
    from flink_agents.api.embedding_models.embedding_model import EmbeddingResult
    from flink_agents.api.message import ChatMessage

__all__ = [
    "LimitReport",
    "LimiterGate",
    "call_within_limits",
    "gate_requests",
    "limiter_for",
    "limits_of",
    "report_limits",
    "use_limiter",
]

_T = TypeVar("_T")
_GATES_LOCK = threading.Lock()


# ---------------------------------------------------------------------------- report


@dataclass
class LimitReport:
    """What the limiter did to the calls made inside `report_limits` (for metrics)."""

    limiter: RequestLimiter | None = None
    """The limiter the last call went through (None: no limiter)."""
    waits: int = 0
    """Calls that waited for their turn."""
    wait_s: float = 0.0
    """Seconds they waited."""
    overloads: int = 0
    """Calls the provider answered with an overload."""
    used_up: int = 0
    """Answers whose rate-limit headers said a limit was used up."""
    paced: bool = False
    """Whether the last overload paused the connection (a retry then waits its turn
    instead of a backoff of its own)."""
    max_pause_s: float | None = None
    """The longest a pause after an overload holds a call made in this block, and the
    longest pause its overloads set (None: `MAX_PAUSE_S`)."""


_REPORT: ContextVar[LimitReport | None] = ContextVar("flink_agents_limit_report", default=None)


class _ReportScope:
    """The block of `report_limits` (a plain context manager: it wraps every model call)."""

    __slots__ = ("_report", "_token")

    def __init__(self, max_pause_s: float | None) -> None:
        self._report = LimitReport(max_pause_s=max_pause_s)
        self._token: Token[LimitReport | None] | None = None

    def __enter__(self) -> LimitReport:
        self._token = _REPORT.set(self._report)
        return self._report

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _REPORT.reset(self._token)
            self._token = None


def report_limits(max_pause_s: float | None = None) -> AbstractContextManager[LimitReport]:
    """Collect a `LimitReport` of the calls made in this block (in this context); a pause
    after an overload holds them, and lasts, at most ``max_pause_s`` seconds (None:
    `MAX_PAUSE_S`)."""
    return _ReportScope(max_pause_s)


# ---------------------------------------------------------------------------- sending


async def call_within_limits(
    limiter: RequestLimiter | None,
    tokens: int,
    call: Callable[[], Awaitable[_T]],
    usage_of: Callable[[_T], Usage | None],
) -> _T:
    """``await call()`` once ``limiter`` lets a request of ``tokens`` (estimated) go; the
    answer's usage (``usage_of``) or the error is reported back to the limiter, and the
    wait to the caller's `report_limits`. No limiter: at once."""
    if limiter is None:
        return await call()
    report = _REPORT.get()
    max_pause_s = report.max_pause_s if report is not None else None
    permit = await limiter.acquire(tokens, max_pause_s=max_pause_s)
    if report is not None:
        report.limiter = limiter
        if permit.queued:
            report.waits += 1
            report.wait_s += permit.waited_s
    # A connection that reads rate-limit headers tells the permit of a used-up limit.
    heard = bind_used_up_limits(permit.limit_used_up)
    try:
        result = await call()
    except ChatModelError as exc:
        permit.failed(exc, max_pause_s=max_pause_s)
        if report is not None and is_overload(exc):
            report.overloads += 1
            report.paced = limiter.paces_overloads
        raise
    except BaseException:
        permit.release()
        raise
    finally:
        release_used_up_limits(heard)
    permit.succeeded(usage_of(result))
    if report is not None and permit.limit_was_used_up:
        report.used_up += 1
    return result


class LimiterGate:
    """A connection's `RequestGate`: its calls wait for ``limiter``."""

    __slots__ = ("limiter",)

    def __init__(self, limiter: RequestLimiter) -> None:
        self.limiter = limiter
        """The limiter the calls go through."""

    def __deepcopy__(self, memo: dict[int, Any]) -> LimiterGate:
        # A copy of a connection sends through the same limiter (a limiter holds a lock
        # and its waiters: it is not copied).
        return self

    async def send_chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None,
        params: Mapping[str, Any],
        call: Callable[[], Awaitable[ChatResult]],
    ) -> ChatResult:
        tokens = 0
        if self.limiter.counts_tokens:
            guess = self.limiter.output_tokens_guess()
            tokens = estimate_tokens(messages, tools, params, output_guess=guess)
        return await call_within_limits(self.limiter, tokens, call, _chat_usage)

    async def send_embedding(
        self,
        texts: str | Sequence[str],
        call: Callable[[], Awaitable[EmbeddingResult[Any]]],
    ) -> EmbeddingResult[Any]:
        tokens = 0
        if self.limiter.counts_tokens:
            chars = len(texts) if isinstance(texts, str) else sum(len(t) for t in texts)
            tokens = text_tokens(chars)
        return await call_within_limits(self.limiter, tokens, call, _embedding_usage)


def _chat_usage(result: ChatResult) -> Usage | None:
    return getattr(result, "usage", None)


def _embedding_usage(result: EmbeddingResult[Any]) -> Usage | None:
    usage = result.token_usage
    if usage is None:
        return None
    return Usage(input_tokens=usage.prompt_tokens, output_tokens=0, total_tokens=usage.total_tokens)


# ---------------------------------------------------------------------------- per connection


def limits_of(connection: RequestLimitOptions) -> RequestLimits:
    """The `RequestLimits` a connection's options set."""
    return RequestLimits(
        connection.max_concurrent_requests,
        connection.requests_per_second,
        connection.tokens_per_minute,
        connection.adaptive_limit,
    )


def limiter_for(connection: RequestLimitOptions) -> RequestLimiter | None:
    """The limiter of ``connection`` (the same every time for the same connection object;
    made and given to it as its gate the first time); None when its options limit nothing
    and it has none."""
    gate = connection.request_gate
    if isinstance(gate, LimiterGate):
        return gate.limiter
    with _GATES_LOCK:
        gate = connection.request_gate
        if isinstance(gate, LimiterGate):
            return gate.limiter
        limits = limits_of(connection)
        if limits.limits_nothing:
            return None
        limiter = RequestLimiter(limits)
        connection.use_request_gate(LimiterGate(limiter))
        return limiter


def gate_requests(resource: object) -> None:
    """Give ``resource``, when it is a connection with limits, its limiter as its gate
    (the agent engine calls this for every resource it builds)."""
    if isinstance(resource, RequestLimitOptions):
        limiter_for(resource)


def use_limiter(connection: RequestLimitOptions, limiter: RequestLimiter) -> None:
    """Make ``limiter`` the one of ``connection``: connections that share one account can
    share one limiter; a test can give one with a fake clock."""
    with _GATES_LOCK:
        connection.use_request_gate(LimiterGate(limiter))
