"""Embedding model resources: the connection (transport) and the setup (model and options).

Upstream's module (Apache Flink Agents), names and signatures: a connection embeds text
with ``embed(text, **kwargs)`` (one vector for a string, one per text for a list) and
``embed_with_usage`` (the same in an `EmbeddingResult`, with the provider's token counts
when it reports them); a setup names its connection and model and adds its
``model_kwargs`` to every call.

What a setup adds here (a call through the setup, as agents and vector stores make):

- text is checked before anything is sent: an empty string (or only whitespace), an empty
  list, or what is not a string raises `EmbeddingInputError`;
- a list longer than ``batch_size`` texts goes in requests of that many, one after the
  other;
- the call waits for the connection's limits (``max_concurrent_requests``,
  ``requests_per_second``, ``tokens_per_minute``, ``adaptive_limit``: as chat model
  connections, `flink_agents.api.chat_models.rate_limit`, kept by the runtime);
- the answer is checked: one vector per text, all of one dimension (the setup's
  `expected_dimensions` when it has one), finite numbers; else `EmbeddingModelError`
  naming the connection and the model, as is every `ChatModelError` the connection
  raises (a provider that is down, say).

A connection implements ``embed`` (upstream's way), ``embed_with_usage``, or
``async def aembed_with_usage`` (the provider adapters here); the base gives the others.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import Field, PrivateAttr

from flink_agents.api._sync_loop import run_on_sync_loop
from flink_agents.api.chat_models.rate_limit import RequestLimitOptions
from flink_agents.api.errors import ChatModelError, EmbeddingInputError, EmbeddingModelError
from flink_agents.api.resource import Resource, ResourceType

__all__ = [
    "BaseEmbeddingModelConnection",
    "BaseEmbeddingModelSetup",
    "EmbeddingResult",
    "EmbeddingTokenUsage",
    "EmbeddingValue",
]

EmbeddingValue = TypeVar("EmbeddingValue", bound="list[float] | list[list[float]]")
"""One vector (for one text) or one vector per text (for a list of texts)."""

Embeddings = list[float] | list[list[float]]


@dataclass(frozen=True)
class EmbeddingTokenUsage:
    """Token counts an embedding provider reported for one call."""

    prompt_tokens: int = 0
    """Tokens of the texts embedded."""
    total_tokens: int = 0
    """All tokens the call counted against the account."""


@dataclass(frozen=True)
class EmbeddingResult(Generic[EmbeddingValue]):
    """Embeddings with the provider's token usage (None when it did not report any)."""

    embeddings: EmbeddingValue
    """One vector for a text, or one vector per text (in order) for a list."""
    token_usage: EmbeddingTokenUsage | None = None
    """The provider's token counts; None when it reported none."""


class BaseEmbeddingModelConnection(Resource, RequestLimitOptions):
    """Talks to one embedding provider: credentials, endpoint, client.

    Implement ``embed`` (upstream's abstract method), ``embed_with_usage``, or
    ``async def aembed_with_usage``; the base gives the others. A string gives one
    vector (``list[float]``), a list of strings one vector per text in order.

    Calls through an embedding model setup wait for the connection's limits (options of
    `RequestLimitOptions`, as on chat model connections).
    """

    default_batch_size: ClassVar[int | None] = None
    """Texts one request of this provider may carry at most (its documented limit): what
    a setup's ``batch_size`` is when not set. None: no limit."""

    @classmethod
    def resource_type(cls) -> ResourceType:
        """`ResourceType.EMBEDDING_MODEL_CONNECTION`."""
        return ResourceType.EMBEDDING_MODEL_CONNECTION

    def _overrides(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(BaseEmbeddingModelConnection, name)

    def embed(self, text: str | Sequence[str], **kwargs: Any) -> Embeddings:
        """The embedding of ``text`` (one vector), or of each text of a list (blocking).

        ``kwargs`` are the model's parameters (``model``...), as a setup passes them.
        """
        if self._overrides("embed_with_usage") or self._overrides("aembed_with_usage"):
            return self.embed_with_usage(text, **kwargs).embeddings
        raise NotImplementedError(
            f"{type(self).__name__} implements neither embed, embed_with_usage nor "
            "aembed_with_usage"
        )

    def embed_with_usage(
        self, text: str | Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[list[float] | list[list[float]]]:
        """`embed` with the provider's token usage, when it reports it (blocking)."""
        if self._overrides("aembed_with_usage"):
            return run_on_sync_loop(
                self.aembed_with_usage(text, **kwargs),
                call="embed_with_usage()",
                instead="aembed_with_usage()",
            )
        return EmbeddingResult(embeddings=self.embed(text, **kwargs))

    async def aembed_with_usage(
        self, text: str | Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[list[float] | list[list[float]]]:
        """`embed_with_usage` without blocking (a sync implementation runs on a thread)."""
        if self._overrides("embed_with_usage") or self._overrides("embed"):
            return await asyncio.to_thread(self.embed_with_usage, text, **kwargs)
        raise NotImplementedError(
            f"{type(self).__name__} implements neither embed, embed_with_usage nor "
            "aembed_with_usage"
        )

    async def aembed(self, text: str | Sequence[str], **kwargs: Any) -> Embeddings:
        """`embed` without blocking (a sync ``embed`` of its own runs on a thread)."""
        if self._overrides("embed"):
            return await asyncio.to_thread(self.embed, text, **kwargs)
        return (await self.aembed_with_usage(text, **kwargs)).embeddings


class BaseEmbeddingModelSetup(Resource):
    """Which embedding model to use and how: refers to a connection by name.

    ``model_kwargs`` are passed to the connection on every call (the model name, and what
    a provider's setup adds); keywords of a call override them.

    >>> model = ctx.get_resource("embedder", ResourceType.EMBEDDING_MODEL)
    >>> vector = model.embed("my order never came")
    >>> vectors = await model.aembed(["first text", "second text"])
    """

    connection: str | BaseEmbeddingModelConnection
    """Name of the `BaseEmbeddingModelConnection` resource to send through (or the
    connection itself)."""
    model: str
    """The provider's model name."""
    batch_size: int | None = Field(default=None, ge=1)
    """Texts sent in one request at most: a longer list goes in requests of this many, one
    after the other. None: the connection's ``default_batch_size`` (the provider's limit).
    A call's ``batch_size=`` keyword overrides it (upstream's Java parameter)."""

    _resolved: BaseEmbeddingModelConnection | None = PrivateAttr(default=None)

    @classmethod
    def resource_type(cls) -> ResourceType:
        """`ResourceType.EMBEDDING_MODEL`."""
        return ResourceType.EMBEDDING_MODEL

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """Parameters for the connection: the model name (provider setups add theirs)."""
        return {"model": self.model}

    @property
    def expected_dimensions(self) -> int | None:
        """The dimension every vector must have (a provider setup's ``dimensions``, a
        local model's size); None: any, as long as one answer's vectors agree."""
        return None

    @property
    def resource_label(self) -> str:
        """How errors name this embedding model: its connection and model."""
        connection = self.connection
        name = connection if isinstance(connection, str) else type(connection).__name__
        return f"connection {name!r}, model {self.model!r}"

    def open(self) -> None:
        """Look up the connection (upstream's hook; a call looks it up anyway)."""
        if isinstance(self.connection, str) and self.get_resource is not None:
            self._resolved = self.resolve_connection()

    def resolve_connection(self) -> BaseEmbeddingModelConnection:
        """The connection this setup sends through."""
        connection = self.connection
        if isinstance(connection, BaseEmbeddingModelConnection):
            return connection
        if self.get_resource is None:
            if self._resolved is not None:
                return self._resolved
            raise RuntimeError(
                f"{type(self).__name__} cannot look up its connection {connection!r}: use "
                "the setup an agent gives you (ctx.get_resource(name, "
                "ResourceType.EMBEDDING_MODEL)), or pass resource_context= when you build it"
            )
        found = self.get_resource(connection, ResourceType.EMBEDDING_MODEL_CONNECTION)
        if not isinstance(found, BaseEmbeddingModelConnection):
            raise TypeError(
                f"resource {connection!r} is a {type(found).__name__}, not an embedding "
                "model connection"
            )
        return found

    def _get_connection(self) -> BaseEmbeddingModelConnection:
        """Upstream's name of `resolve_connection`."""
        return self.resolve_connection()

    def embed(self, text: str | Sequence[str], **kwargs: Any) -> Embeddings:
        """The embedding of ``text`` (one vector), or of each text of a list, in order
        (blocking; from an ``async def``, ``await aembed(...)``)."""
        result = run_on_sync_loop(
            self._send(text, kwargs, with_usage=False), call="embed()", instead="aembed()"
        )
        return result.embeddings

    def embed_with_usage(
        self, text: str | Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[list[float] | list[list[float]]]:
        """`embed` with the provider's token usage (summed over the requests of a batch;
        None when it reported none)."""
        return run_on_sync_loop(
            self._send(text, kwargs, with_usage=True),
            call="embed_with_usage()",
            instead="aembed_with_usage()",
        )

    async def aembed(self, text: str | Sequence[str], **kwargs: Any) -> Embeddings:
        """`embed` without blocking (a subclass's sync ``embed`` of its own runs on a
        thread)."""
        if type(self).embed is not BaseEmbeddingModelSetup.embed:
            return await asyncio.to_thread(self.embed, text, **kwargs)
        return (await self._send(text, kwargs, with_usage=False)).embeddings

    async def aembed_with_usage(
        self, text: str | Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[list[float] | list[list[float]]]:
        """`embed_with_usage` without blocking."""
        return await self._send(text, kwargs, with_usage=True)

    async def _send(
        self, text: str | Sequence[str], kwargs: dict[str, Any], *, with_usage: bool
    ) -> EmbeddingResult[Any]:
        label = self.resource_label
        texts = _checked_texts(text, label)
        params = {**self.model_kwargs, **kwargs}
        connection = self.resolve_connection()
        batch_size = params.pop("batch_size", None) or self.batch_size
        if batch_size is None:
            batch_size = connection.default_batch_size
        if isinstance(text, str):
            result = await self._request(connection, text, params, with_usage)
            [vector] = _checked_vectors([result.embeddings], 1, self.expected_dimensions, label)
            return EmbeddingResult(embeddings=vector, token_usage=result.token_usage)
        step = batch_size or len(texts)
        vectors: list[list[float]] = []
        usages: list[EmbeddingTokenUsage | None] = []
        for start in range(0, len(texts), step):
            chunk = texts[start : start + step]
            result = await self._request(connection, chunk, params, with_usage)
            got = result.embeddings
            if not isinstance(got, list):
                raise _malformed(label, f"the answer is a {type(got).__name__}, not a list")
            vectors.extend(_checked_vectors(got, len(chunk), self.expected_dimensions, label))
            usages.append(result.token_usage)
        _check_same_dimension(vectors, label)
        return EmbeddingResult(embeddings=vectors, token_usage=_summed(usages))

    async def _request(
        self,
        connection: BaseEmbeddingModelConnection,
        text: str | list[str],
        params: dict[str, Any],
        with_usage: bool,
    ) -> EmbeddingResult[Any]:
        async def call() -> EmbeddingResult[Any]:
            if with_usage:
                return await connection.aembed_with_usage(text, **params)
            return EmbeddingResult(embeddings=await connection.aembed(text, **params))

        gate = connection.request_gate
        try:
            return await (call() if gate is None else gate.send_embedding(text, call))
        except ChatModelError as exc:
            raise EmbeddingModelError.from_model_error(exc, self.resource_label) from exc


def _summed(usages: list[EmbeddingTokenUsage | None]) -> EmbeddingTokenUsage | None:
    known = [usage for usage in usages if usage is not None]
    if not known:
        return None
    if len(known) == 1:
        return known[0]
    return EmbeddingTokenUsage(
        prompt_tokens=sum(u.prompt_tokens for u in known),
        total_tokens=sum(u.total_tokens for u in known),
    )


def _checked_texts(text: object, label: str) -> list[str]:
    """The texts of a call; `EmbeddingInputError` for what cannot be embedded."""
    if isinstance(text, str):
        texts = [text]
    elif isinstance(text, Sequence) and not isinstance(text, (bytes, bytearray)):
        texts = list(text)
        if not texts:
            raise EmbeddingInputError(
                f"embedding model ({label}): no texts to embed (an empty list)", resource=label
            )
    else:
        raise EmbeddingInputError(
            f"embedding model ({label}): the text to embed is a {type(text).__name__}, not a "
            "string or a list of strings",
            resource=label,
        )
    for position, item in enumerate(texts):
        where = "" if isinstance(text, str) else f" (text {position} of {len(texts)})"
        if not isinstance(item, str):
            raise EmbeddingInputError(
                f"embedding model ({label}): a {type(item).__name__} is no text{where}",
                resource=label,
            )
        if not item.strip():
            raise EmbeddingInputError(
                f"embedding model ({label}): cannot embed an empty text{where}", resource=label
            )
    return texts


def _malformed(label: str, detail: str) -> EmbeddingModelError:
    return EmbeddingModelError(
        f"embedding model ({label}) answered with no usable embedding: {detail}",
        resource=label,
        retryable=False,
        kind="malformed_response",
    )


def _checked_vectors(
    vectors: list[Any], count: int, dimensions: int | None, label: str
) -> list[list[float]]:
    """``vectors`` as lists of floats; `EmbeddingModelError` unless there are ``count``,
    each a list of finite numbers of ``dimensions`` (when given)."""
    if len(vectors) != count:
        raise _malformed(label, f"{len(vectors)} vectors for {count} texts")
    checked: list[list[float]] = []
    for position, vector in enumerate(vectors):
        where = "" if count == 1 else f" (text {position})"
        try:
            values = [float(value) for value in vector]
        except (TypeError, ValueError):
            raise _malformed(label, f"a vector is not a list of numbers{where}") from None
        if not values:
            raise _malformed(label, f"an empty vector{where}")
        if dimensions is not None and len(values) != dimensions:
            raise _malformed(
                label, f"a vector of dimension {len(values)}, expected {dimensions}{where}"
            )
        if not all(math.isfinite(value) for value in values):
            raise _malformed(label, f"a vector with a value that is not finite{where}")
        checked.append(values)
    return checked


def _check_same_dimension(vectors: list[list[float]], label: str) -> None:
    dimensions = {len(vector) for vector in vectors}
    if len(dimensions) > 1:
        raise _malformed(label, f"vectors of different dimensions {sorted(dimensions)}")
