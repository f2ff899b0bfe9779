"""A local embedding model that needs no server and downloads nothing: WordLlama.

`wordllama <https://pypi.org/project/wordllama/>`_ (MIT) ships its ``l2_supercat`` model
(token embeddings distilled from Llama 2's, 256 dimensions, 16 MB of weights and its
tokenizer) inside the wheel. A text's vector is the average of its tokens' vectors: no
neural network runs, a few thousand texts a second on one core, and it is
deterministic. Good enough for retrieval over a small knowledge base, demos and tests
that must not reach a provider; a hosted model (OpenAI, Tongyi, Ollama's) embeds
meaning better.

The model is loaded from the package's own files (downloads disabled), once per process
and per dimension, on the first call. Install it with the ``local-embeddings`` extra
(``pip install 'pyflink-agents[local-embeddings]'``).

Not in upstream (Apache Flink Agents); named ``ResourceName.EmbeddingModel.WORDLLAMA_*``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

try:
    import wordllama
    from wordllama import WordLlama
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the local embedding model needs the wordllama package: "
        "pip install 'pyflink-agents[local-embeddings]'"
    ) from exc

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
    EmbeddingResult,
)

__all__ = [
    "DEFAULT_DIMENSIONS",
    "MODEL",
    "WordLlamaEmbeddingModelConnection",
    "WordLlamaEmbeddingModelSetup",
]

MODEL = "l2_supercat"
"""The model the wheel carries (its only one: another would be downloaded)."""
DEFAULT_DIMENSIONS = 256
"""The model's full dimension."""

Dimensions = Literal[64, 128, 256]
"""The dimensions the model gives (a shorter vector is the full one's start, Matryoshka)."""

_PACKAGE_FILES = Path(wordllama.__file__).parent
"""Where the wheel keeps ``weights/`` and ``tokenizers/`` (given as the loader's cache
directory, it finds both there: the package's own lookup misses the tokenizer)."""
_models: dict[int, Any] = {}
_models_lock = threading.Lock()


def _model(dimensions: int) -> Any:
    """The loaded model of ``dimensions`` in this process (loaded once, about 0.7 s)."""
    model = _models.get(dimensions)
    if model is None:
        with _models_lock:
            model = _models.get(dimensions)
            if model is None:
                model = WordLlama.load(
                    config=MODEL,
                    dim=DEFAULT_DIMENSIONS,
                    trunc_dim=None if dimensions == DEFAULT_DIMENSIONS else dimensions,
                    cache_dir=_PACKAGE_FILES,
                    disable_download=True,
                )
                _models[dimensions] = model
    return model


class WordLlamaEmbeddingModelConnection(BaseEmbeddingModelConnection):
    """The WordLlama model in this process: no server, no key, no download.

    A call takes ``model`` (only ``l2_supercat``), ``dimensions`` (64, 128 or 256) and
    ``normalize`` (vectors of length 1, for cosine similarity by dot product). The model
    runs on the calling thread (an ``async`` caller's call goes to a worker thread).
    """

    def embed(self, text: str | Sequence[str], **kwargs: Any) -> list[float] | list[list[float]]:
        """The vector of ``text``, or of each text of a list."""
        return self.embed_with_usage(text, **kwargs).embeddings

    def embed_with_usage(
        self, text: str | Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[list[float] | list[list[float]]]:
        """`embed` in an `EmbeddingResult` (no token usage: nothing is billed)."""
        model_name = kwargs.pop("model", MODEL)
        dimensions = int(kwargs.pop("dimensions", None) or DEFAULT_DIMENSIONS)
        normalize = bool(kwargs.pop("normalize", True))
        _check_model(model_name, dimensions)
        if kwargs:
            raise ValueError(
                f"the local embedding model takes no parameter {sorted(kwargs)} "
                "(it takes model, dimensions and normalize)"
            )
        texts = [text] if isinstance(text, str) else list(text)
        matrix = _model(dimensions).embed(texts, norm=normalize, return_np=True)
        vectors: list[list[float]] = matrix.tolist()
        if isinstance(text, str):
            return EmbeddingResult(embeddings=vectors[0])
        return EmbeddingResult(embeddings=vectors)


def _check_model(model: str, dimensions: int) -> None:
    if model != MODEL:
        raise ValueError(
            f"the local embedding model has only the model {MODEL!r} (the one its package "
            f"carries), not {model!r}"
        )
    if dimensions not in (64, 128, 256):
        raise ValueError(
            f"the local embedding model gives 64, 128 or 256 dimensions, not {dimensions}"
        )


class WordLlamaEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """Options of the local model: ``dimensions`` and ``normalize``."""

    model: str = MODEL
    """Only ``l2_supercat`` (the model the package carries)."""
    dimensions: Dimensions = DEFAULT_DIMENSIONS
    """64, 128 or 256 (the default): a shorter vector is the start of the full one."""
    normalize: bool = True
    """Scale every vector to length 1 (cosine similarity is then a dot product)."""

    def model_post_init(self, context: Any, /) -> None:
        """Refuses a model the package does not carry, when the setup is made."""
        super().model_post_init(context)
        _check_model(self.model, self.dimensions)

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The model, ``dimensions`` and ``normalize``."""
        return {"model": self.model, "dimensions": self.dimensions, "normalize": self.normalize}

    @property
    def expected_dimensions(self) -> int | None:
        """``dimensions``."""
        return self.dimensions
