"""Tokens against a connection's ``tokens_per_minute``: the estimate of a request made
before it is sent (`estimate_tokens`), and the bucket that holds calls back until a
minute's tokens allow them (`TokenBucket`), corrected by the usage the provider reports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flink_agents.api.chat_models.chat_model import ToolSpec
    from flink_agents.api.chat_result import Usage
    from flink_agents.api.message import ChatMessage

__all__ = ["CHARS_PER_TOKEN", "MEDIA_TOKENS", "TokenBucket", "estimate_tokens", "text_tokens"]

CHARS_PER_TOKEN = 4
"""The token estimate's exchange rate (English text, most tokenizers)."""
MEDIA_TOKENS = 1_000
"""Tokens an image, audio, video or document block is estimated at."""

_MAX_TOKENS_PARAMS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def text_tokens(chars: int) -> int:
    """The tokens ``chars`` characters of text are estimated at."""
    return math.ceil(chars / CHARS_PER_TOKEN)


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
    return text_tokens(chars) + media * MEDIA_TOKENS + max(0, output)


class TokenBucket:
    """``per_minute`` tokens a minute, refilled continuously, holding a minute's worth at
    most (None: unlimited, it never holds a call back). Not thread-safe: its limiter's
    lock guards it."""

    __slots__ = ("_at", "_capacity", "_rate", "_tokens")

    def __init__(self, per_minute: int | None, now: float) -> None:
        self._capacity = float(per_minute) if per_minute is not None else math.inf
        self._rate = per_minute / 60.0 if per_minute is not None else math.inf
        self._tokens = self._capacity
        self._at = now

    @property
    def limited(self) -> bool:
        """Whether it limits anything."""
        return self._capacity < math.inf

    def available(self, now: float) -> float:
        """Tokens it holds now."""
        self._refill(now)
        return self._tokens

    def wait_s(self, tokens: int, now: float) -> float:
        """Seconds until a call of ``tokens`` may start (0.0: now); a call larger than the
        bucket waits for a full one."""
        if not tokens or not self.limited:
            return 0.0
        self._refill(now)
        needed = min(float(tokens), self._capacity)
        return 0.0 if self._tokens >= needed else (needed - self._tokens) / self._rate

    def take(self, tokens: int) -> None:
        """A call of ``tokens`` started (the bucket may go below zero: a call larger than
        it)."""
        if tokens and self.limited:
            self._tokens -= tokens

    def correct(self, estimate: int, usage: Usage | None, answered: bool, now: float) -> None:
        """Replace a call's estimate by what the provider reported (give it back when the
        call had no answer: a refused request is not counted; keep it when the answer
        reported no usage)."""
        if not self.limited:
            return
        self._refill(now)
        if not answered:
            actual: int | None = 0
        elif usage is None or (usage.input_tokens is None and usage.output_tokens is None):
            actual = None
        else:
            actual = (usage.input_tokens or 0) + (usage.output_tokens or 0)
        if actual is not None:
            self._tokens = min(self._capacity, self._tokens + estimate - actual)

    def _refill(self, now: float) -> None:
        if now > self._at:
            self._tokens = min(self._capacity, self._tokens + (now - self._at) * self._rate)
        self._at = now
