"""What the embedding adapters share when they read an answer (`embedding_result`):
vectors as lists of floats (also from base64), the provider's token counts, one vector for
one text.

Pure functions, no I/O.
"""

from __future__ import annotations

import base64
import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from flink_agents.api.embedding_models.embedding_model import (
    EmbeddingResult,
    EmbeddingTokenUsage,
)
from flink_agents.integrations._sdk_errors import malformed_response

__all__ = ["embedding_result", "field_of"]


def field_of(value: Any, name: str) -> Any:
    """``value[name]`` of a dict (an answer's JSON), else the attribute (an SDK's typed
    answer); None when there is neither."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _as_vector(provider: str, value: Any) -> list[float]:
    """One embedding as a list of floats: a list of numbers, or base64 of little-endian
    float32 values (what OpenAI sends for ``encoding_format="base64"``)."""
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            raise malformed_response(
                provider, "an embedding is neither numbers nor base64"
            ) from None
        if len(raw) % 4:
            raise malformed_response(provider, "a base64 embedding is not float32 values")
        values = array("f")
        values.frombytes(raw)
        if sys.byteorder == "big":  # pragma: no cover - little-endian machines
            values.byteswap()
        return values.tolist()
    if not isinstance(value, Sequence):
        raise malformed_response(provider, f"an embedding is a {type(value).__name__}")
    return list(value)


def _token_usage(prompt_tokens: int | None, total_tokens: int | None) -> EmbeddingTokenUsage | None:
    """The provider's counts (either may be missing: the other stands in for it); None when
    it reported neither."""
    if prompt_tokens is None and total_tokens is None:
        return None
    prompt = prompt_tokens if prompt_tokens is not None else total_tokens
    total = total_tokens if total_tokens is not None else prompt_tokens
    return EmbeddingTokenUsage(prompt_tokens=int(prompt or 0), total_tokens=int(total or 0))


def embedding_result(
    provider: str,
    vectors: Iterable[Any],
    *,
    single: bool,
    prompt_tokens: int | None = None,
    total_tokens: int | None = None,
) -> EmbeddingResult[Any]:
    """The result of a call: the provider's ``vectors`` (in order; lists of numbers or
    base64, else a malformed answer) as lists of floats, one vector when one text was sent
    as a string (``single``), and its token counts (`_token_usage`)."""
    read = [_as_vector(provider, vector) for vector in vectors]
    usage = _token_usage(prompt_tokens, total_tokens)
    if single and len(read) == 1:
        return EmbeddingResult(embeddings=read[0], token_usage=usage)
    return EmbeddingResult(embeddings=read, token_usage=usage)  # else the setup says
