"""How many requests a chat model connection sends at once, and how fast.

A connection's ``max_concurrent_requests``, ``requests_per_second`` and
``tokens_per_minute`` are kept by a `RequestLimiter`. With ``adaptive_limit`` (the
default) it also adapts to the provider's answers, the way TCP adapts to a network:

- until the provider first signals an overload, the concurrency is not limited: a
  burst goes out at once, at whatever concurrency the runs ask for;
- a 429, a 529 or an ``overloaded`` error (`is_overload`) lowers the concurrency it
  allows to `DECREASE_FACTOR` of the calls in flight that the provider did not refuse
  (refusals of calls that were in flight at the decrease lower it further), and no call
  starts until the ``retry-after`` the provider sent has passed (`OVERLOAD_PAUSE_S` when
  it sent none; at most the caller's ``max_pause_s``, `MAX_PAUSE_S` by default);
- after that, while calls wait, every ``limit`` answers add one to the limit (additive
  increase: one per round trip);
- while calls wait, their starts are spread over a call's latency (``latency / limit``
  apart) instead of going in waves, which a provider counts as bursts.

``max_concurrent_requests`` fixes the concurrency (it does not adapt then). Nothing the
limiter learns is kept: a new process (a restore) starts unlimited again.

Calls wait in one queue per limiter, first come first served: a call waiting for one
connection never holds a slot of another. `call_within_limits` is the one place a
call goes through its connection's limiter: `send_within_limits` for chat calls
(`BaseChatModelSetup` sends every call through it, so the built-in chat action and
``model.chat(...)`` in actions do), and the embedding model setups for theirs. A
connection declares the options by deriving from `RequestLimitOptions`.

Scope: one limiter per connection object per process (`limiter_for`). The runtime
builds a connection's object once per agent engine: one per local runner, one per
Flink subtask. So a limit applies per subtask; to keep a provider's global limit, give
each subtask its share (``requests_per_second = limit / parallelism``).

The limiter is thread-safe and works across event loops (a waiter is woken on its
own loop). Its clock and its sleep can be injected (tests use a fake clock).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field

from flink_agents.api.errors import ChatModelError

if TYPE_CHECKING:
    from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, ToolSpec
    from flink_agents.api.chat_result import ChatResult, Usage
    from flink_agents.api.message import ChatMessage

__all__ = [
    "DECREASE_FACTOR",
    "MAX_PAUSE_S",
    "OVERLOAD_PAUSE_S",
    "LimitReport",
    "RequestLimitOptions",
    "RequestLimiter",
    "RequestLimits",
    "RequestPermit",
    "call_within_limits",
    "estimate_tokens",
    "is_overload",
    "limiter_for",
    "limits_of",
    "report_limits",
    "send_within_limits",
    "use_limiter",
]

MAX_ADAPTIVE_LIMIT = 10_000
"""The adaptive limit never grows past this."""
DECREASE_FACTOR = 0.7
"""What an overload multiplies the calls in flight (that the provider did not refuse) by,
for the new adaptive limit."""
OVERLOAD_PAUSE_S = 1.0
"""Seconds no request starts after an overload whose answer named no ``retry-after``."""
MAX_PAUSE_S = 60.0
"""A ``retry-after`` longer than this pauses the connection this long only, unless the
caller caps pauses lower (`report_limits`' ``max_pause_s``: the built-in chat action's
``max-retry-wait-interval-s``)."""
CHARS_PER_TOKEN = 4
"""The token estimate's exchange rate (English text, most tokenizers)."""
MEDIA_TOKENS = 1_000
"""Tokens an image, audio, video or document block is estimated at."""

_T = TypeVar("_T")
_OVERLOAD_STATUS = frozenset({429, 529})
_OVERLOAD_KINDS = frozenset({"rate_limit", "overloaded"})
_MAX_TOKENS_PARAMS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


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


class RequestLimitOptions(BaseModel):
    """A connection's limits (its options; the connection classes of chat and embedding
    models derive from this): what its `RequestLimiter` keeps to."""

    max_concurrent_requests: int | None = Field(default=None, ge=1)
    """Requests in flight at once; None: adaptive (``adaptive_limit``) or unlimited."""
    requests_per_second: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Requests started per second, evenly spaced; None: not limited."""
    tokens_per_minute: int | None = Field(default=None, ge=1)
    """Tokens per minute, estimated before each call (characters / 4, plus ``max_tokens``
    for a chat call) and corrected by the usage the provider reports; None: not limited."""
    adaptive_limit: bool = True
    """Adapt to overloads (HTTP 429, 529, ``overloaded``): the concurrency is not limited
    until the first one, which lowers it (unless ``max_concurrent_requests`` fixes it);
    raise it again one by one while answers
    come, spread waiting calls over the provider's latency, and start no call before
    the ``retry-after`` the provider sent. False: only the limits set here; overloads
    are left to the caller's retries."""

    def rate_limiter(self) -> RequestLimiter | None:
        """This connection's `RequestLimiter` in this process (None when it limits
        nothing)."""
        return limiter_for(self)


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

    __slots__ = ("_done", "_limiter", "epoch", "queued", "started_at", "tokens", "waited_s")

    def __init__(
        self,
        limiter: RequestLimiter,
        tokens: int,
        epoch: int,
        queued: bool,
        waited_s: float,
        started_at: float,
    ) -> None:
        self._limiter = limiter
        self._done = False
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
        self._adapts_concurrency = fixed is None and limits.adaptive
        # Unlimited until the provider first signals an overload (when adaptive).
        self._limit = math.inf if fixed is None else float(fixed)
        self._successes = 0
        self._epoch = 0
        self._not_refused = 0
        """Calls in flight at the last decrease that the provider has not refused (yet)."""
        self._paused_until = -math.inf
        rps = limits.requests_per_second
        self._interval = 1.0 / rps if rps is not None else 0.0
        self._next_start = -math.inf
        self._latency_s: float | None = None
        tpm = limits.tokens_per_minute
        self._token_capacity = float(tpm) if tpm is not None else math.inf
        self._token_rate = tpm / 60.0 if tpm is not None else math.inf
        self._tokens = self._token_capacity
        self._tokens_at = clock()
        self._output_tokens_mean: float | None = None
        # Totals since the limiter was made.
        self.waits = 0
        """Calls that had to wait for their turn."""
        self.wait_s = 0.0
        """Seconds calls waited, summed."""
        self.overloads = 0
        """Calls the provider answered with an overload (429, 529, overloaded)."""

    # ------------------------------------------------------------------ state

    @property
    def limit(self) -> int | None:
        """Requests allowed in flight now (None: unlimited)."""
        return None if math.isinf(self._limit) else int(self._limit)

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
        if self.limits.tokens_per_minute is None:
            return None
        with self._lock:
            self._refill(self._clock())
            return self._tokens

    @property
    def counts_tokens(self) -> bool:
        """Whether calls must say how many tokens they take (``tokens_per_minute`` set)."""
        return self.limits.tokens_per_minute is not None

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
                return self._take(tokens, started, None)
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
                            permit = self._take(tokens, now, now - started)
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
        until a call in flight ends). A pause holds it until ``pause_end`` at most. Under
        the lock."""
        paused_until = min(self._paused_until, pause_end)
        if paused_until > now:
            return paused_until - now
        if self._in_flight >= self._limit:
            return None
        if self._next_start > now:
            return self._next_start - now
        if tokens and self._token_capacity < math.inf:
            self._refill(now)
            needed = min(float(tokens), self._token_capacity)
            if self._tokens < needed:
                return (needed - self._tokens) / self._token_rate
        return 0.0

    def _refill(self, now: float) -> None:
        if now > self._tokens_at:
            self._tokens = min(
                self._token_capacity, self._tokens + (now - self._tokens_at) * self._token_rate
            )
        self._tokens_at = now

    def _take(self, tokens: int, now: float, waited_s: float | None) -> RequestPermit:
        """Start a call that waited ``waited_s`` in the queue (None: it did not queue).
        Under the lock."""
        self._in_flight += 1
        spacing = self._spacing()
        if spacing:
            self._next_start = max(self._next_start, now) + spacing
        if tokens and self._token_capacity < math.inf:
            self._tokens -= tokens  # may go below zero: a call larger than the bucket
        if waited_s is not None:
            self.waits += 1
            self.wait_s += waited_s
        return RequestPermit(self, tokens, self._epoch, waited_s is not None, waited_s or 0.0, now)

    def _spacing(self) -> float:
        """Seconds until the next call may start: ``1 / requests_per_second``; and while
        calls wait, the adaptive limit spread over a call's latency, so that they do not
        start in waves (a burst the provider counts against its rate)."""
        spacing = self._interval
        latency = self._latency_s
        if self._queue and self._adapts_concurrency and latency is not None:
            spacing = max(spacing, latency / self._limit)
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
            if self._token_capacity < math.inf:
                self._correct_tokens(permit.tokens, usage, answered, now)
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
            elif answered and self._adapts_concurrency and limit_reached:
                self._grow()
            self._wake_head()

    def _correct_tokens(
        self, estimate: int, usage: Usage | None, answered: bool, now: float
    ) -> None:
        """Replace the estimate by what the provider reported (give it back when the call
        had no answer: a refused request is not counted)."""
        self._refill(now)
        if not answered:
            actual: int | None = 0
        elif usage is None or (usage.input_tokens is None and usage.output_tokens is None):
            actual = None
        else:
            actual = (usage.input_tokens or 0) + (usage.output_tokens or 0)
        if actual is not None:
            self._tokens = min(self._token_capacity, self._tokens + estimate - actual)

    def _grow(self) -> None:
        """One success while the limit was reached: +1 once as many successes as the limit
        have come (one per round trip)."""
        if math.isinf(self._limit):
            return
        self._successes += 1
        if self._successes >= int(self._limit):
            self._successes = 0
            self._limit = min(float(MAX_ADAPTIVE_LIMIT), self._limit + 1.0)

    def _overloaded(
        self, permit: RequestPermit, error: BaseException, now: float, max_pause_s: float | None
    ) -> None:
        self.overloads += 1
        if not self.limits.adaptive:
            return
        retry_after = error.retry_after if isinstance(error, ChatModelError) else None
        pause = OVERLOAD_PAUSE_S if retry_after is None else retry_after
        cap = MAX_PAUSE_S if max_pause_s is None else max_pause_s
        self._paused_until = max(self._paused_until, now + max(0.0, min(cap, pause)))
        if not self._adapts_concurrency:
            return
        if permit.epoch == self._epoch:
            # The first refusal since the last decrease: the calls in flight now, less
            # this one, are what the provider may have taken.
            self._not_refused = int(min(self._limit, self._in_flight + 1.0)) - 1
            self._successes = 0
            self._epoch += 1
        else:
            # A call in flight at the last decrease refused too: one fewer taken.
            self._not_refused = max(0, self._not_refused - 1)
        decreased = float(int(self._not_refused * DECREASE_FACTOR))
        self._limit = max(1.0, min(self._limit, decreased))


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


# ---------------------------------------------------------------------------- registry

# id(connection) -> (weak reference to it, its options, its limiter).
_LIMITERS: dict[int, tuple[weakref.ref[Any], tuple[Any, ...], RequestLimiter]] = {}
_LIMITERS_LOCK = threading.Lock()


def _options(connection: RequestLimitOptions) -> tuple[Any, ...]:
    return (
        connection.max_concurrent_requests,
        connection.requests_per_second,
        connection.tokens_per_minute,
        connection.adaptive_limit,
    )


def limits_of(connection: RequestLimitOptions) -> RequestLimits:
    """The `RequestLimits` a connection's options set."""
    concurrent, per_second, per_minute, adaptive = _options(connection)
    return RequestLimits(concurrent, per_second, per_minute, adaptive)


def limiter_for(connection: RequestLimitOptions) -> RequestLimiter | None:
    """This process's limiter of ``connection`` (the same object every time for the same
    connection object and options); None when its options limit nothing."""
    key = id(connection)
    options = _options(connection)
    entry = _LIMITERS.get(key)
    if entry is not None and entry[1] == options and entry[0]() is connection:
        return entry[2]
    if options == (None, None, None, False):
        return None  # limits nothing
    with _LIMITERS_LOCK:
        entry = _LIMITERS.get(key)
        if entry is not None and entry[1] == options and entry[0]() is connection:
            return entry[2]
        limiter = RequestLimiter(limits_of(connection))
        ref = weakref.ref(connection, lambda _: _LIMITERS.pop(key, None))
        _LIMITERS[key] = (ref, options, limiter)
        return limiter


def use_limiter(connection: RequestLimitOptions, limiter: RequestLimiter) -> None:
    """Make ``limiter`` the one of ``connection`` in this process: connections that share
    one account can share one limiter; a test can give one with a fake clock. It stays
    while the connection's options stay as they are."""
    key = id(connection)
    with _LIMITERS_LOCK:
        ref = weakref.ref(connection, lambda _: _LIMITERS.pop(key, None))
        _LIMITERS[key] = (ref, _options(connection), limiter)


# ---------------------------------------------------------------------------- estimate


def estimate_tokens(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None,
    params: Mapping[str, Any],
    *,
    output_guess: int = 0,
) -> int:
    """A cheap guess at what a request costs against ``tokens_per_minute``: its text
    (messages and tool descriptions) at `CHARS_PER_TOKEN` characters a token, media blocks
    at `MEDIA_TOKENS` each, plus the output it allows (``max_tokens``,
    ``max_completion_tokens`` or ``max_output_tokens``; else ``output_guess``)."""
    chars = 0
    media = 0
    for message in messages:
        for block in message.blocks:
            text = getattr(block, "text", None)
            if isinstance(text, str):
                chars += len(text)
            elif hasattr(block, "mime_type"):
                media += 1
            else:  # a tool call's input, a tool result's content
                chars += len(str(getattr(block, "input", None) or getattr(block, "content", "")))
    for tool in tools or ():
        metadata = getattr(tool, "metadata", tool)
        chars += len(getattr(metadata, "name", "")) + len(getattr(metadata, "description", ""))
        chars += len(str(getattr(metadata, "args_schema", "")))
    output = output_guess
    for name in _MAX_TOKENS_PARAMS:
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            output = value
            break
    return math.ceil(chars / CHARS_PER_TOKEN) + media * MEDIA_TOKENS + max(0, output)


# ---------------------------------------------------------------------------- sending


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


async def send_within_limits(
    connection: BaseChatModelConnection,
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None,
    params: Mapping[str, Any],
) -> ChatResult:
    """``connection.achat(messages, tools, **params)`` once its limiter lets it go; the
    answer (its usage) or the error is reported back to the limiter."""
    limiter = limiter_for(connection)
    if limiter is None:
        return await connection.achat(messages, tools, **params)
    tokens = 0
    if limiter.counts_tokens:
        guess = limiter.output_tokens_guess()
        tokens = estimate_tokens(messages, tools, params, output_guess=guess)
    return await call_within_limits(
        limiter,
        tokens,
        lambda: connection.achat(messages, tools, **params),
        lambda result: getattr(result, "usage", None),
    )


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
    permit.succeeded(usage_of(result))
    return result
