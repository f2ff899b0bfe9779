"""`RequestLimiter`: holds a connection's calls back until its limits let them go.

A connection's options (`flink_agents.api.chat_models.rate_limit.RequestLimitOptions`)
``max_concurrent_requests``, ``requests_per_second`` and ``tokens_per_minute`` are kept by
its limiter. With ``adaptive_limit`` (the default) it also adapts to the provider's
answers:

- the concurrency follows `AdaptiveConcurrency`: unlimited until the provider first
  signals an overload (`is_overload`: 429, 529, ``overloaded``), then additive increase
  (one per round trip while calls wait) and multiplicative decrease (`DECREASE_FACTOR` of
  the calls in flight the provider did not refuse);
- after an overload no call starts until the ``retry-after`` the provider sent has passed
  (`OVERLOAD_PAUSE_S` when it sent none; at most the caller's ``max_pause_s``,
  `MAX_PAUSE_S` by default);
- an answer whose rate-limit headers say a limit is used up (`RequestPermit.limit_used_up`:
  the provider took this call, the next would be refused) lowers the limit as an overload
  does, counting the call as taken, and pauses the connection until the provider takes a
  request again;
- while calls wait, their starts are spread over a call's latency (``latency / limit``
  apart) instead of going in waves, which a provider counts as bursts.

``max_concurrent_requests`` fixes the concurrency (it does not adapt then). Nothing the
limiter learns is kept: a new process (a restore) starts unlimited again.

Calls wait in one queue per limiter, first come first served: a call waiting for one
connection never holds a slot of another. The limiter is thread-safe and works across
event loops (a waiter is woken on its own loop). Its clock and its sleep can be injected
(tests use a fake clock). `flink_agents.runtime.request_gate` puts it before a
connection's calls.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flink_agents.api.errors import ChatModelError
from flink_agents.runtime.adaptive_concurrency import AdaptiveConcurrency
from flink_agents.runtime.request_tokens import TokenBucket

if TYPE_CHECKING:
    from flink_agents.api.chat_result import Usage

__all__ = [
    "MAX_PAUSE_S",
    "OVERLOAD_PAUSE_S",
    "RequestLimiter",
    "RequestLimits",
    "RequestPermit",
    "is_overload",
]

OVERLOAD_PAUSE_S = 1.0
"""Seconds no request starts after an overload whose answer named no ``retry-after``."""
MAX_PAUSE_S = 60.0
"""A ``retry-after`` longer than this pauses the connection this long only, unless the
caller caps pauses lower (`report_limits`' ``max_pause_s``: the built-in chat action's
``max-retry-wait-interval-s``)."""

_OVERLOAD_STATUS = frozenset({429, 529})
_OVERLOAD_KINDS = frozenset({"rate_limit", "overloaded"})


@dataclass(frozen=True)
class RequestLimits:
    """What a `RequestLimiter` keeps to (the connection's options)."""

    max_concurrent_requests: int | None = None
    """Requests in flight at once; None: adaptive (or unlimited without ``adaptive``)."""
    requests_per_second: float | None = None
    """Requests started per second, evenly spaced; None: not limited."""
    tokens_per_minute: int | None = None
    """Tokens (estimated before, corrected after each call) per minute; None: not limited."""
    adaptive: bool = True
    """Adapt to overloads: lower an unset concurrency, pause for ``retry-after``."""

    def __post_init__(self) -> None:
        if self.max_concurrent_requests is not None and self.max_concurrent_requests < 1:
            raise ValueError(
                f"max_concurrent_requests must be at least 1, got {self.max_concurrent_requests}"
            )
        rps = self.requests_per_second
        if rps is not None and not (rps > 0 and math.isfinite(rps)):
            raise ValueError(f"requests_per_second must be a positive number, got {rps}")
        if self.tokens_per_minute is not None and self.tokens_per_minute < 1:
            raise ValueError(f"tokens_per_minute must be at least 1, got {self.tokens_per_minute}")

    @property
    def limits_nothing(self) -> bool:
        """Whether a limiter of these would never hold a call back."""
        return self == RequestLimits(adaptive=False)


def is_overload(error: BaseException) -> bool:
    """Whether ``error`` says the provider is over its limit: HTTP 429 or 529, or a
    `ChatModelError` of kind ``rate_limit`` or ``overloaded``."""
    if not isinstance(error, ChatModelError):
        return False
    return error.status_code in _OVERLOAD_STATUS or error.kind in _OVERLOAD_KINDS


class _Waiter:
    __slots__ = ("future", "loop", "tokens")

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        self.loop: asyncio.AbstractEventLoop | None = None
        self.future: asyncio.Future[None] | None = None


class RequestPermit:
    """One request's place in its limiter: report how it went exactly once (`succeeded`,
    `failed` or `release`); later reports are ignored."""

    __slots__ = (
        "_done",
        "_limiter",
        "epoch",
        "limit_was_used_up",
        "max_pause_s",
        "queued",
        "started_at",
        "tokens",
        "waited_s",
    )

    def __init__(
        self,
        limiter: RequestLimiter,
        tokens: int,
        epoch: int,
        queued: bool,
        waited_s: float,
        started_at: float,
        max_pause_s: float | None = None,
    ) -> None:
        self._limiter = limiter
        self._done = False
        self.max_pause_s = max_pause_s
        """The longest pause its caller takes (None: `MAX_PAUSE_S`)."""
        self.limit_was_used_up = False
        """Whether its answer said a limit is used up (`limit_used_up`)."""
        self.started_at = started_at
        """The limiter's clock when it started."""
        self.tokens = tokens
        """Tokens taken for it (the estimate)."""
        self.epoch = epoch
        """How many times the limit had been lowered when it started."""
        self.queued = queued
        """Whether it had to wait for its turn."""
        self.waited_s = waited_s
        """Seconds it waited for its turn (0 when it went at once)."""

    def succeeded(self, usage: Usage | None = None) -> None:
        """The provider answered; ``usage`` corrects the token estimate."""
        if not self._done:
            self._done = True
            self._limiter._finish(self, usage=usage, error=None, answered=True)

    def failed(self, error: BaseException, *, max_pause_s: float | None = None) -> None:
        """The call failed with ``error`` (an overload lowers the limit and pauses the
        connection for its ``retry-after``, at most ``max_pause_s``; None: `MAX_PAUSE_S`)."""
        if not self._done:
            self._done = True
            self._limiter._finish(
                self, usage=None, error=error, answered=False, max_pause_s=max_pause_s
            )

    def limit_used_up(self, wait_s: float) -> None:
        """The provider's answer to this call says one of its rate limits is used up: no
        request is taken for ``wait_s`` seconds (`report_used_up_limit`). Heard at once,
        while the call goes on (the answer's body may still be coming)."""
        if not self._done:
            self.limit_was_used_up = True
            self._limiter._limit_used_up(self, wait_s)

    def release(self) -> None:
        """The call ended without an answer to learn from (cancelled, say)."""
        if not self._done:
            self._done = True
            self._limiter._finish(self, usage=None, error=None, answered=False)


class RequestLimiter:
    """Holds calls back until the connection's limits let them go (first come, first
    served). ``await acquire(tokens)`` returns a `RequestPermit`; report the call's end
    on it.

    ``clock`` (monotonic seconds) and ``sleep`` are injectable for tests.
    """

    def __init__(
        self,
        limits: RequestLimits,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.limits = limits
        """The limits kept to."""
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._queue: deque[_Waiter] = deque()
        self._in_flight = 0
        fixed = limits.max_concurrent_requests
        self._adaptive = AdaptiveConcurrency() if fixed is None and limits.adaptive else None
        self._fixed = math.inf if fixed is None else float(fixed)
        self._paused_until = -math.inf
        rps = limits.requests_per_second
        self._interval = 1.0 / rps if rps is not None else 0.0
        self._next_start = -math.inf
        self._latency_s: float | None = None
        self._tokens = TokenBucket(limits.tokens_per_minute, clock())
        self._output_tokens_mean: float | None = None
        # Totals since the limiter was made.
        self.waits = 0
        """Calls that had to wait for their turn."""
        self.wait_s = 0.0
        """Seconds calls waited, summed."""
        self.overloads = 0
        """Calls the provider answered with an overload (429, 529, overloaded)."""
        self.used_up = 0
        """Answers whose rate-limit headers said a limit was used up."""

    # ------------------------------------------------------------------ state

    @property
    def _limit(self) -> float:
        return self._adaptive.limit if self._adaptive is not None else self._fixed

    @property
    def limit(self) -> int | None:
        """Requests allowed in flight now (None: unlimited)."""
        limit = self._limit
        return None if math.isinf(limit) else int(limit)

    @property
    def in_flight(self) -> int:
        """Requests started and not yet reported."""
        return self._in_flight

    @property
    def queued(self) -> int:
        """Calls waiting for their turn."""
        return len(self._queue)

    @property
    def paused_until(self) -> float | None:
        """Clock time until which no request starts (after an overload), if any."""
        return self._paused_until if self._paused_until > self._clock() else None

    @property
    def tokens_available(self) -> float | None:
        """Tokens the ``tokens_per_minute`` bucket holds now (None: not limited)."""
        if not self._tokens.limited:
            return None
        with self._lock:
            return self._tokens.available(self._clock())

    @property
    def counts_tokens(self) -> bool:
        """Whether calls must say how many tokens they take (``tokens_per_minute`` set)."""
        return self._tokens.limited

    @property
    def paces_overloads(self) -> bool:
        """Whether an overload pauses the connection for its ``retry-after`` (then a
        retry needs no backoff of its own: its turn comes after the pause)."""
        return self.limits.adaptive

    def output_tokens_guess(self) -> int:
        """Output tokens to assume for a call that names no maximum: the mean reported."""
        mean = self._output_tokens_mean
        return 0 if mean is None else round(mean)

    # ------------------------------------------------------------------ acquire

    async def acquire(self, tokens: int = 0, *, max_pause_s: float | None = None) -> RequestPermit:
        """Wait for this call's turn and take its place (and ``tokens``, when
        ``tokens_per_minute`` is set). A pause after an overload holds this call at most
        ``max_pause_s`` seconds from now (None: until the pause ends). Cancelling the
        wait gives the place up."""
        tokens = max(0, int(tokens))
        with self._lock:
            started = self._clock()
            pause_end = math.inf if max_pause_s is None else started + max(0.0, max_pause_s)
            if not self._queue and self._delay(tokens, started, pause_end) == 0.0:
                return self._take(tokens, started, None, max_pause_s)
            waiter = _Waiter(tokens)
            self._queue.append(waiter)
        try:
            while True:
                loop = asyncio.get_running_loop()
                with self._lock:
                    delay: float | None = None
                    if self._queue[0] is waiter:
                        now = self._clock()
                        delay = self._delay(tokens, now, pause_end)
                        if delay == 0.0:
                            self._queue.popleft()
                            permit = self._take(tokens, now, now - started, max_pause_s)
                            self._wake_head()
                            return permit
                    waiter.loop = loop
                    waiter.future = loop.create_future()
                    future = waiter.future
                await self._wait(future, delay)
        except BaseException:
            with self._lock:
                if waiter in self._queue:
                    head = self._queue[0] is waiter
                    self._queue.remove(waiter)
                    if head:
                        self._wake_head()
            raise

    async def _wait(self, future: asyncio.Future[None], delay: float | None) -> None:
        """Until ``future`` is woken, or ``delay`` seconds (None: no time limit)."""
        if delay is None:
            await future
            return
        sleeper = asyncio.ensure_future(self._sleep(delay))
        try:
            await asyncio.wait((future, sleeper), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not sleeper.done():
                sleeper.cancel()

    def _delay(self, tokens: int, now: float, pause_end: float) -> float | None:
        """0.0 when a call of ``tokens`` may start now; else seconds until it may (None:
        until a call in flight ends). A pause holds it
        until ``pause_end`` at most. Under the lock."""
        paused_until = min(self._paused_until, pause_end)
        if paused_until > now:
            return paused_until - now
        if self._in_flight >= self._limit:
            return None
        if self._next_start > now:
            return self._next_start - now
        return self._tokens.wait_s(tokens, now)

    def _take(
        self, tokens: int, now: float, waited_s: float | None, max_pause_s: float | None
    ) -> RequestPermit:
        """Start a call that waited ``waited_s`` in the queue (None: it did not queue).
        Under the lock."""
        self._in_flight += 1
        spacing = self._spacing()
        if spacing:
            self._next_start = max(self._next_start, now) + spacing
        self._tokens.take(tokens)
        if waited_s is not None:
            self.waits += 1
            self.wait_s += waited_s
        epoch = self._adaptive.epoch if self._adaptive is not None else 0
        return RequestPermit(
            self, tokens, epoch, waited_s is not None, waited_s or 0.0, now, max_pause_s
        )

    def _spacing(self) -> float:
        """Seconds until the next call may start: ``1 / requests_per_second``; and while
        calls wait, the adaptive limit spread over a call's latency, so that they do not
        start in waves (a burst the provider counts against its rate)."""
        spacing = self._interval
        latency = self._latency_s
        if self._queue and self._adaptive is not None and latency is not None:
            spacing = max(spacing, latency / self._adaptive.limit)
        return spacing

    def _wake_head(self) -> None:
        """Wake the first waiter to look again (under the lock)."""
        if not self._queue:
            return
        waiter = self._queue[0]
        future, loop = waiter.future, waiter.loop
        if future is None or loop is None or future.done():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            future.set_result(None)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(_resolve, future)

    # ------------------------------------------------------------------ finish

    def _finish(
        self,
        permit: RequestPermit,
        *,
        usage: Usage | None,
        error: BaseException | None,
        answered: bool,
        max_pause_s: float | None = None,
    ) -> None:
        with self._lock:
            now = self._clock()
            limit_reached = bool(self._queue) or self._in_flight >= self._limit
            self._in_flight -= 1
            self._tokens.correct(permit.tokens, usage, answered, now)
            if usage is not None and usage.output_tokens is not None:
                mean = self._output_tokens_mean
                self._output_tokens_mean = (
                    usage.output_tokens if mean is None else 0.9 * mean + 0.1 * usage.output_tokens
                )
            if answered:
                latency = now - permit.started_at
                mean = self._latency_s
                self._latency_s = latency if mean is None else 0.9 * mean + 0.1 * latency
            if error is not None and is_overload(error):
                self._overloaded(permit, error, now, max_pause_s)
            elif (
                answered
                and self._adaptive is not None
                and limit_reached
                and not permit.limit_was_used_up  # it lowered the limit: it adds nothing
            ):
                self._adaptive.answered_at_limit()
            self._wake_head()

    def _overloaded(
        self, permit: RequestPermit, error: BaseException, now: float, max_pause_s: float | None
    ) -> None:
        self.overloads += 1
        if not self.limits.adaptive:
            return
        retry_after = error.retry_after if isinstance(error, ChatModelError) else None
        self._pause(now, OVERLOAD_PAUSE_S if retry_after is None else retry_after, max_pause_s)
        if self._adaptive is not None:
            self._adaptive.overloaded(permit.epoch, self._in_flight + 1)

    def _limit_used_up(self, permit: RequestPermit, wait_s: float) -> None:
        """`RequestPermit.limit_used_up`: the call was taken, the next would not be."""
        with self._lock:
            self.used_up += 1
            if not self.limits.adaptive:
                return
            self._pause(self._clock(), wait_s, permit.max_pause_s)
            if self._adaptive is not None:
                self._adaptive.limit_used_up(permit.epoch, self._in_flight)

    def _pause(self, now: float, seconds: float, max_pause_s: float | None) -> None:
        """No call starts for ``seconds`` from ``now`` (at most ``max_pause_s``, None:
        `MAX_PAUSE_S`). Under the lock."""
        cap = MAX_PAUSE_S if max_pause_s is None else max_pause_s
        self._paused_until = max(self._paused_until, now + max(0.0, min(cap, seconds)))


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
