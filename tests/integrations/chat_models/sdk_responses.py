"""The SDKs' typed response objects for a JSON body, built by the SDKs themselves.

Each function sends one request through the official (sync) SDK client over an
``httpx2.MockTransport`` that answers with ``body`` (no socket), and returns what the
SDK's ``create`` returns: the object an adapter's ``parse_response`` reads. A body
that is not a JSON object comes back as the SDK hands it over (a list, a string).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import anthropic
import httpx2
import openai

__all__ = ["anthropic_message", "chat_completion", "openai_response"]


class _Reply:
    """The transport's answer: the body and headers set before each call."""

    body: Any = None
    headers: dict[str, str] = {}

    @classmethod
    def handle(cls, request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=cls.body, headers=cls.headers)


def _http_client() -> httpx2.Client:
    return httpx2.Client(transport=httpx2.MockTransport(_Reply.handle))


@cache
def _anthropic() -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", max_retries=0, http_client=_http_client())


@cache
def _openai() -> openai.OpenAI:
    return openai.OpenAI(api_key="test", max_retries=0, http_client=_http_client())


def _reply(body: Any, headers: dict[str, str] | None) -> None:
    _Reply.body = body
    _Reply.headers = headers or {}


def anthropic_message(body: Any, headers: dict[str, str] | None = None) -> Any:
    """What ``messages.create`` returns for ``body`` (an `anthropic.types.Message`)."""
    _reply(body, headers)
    return _anthropic().messages.create(model="m", max_tokens=1, messages=[])


def chat_completion(body: Any, headers: dict[str, str] | None = None) -> Any:
    """What ``chat.completions.create`` returns for ``body`` (a `ChatCompletion`)."""
    _reply(body, headers)
    return _openai().chat.completions.create(model="m", messages=[])


def openai_response(body: Any, headers: dict[str, str] | None = None) -> Any:
    """What ``responses.create`` returns for ``body`` (an `openai.types.responses.Response`)."""
    _reply(body, headers)
    return _openai().responses.create(model="m", input=[])
