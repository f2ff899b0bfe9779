"""What a connection declares about how many requests it sends and how fast.

Chat and embedding model connections derive from `RequestLimitOptions`: its fields are the
options ``max_concurrent_requests``, ``requests_per_second``, ``tokens_per_minute`` and
``adaptive_limit`` (docs/providers.md, "Rate limits"). The runtime keeps them: it gives
each connection it builds a `RequestGate` (its request limiter,
``flink_agents.runtime.request_limiter``), and the chat and embedding model setups send
every call through their connection's gate. A connection with no gate (one that limits
nothing, or that no runtime built) sends at once.

A connection that reads a provider's rate-limit headers on a successful answer says so
with `report_used_up_limit` when one of the provider's limits is used up (the next request
would be refused): the gate of the call in progress takes it as an overload.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field, PrivateAttr

from flink_agents._compat.pydantic import private_values

if TYPE_CHECKING:
    from flink_agents.api.chat_models.chat_model import ToolSpec
    from flink_agents.api.chat_result import ChatResult
    from flink_agents.api.embedding_models.embedding_model import EmbeddingResult
    from flink_agents.api.message import ChatMessage

__all__ = [
    "RequestGate",
    "RequestLimitOptions",
    "bind_used_up_limits",
    "release_used_up_limits",
    "report_used_up_limit",
]

UsedUpLimits = Callable[[float], None]
"""What hears of a used-up limit: called with the seconds until the provider takes a
request again."""

_USED_UP_LIMITS: ContextVar[UsedUpLimits | None] = ContextVar(
    "flink_agents_used_up_limits", default=None
)


def report_used_up_limit(wait_s: float) -> None:
    """An answer the provider gave said one of its rate limits is used up (its remaining
    count is 0): no request will be taken for ``wait_s`` seconds. Called by a connection
    while its call is in progress; the call's gate (`bind_used_up_limits`) takes it as an
    overload. Outside a gated call it does nothing."""
    heard = _USED_UP_LIMITS.get()
    if heard is not None:
        heard(wait_s)


def bind_used_up_limits(heard: UsedUpLimits) -> Token[UsedUpLimits | None]:
    """While a call is in progress (in this context and copies of it), `report_used_up_limit`
    goes to ``heard``, until `release_used_up_limits` gets the token back (a gate's
    per-call path)."""
    return _USED_UP_LIMITS.set(heard)


def release_used_up_limits(token: Token[UsedUpLimits | None]) -> None:
    """Ends the binding `bind_used_up_limits` made (in the same context)."""
    _USED_UP_LIMITS.reset(token)


class RequestGate(Protocol):
    """What a connection's calls go through (given by the runtime): each waits until the
    connection's limits let it go, and its answer or error is reported back."""

    async def send_chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None,
        params: Mapping[str, Any],
        call: Callable[[], Awaitable[ChatResult]],
    ) -> ChatResult:
        """``await call()`` (a chat request of ``messages``, ``tools``, ``params``) in its
        turn."""
        ...

    async def send_embedding(
        self,
        texts: str | Sequence[str],
        call: Callable[[], Awaitable[EmbeddingResult[Any]]],
    ) -> EmbeddingResult[Any]:
        """``await call()`` (an embedding request of ``texts``) in its turn."""
        ...


class RequestLimitOptions(BaseModel):
    """A connection's limits (its options; the connection classes of chat and embedding
    models derive from this)."""

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
    raise it again one by one while answers come, spread waiting calls over the provider's
    latency, and start no call before the ``retry-after`` the provider sent. False: only
    the limits set here; overloads are left to the caller's retries."""

    _request_gate: RequestGate | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        # Defined so that pydantic wraps this (it initialises the private attribute, then
        # calls it) instead of putting in a model_post_init that ends the chain: a mixin
        # after this class in a connection's MRO (`ProviderClient`) still gets its call.
        super().model_post_init(context)

    @property
    def request_gate(self) -> RequestGate | None:
        """What this connection's calls go through (None: nothing, they go at once)."""
        # Read on every call: from the private values, not through pydantic's __getattr__.
        private = private_values(self)
        return private.get("_request_gate") if private else None

    def use_request_gate(self, gate: RequestGate | None) -> None:
        """Send this connection's calls through ``gate`` (the runtime's request limiter)."""
        self._request_gate = gate

    def __getstate__(self) -> dict[Any, Any]:
        # A gate belongs to a process (its limiter's lock, its waiters): a connection that
        # travels gets its own where it lands.
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private and private.get("_request_gate") is not None:
            state = {**state, "__pydantic_private__": {**private, "_request_gate": None}}
        return state
