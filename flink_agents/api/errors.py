"""Errors of the API layer, shared by the message model, the options, the provider adapters
and the runtime. Catch at the level you care about:

    ValueError
    ├── UnknownOptionError              an option nothing reads (a typo); names the closest ones
    ├── UnsupportedContentBlockError    a provider cannot take a content block (nothing is sent)
    ├── EmbeddingInputError             text an embedding model cannot take (empty, not a
    │                                   string); nothing is sent
    ├── YamlDefinitionError             a YAML agent file is wrong: names the file, the line
    │                                   and the field
    ├── DocumentTooLargeError           a document over a vector store's size limit (named)
    ├── TriggerConditionError           an action's condition expression cannot be used
    │                                   (when the plan is built); names the action, the
    │                                   expression and the ``category`` of the problem
    └── ResourceUnavailableError        an upstream resource with no implementation here (a
                                        provider, a resource type, a Java function); names
                                        the nearest working alternative
    ImportError
    └── StoredClassRefusedError         a class path read from stored data names a module that
                                        is neither imported nor allowed
                                        (``stored-classes.allowed-modules``): not imported
    Exception
    ├── ChatModelError                  a chat model call failed; ``retryable`` says whether
    │   │                               trying again can help
    │   └── EmbeddingModelError         (RuntimeError) an embedding model call failed, or
    │                                   answered with vectors that do not fit (count,
    │                                   dimension, values); ``resource`` names the model and
    │                                   its connection
    └── VectorStoreError                a vector store call failed; ``resource`` names the store
        ├── VectorStoreUnavailableError the store cannot be reached
        └── VectorDimensionError        a vector of another dimension than the store's

A built-in Python base in parentheses is a second base class. The errors the runtime
raises itself are in `flink_agents.runtime.errors`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

__all__ = [
    "ChatModelError",
    "DocumentTooLargeError",
    "EmbeddingInputError",
    "EmbeddingModelError",
    "ResourceUnavailableError",
    "StoredClassRefusedError",
    "TriggerConditionError",
    "UnknownOptionError",
    "UnsupportedContentBlockError",
    "VectorDimensionError",
    "VectorStoreError",
    "VectorStoreUnavailableError",
    "YamlDefinitionError",
    "closest_names",
]


class UnknownOptionError(ValueError):
    """An option nothing reads: a keyword a resource class does not declare, or an agent
    configuration key that looks like one of the project's but is none of them.

    Raised when the option is given, so a typo never goes unnoticed (a dropped
    ``base_url`` would send every call to the default endpoint). The message names the
    option and the closest known ones.
    """

    def __init__(
        self,
        message: str,
        *,
        owner: str | None = None,
        option: str | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        super().__init__(message)
        self.owner = owner
        """What was given the option (a class name, "the agent configuration")."""
        self.option = option
        """The unknown option."""
        self.suggestions = list(suggestions)
        """Known options close to it, closest first."""

    @classmethod
    def for_option(
        cls, owner: str, option: str, known: Iterable[str], *, listed: Iterable[str] = ()
    ) -> UnknownOptionError:
        """The error for ``option`` given to ``owner``, which knows ``known``: the closest
        known names are suggested; when none is close, ``listed`` are shown instead."""
        suggestions = closest_names(option, known)
        if suggestions:
            hint = f" (did you mean {' or '.join(repr(name) for name in suggestions)}?)"
        else:
            names = sorted(listed)
            hint = f" (options: {', '.join(names)})" if names else ""
        return cls(
            f"{owner} has no option {option!r}{hint}",
            owner=owner,
            option=option,
            suggestions=suggestions,
        )


class StoredClassRefusedError(ImportError):
    """A class path read from stored data (agent state, a savepoint, a durable call record)
    names a class of a module this process has not imported, and no prefix of
    ``stored-classes.allowed-modules`` allows importing it: it is not imported, so a
    tampered record cannot run a module's code in a worker.

    An `ImportError`, so pydantic passes it through the validators of stored values
    unchanged. A recorded exception of such a class is rebuilt as a generic error instead
    (`flink_agents.runtime.durable.DurableCallFailedError`, with its class path and text).
    """

    OPTION = "stored-classes.allowed-modules"
    """The option that allows importing a module's classes from stored data."""

    def __init__(self, class_path: str, module: str) -> None:
        super().__init__(
            f"stored data names the class {class_path}, whose module {module} is not imported "
            f"in this process; it is imported only when the option {self.OPTION!r} lists it "
            "(or a prefix of it: a module of your own whose classes are kept in state)",
            name=module,
        )
        self.class_path = class_path
        """The class path as read (``module:qualname``)."""
        self.module = module
        """The module that was not imported."""

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.class_path, self.module))


def closest_names(name: str, known: Iterable[str], *, cutoff: float = 0.6) -> list[str]:
    """Up to three of ``known`` closest to ``name`` (case-insensitive), closest first."""
    by_lower: dict[str, str] = {}
    for candidate in known:
        by_lower.setdefault(candidate.lower(), candidate)
    matches = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=cutoff)
    return [by_lower[match] for match in matches]


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


class YamlDefinitionError(ValueError):
    """A YAML agent definition (`flink_agents.api.yaml`) that cannot be loaded: the file,
    the line (1-based) and the field (``agents[0].actions[1].function``) of the first
    problem, and in the message every problem found, each on a line of its own."""

    def __init__(self, problems: list[tuple[str, int, str, str]]) -> None:
        if not problems:
            raise ValueError("YamlDefinitionError needs at least one problem")
        self.problems = list(problems)
        """``(file, line, field, message)`` of each problem, in file order."""
        self.file, self.line, self.field, _ = self.problems[0]
        super().__init__(
            "\n".join(f"{f}, line {n}, {field}: {text}" for f, n, field, text in self.problems)
        )


class TriggerConditionError(ValueError):
    """An action's trigger condition expression that cannot be used, found when the plan is
    built: ``category`` is upstream's (``syntax``, ``unsupported_construct``,
    ``unknown_event_type``, ``type_check``, ``referenced_attributes``)."""

    def __init__(self, action: str, source: str, category: str, detail: str) -> None:
        super().__init__(
            f"action {action!r}: invalid trigger condition expression {source!r}: {detail}"
        )
        self.action = action
        """The action whose trigger it is."""
        self.source = source
        """The expression, as written (trimmed)."""
        self.category = category
        """What is wrong, in upstream's words."""


class ResourceUnavailableError(ValueError):
    """Something Apache Flink Agents offers that this project does not implement: a
    `ResourceName` whose provider is not here, a `ResourceType` with no resources here
    (skills), a Java function or resource.

    Raised when the agent plan is built (before a job is submitted), and when such a
    descriptor is resolved. The message names what is missing and what to use instead.
    """

    def __init__(self, missing: str, alternative: str) -> None:
        super().__init__(f"{missing} is not available here; instead, {alternative}")
        self.missing = missing
        """What is not implemented here (a provider, a resource type...)."""
        self.alternative = alternative
        """The nearest working alternative."""

    def __reduce__(self) -> tuple[type[ResourceUnavailableError], tuple[str, str]]:
        return (type(self), (self.missing, self.alternative))


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
            f"{type(self).__name__}({self.message!r}, status_code={self.status_code!r}, "
            f"retryable={self.retryable!r}, kind={self.kind!r})"
        )


class EmbeddingModelError(ChatModelError, RuntimeError):
    """An embedding model call failed (the provider said no, or could not be reached), or
    its answer is not one vector per text of the expected dimension with finite values.

    Also a ``RuntimeError``, which upstream's embedding connections raise for a failed
    call. A `ChatModelError`, so ``retryable``, ``retry_after``, the rate limits and the error
    strategies treat model calls of both kinds alike. ``resource`` names the embedding
    model (its connection and model name) the message is about.
    """

    def __init__(self, message: str, *, resource: str | None = None, **details: Any) -> None:
        """``details``: `ChatModelError`'s keywords (``status_code``, ``retryable``...)."""
        super().__init__(message, **details)
        self.resource = resource
        """The embedding model: ``connection 'name', model 'name'`` (None: unknown)."""

    @classmethod
    def from_model_error(cls, error: ChatModelError, resource: str) -> EmbeddingModelError:
        """``error`` (a provider adapter's) as an `EmbeddingModelError` about ``resource``
        (its message starts with it); one that already names its resource is returned as
        it is."""
        if isinstance(error, EmbeddingModelError) and error.resource is not None:
            return error
        return cls(
            f"embedding model ({resource}): {error.message}",
            resource=resource,
            status_code=error.status_code,
            retryable=error.retryable,
            retry_after=error.retry_after,
            provider=error.provider,
            kind=error.kind,
        )


class EmbeddingInputError(ValueError):
    """Text an embedding model cannot take: an empty string (or only whitespace), no texts
    at all, or something that is not a string. Raised before anything is sent; the
    message says which text (by position) and never shows it."""

    def __init__(self, message: str, *, resource: str | None = None) -> None:
        super().__init__(message)
        self.resource = resource
        """The embedding model it was given to (None: unknown)."""

    def __reduce__(self) -> tuple[object, ...]:
        return (_embedding_input_error, (str(self), self.resource))


def _embedding_input_error(message: str, resource: str | None) -> EmbeddingInputError:
    return EmbeddingInputError(message, resource=resource)


class VectorStoreError(Exception):
    """A vector store call failed: the store is missing or down, the vectors do not fit
    it, or the backend said no. ``resource`` names the vector store resource when known
    (the built-in context retrieval action always sets it).

    Subclasses: `VectorStoreUnavailableError` (the store cannot be reached),
    `VectorDimensionError` (a vector of another dimension than the store's).
    """

    def __init__(self, message: str, *, resource: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        """What went wrong (no credential: connection URLs are never in it)."""
        self.resource = resource
        """The vector store (or embedding model) resource, when known."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_vector_store_error, (type(self), self.message, self.resource))


def _rebuild_vector_store_error(
    cls: type[VectorStoreError], message: str, resource: str | None
) -> VectorStoreError:
    return cls(message, resource=resource)


class VectorStoreUnavailableError(VectorStoreError):
    """The vector store cannot be reached (a server down, a database refusing)."""


class VectorDimensionError(VectorStoreError):
    """A vector's dimension is not the one the store (or its collection) holds."""


class DocumentTooLargeError(ValueError):
    """A document to add to a vector store is over the store's size limit (the message
    names the limit, ``max_document_bytes``, and the document's size). Nothing is added."""
