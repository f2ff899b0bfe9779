"""Errors shared by the message model, the provider adapters and the runtime."""

from __future__ import annotations

__all__ = [
    "ChatModelError",
    "UnsupportedContentBlockError",
]


class UnsupportedContentBlockError(ValueError):
    """A provider cannot take a content block (a media type, a source, a role).

    Raised while a request is built, so nothing is sent. The message names the
    block type and the reason, never a URL or media data.
    """

    def __init__(self, block_type: str, reason: str, *, provider: str | None = None) -> None:
        self.block_type = block_type
        self.reason = reason
        self.provider = provider
        where = f" by {provider}" if provider else ""
        super().__init__(f"{block_type} block is not supported{where}: {reason}")


class ChatModelError(Exception):
    """A chat model call failed: the provider said no, or could not be reached.

    ``retryable`` tells the built-in chat action whether trying again can help
    (rate limits, 5xx, timeouts, connection errors) or not (bad request,
    authentication, unsupported media, a malformed response).
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        provider: str | None = None,
        kind: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        """The provider's message (never the API key)."""
        self.status_code = status_code
        """HTTP status, when there was a response."""
        self.retryable = retryable
        """Whether the same request may succeed later."""
        self.retry_after = retry_after
        """Seconds the server asked to wait before retrying, when it said."""
        self.provider = provider
        """Which provider API failed."""
        self.kind = kind
        """A short category: ``rate_limit``, ``server``, ``timeout``, ``connection``,
        ``bad_request``, ``authentication``, ``malformed_response``..."""

    def __repr__(self) -> str:
        return (
            f"ChatModelError({self.message!r}, status_code={self.status_code!r}, "
            f"retryable={self.retryable!r}, kind={self.kind!r})"
        )
