"""Token usage from a response, by one policy in every adapter.

Each API names its counts differently; an adapter says where they are (`UsageFields`)
and `usage_from_response` reads them. Usage is bookkeeping, not the answer, so it
never fails a call:

- No usage (absent, ``null``, not an object) gives `Usage()`: every count unknown.
- A count is kept when it is a non-negative integer; a reported 0 stays 0. A count
  that is absent, ``null`` or anything else (a string, a float, a negative number)
  is unknown: ``None``.
- ``total_tokens`` is the provider's total when it reports a valid one; otherwise the
  sum of input and output when both are known (plus the cache counts where the
  provider counts them outside its input, as Anthropic does, and the reasoning where
  it counts it outside its output, as Gemini does); otherwise unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from flink_agents.api.chat_result import Usage
from flink_agents.integrations.chat_models._sdk_objects import field

__all__ = ["UsageFields", "token_count", "usage_from_response"]


@dataclass(frozen=True)
class UsageFields:
    """Where one API's usage object holds each count: a field name, or a dotted path
    into a details object; ``None`` where the API reports no such count."""

    input_tokens: str
    output_tokens: str
    total_tokens: str | None = None
    cache_read_tokens: str | None = None
    cache_write_tokens: str | None = None
    reasoning_tokens: str | None = None
    cache_in_input: bool = True
    """False when the input count leaves out the tokens read from and written to the
    cache (Anthropic): a computed total adds them."""
    reasoning_in_output: bool = True
    """False when the output count leaves out the reasoning tokens (Gemini counts its
    thoughts apart from the candidates): a computed total adds them."""


def token_count(value: object) -> int | None:
    """``value`` when it is a non-negative integer (not a bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def usage_from_response(usage: object, fields: UsageFields) -> Usage:
    """`Usage` from a response's usage object (an SDK model, a dict, or anything the
    server sent), read where ``fields`` says (see the module doc for the policy)."""

    def count(path: str | None) -> int | None:
        if path is None:
            return None
        value = usage
        for name in path.split("."):
            value = field(value, name)
        return token_count(value)

    input_count = count(fields.input_tokens)
    output_count = count(fields.output_tokens)
    cache_read = count(fields.cache_read_tokens)
    cache_write = count(fields.cache_write_tokens)
    reasoning = count(fields.reasoning_tokens)
    total = count(fields.total_tokens)
    if total is None and input_count is not None and output_count is not None:
        total = input_count + output_count
        if not fields.cache_in_input:
            total += (cache_read or 0) + (cache_write or 0)
        if not fields.reasoning_in_output:
            total += reasoning or 0
    return Usage(
        input_tokens=input_count,
        output_tokens=output_count,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        total_tokens=total,
    )
