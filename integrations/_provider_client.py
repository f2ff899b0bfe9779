"""`ProviderClient`: what every provider connection shares, chat and embedding alike.

The chat model adapters' `ProviderConnection`
(`flink_agents.integrations.chat_models._provider_connection`) and the embedding model
adapters' `ProviderEmbeddingConnection`
(`flink_agents.integrations.embedding_models._provider_embedding_connection`) are this
mixin on their API base class.

A connection holds the settings of one provider API (key, base URL, timeout, SDK
retries, headers, an optional HTTP client) and gets its async SDK client from the
process's `sdk_clients` cache, keyed by those settings and the running event loop.
It sends through `_send`, which gives the whole call one deadline (``timeout``: an SDK's
own timeout applies to each read, so a server that sends a byte now and then would hold
the call for ever) and turns every SDK failure into a `ChatModelError` the
same way for every adapter (key masked): `_error_from_sdk` maps the SDK's exceptions
(``anthropic``/``openai`` by default; an adapter on another SDK overrides it). The
adapters subclass it, name their SDK client class, and implement ``achat`` (or
``aembed_with_usage``): build the request (their wire module), send it, parse the SDK's
typed response.

Pickling: no client travels; a connection unpickled on a Flink worker makes its own
client on first use. An ``http_client`` instance cannot be pickled (it holds open
connections), so a connection that travels takes a function that makes one.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from flink_agents.api.chat_models.rate_limit import report_used_up_limit
from flink_agents.api.errors import ChatModelError
from flink_agents.integrations._sdk_clients import freeze, sdk_clients
from flink_agents.integrations._sdk_errors import (
    chat_model_error_from_sdk,
    malformed_response,
    timeout_error,
    used_up_limit_wait,
)
from flink_agents.integrations._secrets import (
    register_client_secrets,
    register_provider_secrets,
)

__all__ = [
    "HttpClient",
    "HttpTransport",
    "ProviderClient",
    "UpstreamTimeoutName",
    "hear_used_up_limits",
    "listen_for_used_up_limits",
    "timeout_field",
]

ClientT = TypeVar("ClientT")
_T = TypeVar("_T")

HttpClient = Any
"""An async HTTP client the SDK takes (``httpx2.AsyncClient`` for the ``anthropic`` and
``openai`` SDKs of 2026; ``openai`` also takes an ``httpx.AsyncClient``)."""


HttpTransport = Literal["aiohttp", "httpx"]
"""An HTTP transport of the SDK's own that a connection can choose by name."""


def timeout_field(default: float) -> Any:
    """A connection's ``timeout`` field that also takes upstream's name for it,
    ``request_timeout`` (read back through `UpstreamTimeoutName`)."""
    return Field(default=default, validation_alias=AliasChoices("request_timeout", "timeout"))


class UpstreamTimeoutName:
    """For a connection whose ``timeout`` upstream calls ``request_timeout``
    (`timeout_field`)."""

    if TYPE_CHECKING:
        timeout: float

    @property
    def request_timeout(self) -> float:
        """Upstream's name of ``timeout``."""
        return self.timeout


class ProviderClient(BaseModel, Generic[ClientT]):
    """Settings, the shared async SDK client, and error mapping of a provider connection
    (a mixin: the connection classes put it beside their API base class).

    ``max_retries`` defaults to 0: the built-in actions own retries (they read
    `ChatModelError.retryable` and ``retry_after``), so the SDK does not retry too.
    """

    provider_name: ClassVar[str]
    """Put in `ChatModelError.provider` and error messages."""
    sdk_client_class: ClassVar[Callable[..., Any]]
    """The SDK's async client class (connections of one class share clients)."""
    sdk_error: ClassVar[type[Exception] | tuple[type[Exception], ...]]
    """The SDK's exception classes (its base class, or several) that `_error_from_sdk` maps."""
    sdk_environment: ClassVar[tuple[str, ...]] = ()
    """Environment variables the SDK client reads when it is made (part of the cache key)."""
    credential_environment: ClassVar[tuple[str, ...]] = ()
    """Environment variables that give the provider's credentials when ``api_key`` is None
    (the first is the one to set); empty: the provider needs none (no check)."""
    http_client_refusal: ClassVar[str | None] = None
    """Why the SDK takes no ``http_client`` (giving one raises ``ValueError`` with it);
    None: the SDK takes one."""
    aiohttp_client_class: ClassVar[Callable[[], Any] | None] = None
    """The SDK's HTTP client class on aiohttp (``http_transport="aiohttp"``); None: the SDK
    has none."""
    httpx_client_class: ClassVar[Callable[[], Any] | None] = None
    """The SDK's default HTTP client class on httpx (``http_transport="httpx"``), made here
    so that it reads the rate-limit headers of answers (`_new_http_client`); None: the SDK
    makes its own."""
    secret_fields: ClassVar[tuple[str, ...]] = ("api_key",)
    """The fields that hold credentials: their values are registered with the redactor."""

    api_key: str | None = Field(default=None, exclude=True, repr=False)
    """The API key; when None the SDK reads its environment variable. Never dumped or shown."""
    base_url: str | None = None
    """The API's base URL; None for the SDK default (or its base URL variable)."""
    timeout: float = 60.0
    """Seconds one call may take in all, from sending to the parsed answer (the SDK's own
    retries included); then it fails with a `ChatModelError` of ``kind="timeout"``."""
    max_retries: int = 0
    """Retries inside the SDK (0: the built-in actions retry instead)."""
    default_headers: dict[str, str] | None = None
    """Extra HTTP headers sent with every request."""
    http_client: HttpClient | Callable[[], HttpClient] | None = Field(
        default=None, exclude=True, repr=False
    )
    """The HTTP client the SDK sends through (proxies, TLS, transports, tests), or a
    function that makes one. An instance is used as it is, by every client this
    connection gets, and is yours to close; it must be used on one event loop and does
    not pickle. A function is called for each new SDK client (one per event loop), and
    travels to Flink workers with the connection. None: the SDK makes its own."""
    http_transport: HttpTransport | None = None
    """The SDK's own HTTP client to send through. None (the default): its aiohttp client
    (``DefaultAioHttpClient`` of the ``anthropic`` and ``openai`` SDKs), which takes much
    less CPU per call than its httpx client when many calls are in flight, for a connection
    whose SDK has one and without an ``http_client``; else the SDK's default. ``"aiohttp"``:
    that client, always. ``"httpx"``: the SDK's default httpx client."""

    @field_validator("http_client")
    @classmethod
    def _check_http_client(cls, value: Any) -> Any:
        if value is not None and cls.http_client_refusal is not None:
            raise ValueError(cls.http_client_refusal)
        if value is None or callable(value) or _is_http_client(value):
            return value
        raise ValueError(
            "http_client must be an async HTTP client (httpx2.AsyncClient) or a function "
            f"that returns one, not {type(value).__name__}"
        )

    @model_validator(mode="after")
    def _check_http_transport(self) -> ProviderClient[ClientT]:
        if self.http_transport is None:
            return self
        name = type(self).__name__
        if self.aiohttp_client_class is None:
            raise ValueError(f"{name} has no http_transport of its SDK to choose")
        if self.http_client is not None:
            raise ValueError(f"{name}: give http_client or http_transport, not both")
        if self.http_transport == "aiohttp" and importlib.util.find_spec("aiohttp") is None:
            raise ValueError(
                f"{name}: http_transport='aiohttp' needs the aiohttp package "
                "(pip install aiohttp: a dependency of pyflink-agents)"
            )
        return self

    def model_post_init(self, context: Any, /) -> None:
        """Registers the `secret_fields` (and the environment's keys) with the redactor."""
        super().model_post_init(context)
        register_provider_secrets(*(getattr(self, name) for name in self.secret_fields))

    def _client_options(self) -> dict[str, Any]:
        """Keyword arguments of the SDK client (without ``http_client``)."""
        return {
            "api_key": self.api_key,
            "base_url": self.base_url,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "default_headers": self.default_headers,
        }

    def _sdk_client(self) -> ClientT:
        """The SDK client for these settings on the running event loop, shared and reused."""
        options = self._client_options()
        environment = tuple(os.environ.get(name) for name in self.sdk_environment)
        key = (
            self.sdk_client_class,
            freeze(options),
            environment,
            freeze(self.http_client),
            self._transport(),
        )
        return sdk_clients.get(
            key, lambda: self._new_client(options), close_at_loop_end=self._transport() == "aiohttp"
        )

    def _transport(self) -> HttpTransport | None:
        """The SDK's HTTP client this connection sends through: ``"aiohttp"``, ``"httpx"``
        (the SDK's default), or None (``http_client``, or an SDK without an aiohttp client)."""
        if self.http_transport is not None:
            return self.http_transport
        if self.http_client is not None or self.aiohttp_client_class is None:
            return None
        return "aiohttp" if _AIOHTTP_INSTALLED else "httpx"

    def _has_credentials(self) -> bool:
        """Whether the SDK will find credentials: ``api_key``, one of the
        `credential_environment` variables, or an authorization header of your own."""
        if self.api_key or not self.credential_environment:
            return True
        if any(os.environ.get(name) for name in self.credential_environment):
            return True
        headers = {name.lower() for name in self.default_headers or {}}
        return bool(headers & _AUTHORIZATION_HEADERS)

    def _missing_credentials(self) -> ChatModelError:
        first, *others = self.credential_environment
        alternatives = f" (or {', '.join(others)})" if others else ""
        return ChatModelError(
            f"{self.provider_name}: no API key: set {first}{alternatives} in the environment "
            "of the process that runs the agent (on Flink: of every TaskManager), or pass "
            f"api_key=... to {type(self).__name__} (its ResourceDescriptor)",
            retryable=False,
            provider=self.provider_name,
            kind="authentication",
        )

    def _new_client(self, options: dict[str, Any]) -> Any:
        self._check_credentials()
        client = self.sdk_client_class(**options, http_client=self._new_http_client())
        register_client_secrets(client)  # the key it resolved, maybe from the environment
        return client

    def _check_credentials(self) -> None:
        """Raise `_missing_credentials` before an SDK client is made without credentials
        (the SDK's own error does not say what to set)."""
        if not self._has_credentials():
            raise self._missing_credentials()

    def _new_http_client(self) -> HttpClient | None:
        """The HTTP client a new SDK client sends through: ``http_client`` itself, or what
        the function given as ``http_client`` makes, or the SDK's aiohttp or httpx client
        (`_transport`), or None (the SDK's default). One with httpx's event hooks reads the
        rate-limit headers of every successful answer (`hear_used_up_limits`)."""
        http_client = self.http_client
        transport = self._transport()
        if transport == "aiohttp":
            assert self.aiohttp_client_class is not None  # checked when the connection was built
            http_client = self.aiohttp_client_class()
        elif transport == "httpx" and self.httpx_client_class is not None:  # no http_client
            http_client = self.httpx_client_class()
        elif http_client is not None and not _is_http_client(http_client):
            http_client = http_client()  # a function that makes the HTTP client
        if http_client is not None:
            listen_for_used_up_limits(http_client)
        return http_client

    async def _send(self, call: Callable[[ClientT], Awaitable[_T]]) -> _T:
        """``await call(client)`` within ``timeout`` seconds, with every SDK failure raised
        as a `ChatModelError`.

        Past ``timeout`` the call is cancelled and fails with `timeout_error`, however the
        server's bytes trickle in. A body that is not JSON, or (for an SDK that validates
        what it parses) not the shape the SDK's response model wants, is
        ``kind="malformed_response"``; every other SDK exception (made while the client is
        made, too) goes through `_error_from_sdk`.
        """
        client: Any = None
        try:
            client = self._sdk_client()
            return await asyncio.wait_for(call(client), self.timeout)
        except json.JSONDecodeError:
            raise malformed_response(self.provider_name, "the body is not JSON") from None
        except ValidationError as exc:
            raise malformed_response(
                self.provider_name,
                f"the SDK could not read the response as a {exc.title} "
                f"({exc.error_count()} errors)",
            ) from None
        except self.sdk_error as exc:
            if client is not None:
                register_client_secrets(client)  # again: the registry may have been cleared
            raise self._error_from_sdk(exc) from None
        except asyncio.TimeoutError:  # the deadline (TimeoutError itself from Python 3.11)
            raise timeout_error(self.provider_name, self.timeout) from None

    def _error_from_sdk(self, exc: Exception) -> ChatModelError:
        """The `ChatModelError` for an exception of the SDK (``sdk_error``); the key is
        registered with the redactor and the message redacted."""
        return chat_model_error_from_sdk(exc, provider=self.provider_name, api_key=self.api_key)

    def __getstate__(self) -> dict[Any, Any]:
        http_client = self.http_client
        if _is_http_client(http_client):
            raise TypeError(
                f"{type(self).__name__}: an http_client instance holds open connections and "
                "cannot be pickled, so this connection cannot travel to Flink workers; pass "
                "a function that makes the client instead (http_client=make_client)"
            )
        if isinstance(http_client, type) and not _travels(http_client):
            # Pickled by value instead, such a class breaks on the worker (its methods'
            # super() no longer finds it): openai.DefaultAioHttpClient is one.
            raise TypeError(
                f"{type(self).__name__}: the http_client class {http_client.__qualname__} is "
                f"not found by its name ({http_client.__module__}.{http_client.__qualname__}), "
                "so it would fail on Flink workers; for the SDK's aiohttp client set "
                "http_transport='aiohttp', else pass a function that makes the client"
            )
        return super().__getstate__()


_AIOHTTP_INSTALLED = importlib.util.find_spec("aiohttp") is not None
"""Whether the SDKs' aiohttp client can be the default (``aiohttp`` is a dependency)."""

_AUTHORIZATION_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "x-goog-api-key"})
"""Headers that carry credentials themselves (an SDK then needs no key)."""


def _travels(cls: type) -> bool:
    """Whether a pickled ``cls`` works on a worker: it is what its module and qualified name
    lead to (pickled by reference), or a class defined in a function (pickled by value, as
    ever). False for a class whose module was renamed, as the SDKs do with their public
    names."""
    if "<locals>" in cls.__qualname__:
        return True
    try:
        found: Any = importlib.import_module(cls.__module__)
        for part in cls.__qualname__.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return False
    return found is cls


async def hear_used_up_limits(response: Any) -> None:
    """An HTTP client's response hook: a successful answer whose rate-limit headers say a
    limit is used up (`used_up_limit_wait`) is reported to the call's gate
    (`report_used_up_limit`), which pauses the connection until the provider takes a
    request again and lowers its adaptive limit. A refusal's headers are read where it is
    raised (`chat_model_error_from_sdk`)."""
    if response.status_code < 400:
        wait = used_up_limit_wait(response.headers)
        if wait is not None:
            report_used_up_limit(wait)


def listen_for_used_up_limits(http_client: Any) -> None:
    """Add `hear_used_up_limits` to ``http_client``'s response hooks (httpx's event hooks;
    once, however many connections share the client); a client without them is left as
    it is."""
    hooks = getattr(http_client, "event_hooks", None)
    if not isinstance(hooks, dict):
        return
    responses = hooks.get("response")
    if isinstance(responses, list) and hear_used_up_limits not in responses:
        responses.append(hear_used_up_limits)


def _is_http_client(value: object) -> bool:
    """True for an HTTP client instance (it has ``aclose``), not for a function or a class."""
    return not isinstance(value, type) and callable(getattr(value, "aclose", None))
