"""Which request fields go to the SDK as named arguments, and which through ``extra_body``.

The wire modules build the exact JSON body. For an adapter that calls its SDK's
``create`` (Anthropic's ``messages.create``, which sets a timeout from ``max_tokens``
and headers from some fields), fields ``create`` names as arguments get the SDK's own
handling (``user_profile_id`` becomes a header, say); any other field (a server-specific
option, a field newer than the SDK) goes through ``extra_body``, so the JSON the server
receives is the same either way. (The OpenAI adapters send their body through the
client's ``post`` instead: see ``openai._connection``.)
The SDK call options (``timeout``, ``extra_headers``...) and ``stream`` are never
taken from the body: a field of that name goes through ``extra_body`` like any other.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

__all__ = ["sdk_arguments"]

_NOT_BODY_FIELDS = frozenset(
    {"self", "extra_headers", "extra_query", "extra_body", "timeout", "stream"}
)


@cache
def _named_fields(create: Callable[..., Any]) -> frozenset[str]:
    return frozenset(inspect.signature(create).parameters) - _NOT_BODY_FIELDS


def sdk_arguments(request: Mapping[str, Any], create: Callable[..., Any]) -> dict[str, Any]:
    """Keyword arguments for ``create`` (an SDK resource's method, e.g.
    ``AsyncMessages.create``) that send ``request`` as the JSON body."""
    named = _named_fields(create)
    arguments = {key: value for key, value in request.items() if key in named}
    extra = {key: value for key, value in request.items() if key not in named}
    if extra:
        arguments["extra_body"] = extra
    return arguments
