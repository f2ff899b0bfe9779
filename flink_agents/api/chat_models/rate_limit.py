"""What a connection declares about how many requests it sends and how fast.

Chat and embedding model connections derive from `RequestLimitOptions`: its fields are the
options ``max_concurrent_requests``, ``requests_per_second``, ``tokens_per_minute`` and
``adaptive_limit`` (docs/providers.md, "Rate limits"). The runtime keeps them: it gives
each connection it builds a `RequestGate` (its request limiter,
``flink_agents.runtime.request_limiter``), and the chat and embedding model setups send
every call through their connection's gate. A connection with no gate (one that limits
nothing, or that no runtime built) sends at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field, PrivateAttr

from flink_agents._compat.pydantic import private_values

if TYPE_CHECKING:
    from flink_agents.api.chat_models.chat_model import ToolSpec
    from flink_agents.api.chat_result import ChatResult
    from flink_agents.api.embedding_models.embedding_model import EmbeddingResult
    from flink_agents.api.message import ChatMessage

__all__ = ["RequestGate", "RequestLimitOptions"]


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
