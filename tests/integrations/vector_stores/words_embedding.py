"""A deterministic embedding model setup for the vector store tests: counts of a few
words (no model, no server), and a log of the texts it embedded."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from flink_agents.api.embedding_models.embedding_model import BaseEmbeddingModelSetup

WORDS = ("refund", "shipping", "password", "invoice", "delay")
"""The vector's axes, in order (plus one for every other word)."""


def words_vector(text: str) -> list[float]:
    """One count per word of `WORDS`, and one for the rest (never all zero)."""
    tokens = re.findall(r"[a-z]+", text.lower())
    counts = [float(tokens.count(word)) for word in WORDS]
    return [*counts, float(sum(1 for t in tokens if t not in WORDS)) + 0.5]


class WordsEmbeddingSetup(BaseEmbeddingModelSetup):
    """Embeds with `words_vector`; ``dimension`` pads (or cuts) the vector."""

    connection: Any = "unused"
    model: str = "words"
    dimension: int = len(WORDS) + 1

    embedded: ClassVar[list[str]] = []
    """Every text embedded, by any instance (tests clear it)."""

    def open(self) -> None:
        """No connection to look up."""

    def embed(self, text: str | Sequence[str], **kwargs: Any) -> Any:
        if isinstance(text, str):
            WordsEmbeddingSetup.embedded.append(text)
            vector = words_vector(text)
            return (vector + [0.0] * self.dimension)[: self.dimension]
        return [self.embed(t) for t in text]
