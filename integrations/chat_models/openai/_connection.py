"""What both OpenAI connections share: the ``openai`` SDK client and ``organization``.

`OpenAIChatModelConnection` (Chat Completions) and `OpenAIResponsesChatModelConnection`
(Responses) subclass `OpenAIConnection`; the settings, the shared client and the
error mapping come from `OpenAIClient` (shared with the OpenAI embedding connection).
Both APIs with the same settings share one ``openai.AsyncOpenAI`` client per event loop.

Both send their wire module's JSON body through the client's generic ``post`` (the SDK's
documented way to send a request body of one's own), not through ``create``. For these two
APIs ``create`` only runs the SDK's typed conversion of its arguments before that same
``post`` (and, for Chat Completions, refuses a pydantic class as ``response_format``; the
setups send a dict). That conversion leaves a JSON body unchanged (no field of either API's
parameters is renamed or reformatted) while it costs 0.16-0.6 ms of CPU per request, more
than the rest of the runtime spends on an input (docs/benchmarks.md). The SDK still does
everything else: headers and credentials, retries, timeouts, the HTTP transport, parsing
the answer into its typed model and raising its errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, ToolSpec
from flink_agents.api.chat_result import ChatResult
from flink_agents.api.message import ChatMessage
from flink_agents.integrations._openai_client import OpenAIClient
from flink_agents.integrations._provider_client import UpstreamTimeoutName, timeout_field

__all__ = ["OpenAIApi", "OpenAIConnection"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class OpenAIApi:
    """The API a connection sends to: all that differs between the two."""

    path: str
    """Where its requests go, relative to ``base_url``."""
    answer: type[Any]
    """The SDK's model of its response."""
    build_request: Callable[..., dict[str, Any]]
    """Its wire module's ``build_request(messages, tools, **params)``."""
    parse_response: Callable[[Any], ChatResult]
    """Its wire module's ``parse_response(answer)``."""


class OpenAIConnection(UpstreamTimeoutName, BaseChatModelConnection, OpenAIClient):
    """A chat connection through ``openai.AsyncOpenAI`` (`OpenAIClient`: ``api_key``
    defaults to ``OPENAI_API_KEY``), to the API its class names (`api`)."""

    api: ClassVar[OpenAIApi]
    """The API this connection sends to."""

    timeout: float = timeout_field(60.0)
    """Seconds one call may take in all (also taken as ``request_timeout``, the name
    upstream's other connections use, and its own tests give this one)."""

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        **params: Any,
    ) -> ChatResult:
        """Send the conversation to the `api` and return the answer (a call's ``params``:
        see the connection class). Unsupported blocks raise
        `UnsupportedContentBlockError` before anything is sent; provider failures raise
        `ChatModelError`."""
        api = self.api
        request = api.build_request(messages, tools, **params)
        return api.parse_response(await self._post(api.path, request, api.answer))

    async def _post(self, path: str, body: dict[str, Any], answer: type[_T]) -> _T:
        """POST ``body`` as it is to ``path`` (relative to ``base_url``) through the SDK's
        client; the answer parsed as the SDK's ``answer`` model (see the module doc)."""
        return await self._send(lambda client: client.post(path, body=body, cast_to=answer))
