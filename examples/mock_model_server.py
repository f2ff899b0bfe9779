"""A local mock model server that speaks OpenAI's Chat Completions and Embeddings APIs.

It lets the example agent run end to end with no API key and no network: the
real ``openai`` SDK talks HTTP to 127.0.0.1, and this server answers like a
small, deterministic model:

* when tools are offered and the conversation has no tool result yet, it calls
  the first tool, filling string parameters with the last user message and number
  parameters with its numbers, in order (its word count when it has too few);
* otherwise it answers in text, quoting the last tool result (or the user);
* ``/v1/embeddings`` answers each input with a deterministic unit vector
  (`embedding_of`: hashed words, so texts that share words lie close together) of
  ``dimensions`` numbers (default `EMBEDDING_DIMENSIONS`), as floats or base64.

The same answers come on the paths of Azure OpenAI
(``/openai/deployments/<name>/chat/completions?api-version=...``) and of DashScope's
native generation API (``/api/v1/services/aigc/text-generation/generation``,
`dashscope_reply_to`), so a Tongyi or Azure connection can be pointed at it too. Another
model can answer instead: ``MockModelServer(reply=...)`` takes the function that turns a
Chat Completions request body into its response body (`reply_to` by default).

Tests use it as a provider that counts: every request is recorded (its JSON body, when it
arrived and when its answer was sent), and answers can take a while (``delay``), so calls
are in flight when a test kills a worker.

Run it alone with ``python examples/mock_model_server.py --port 8765``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import itertools
import json
import math
import random
import re
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "DASHSCOPE_GENERATION_PATH",
    "EMBEDDING_DIMENSIONS",
    "MockModelServer",
    "RecordedRequest",
    "Reply",
    "dashscope_reply_to",
    "embedding_of",
    "embeddings_reply_to",
    "reply_to",
]

EMBEDDING_DIMENSIONS = 64
"""The length of an embedding when the request names no ``dimensions``."""

_ids = itertools.count(1)
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
DASHSCOPE_GENERATION_PATH = "/services/aigc/text-generation/generation"
"""The end of DashScope's native text generation path (after its ``/api/v1`` root)."""

Reply = Callable[[dict[str, Any]], dict[str, Any]]
"""A model: a Chat Completions request body to its response body."""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _tool_arguments(tool: dict[str, Any], user_text: str) -> dict[str, Any]:
    schema = tool.get("function", {}).get("parameters") or {}
    properties = schema.get("properties") or {}
    kinds = {
        name: spec.get("type") if isinstance(spec, dict) else None
        for name, spec in properties.items()
    }
    numbers = [float(n) for n in _NUMBER.findall(user_text)]
    wanted = sum(kind in ("integer", "number") for kind in kinds.values())
    given = iter(numbers if len(numbers) >= wanted else [])
    arguments: dict[str, Any] = {}
    for name, kind in kinds.items():
        if kind == "integer":
            arguments[name] = int(next(given, len(user_text.split())))
        elif kind == "number":
            arguments[name] = next(given, float(len(user_text)))
        elif kind == "boolean":
            arguments[name] = True
        else:
            arguments[name] = user_text
    return arguments


def reply_to(request: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions response body for a request body."""
    messages = request.get("messages") or []
    tools = request.get("tools") or []
    last_user = next(
        (_text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
    )
    tool_results = [m for m in messages if m.get("role") == "tool"]
    n = next(_ids)
    message: dict[str, Any]
    if tools and not tool_results:
        tool = tools[0]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_mock_{n}",
                    "type": "function",
                    "function": {
                        "name": tool["function"]["name"],
                        "arguments": json.dumps(_tool_arguments(tool, last_user)),
                    },
                }
            ],
        }
        finish = "tool_calls"
    else:
        if tool_results:
            answer = f"Based on the tool: {_text_of(tool_results[-1].get('content'))}"
        else:
            answer = f"You said: {last_user}"
        message = {"role": "assistant", "content": answer}
        finish = "stop"
    prompt_tokens = sum(len(_text_of(m.get("content")).split()) for m in messages)
    completion_tokens = len(_text_of(message.get("content")).split()) + 1
    return {
        "id": f"chatcmpl-mock-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model") or "mock-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def dashscope_reply_to(request: dict[str, Any], reply: Reply = reply_to) -> dict[str, Any]:
    """The response body of DashScope's native generation API (``result_format``
    ``message``) to its request body: ``reply``'s answer to the same conversation."""
    parameters = request.get("parameters") or {}
    chat = {
        "model": request.get("model"),
        "messages": (request.get("input") or {}).get("messages") or [],
        "tools": parameters.get("tools") or [],
    }
    answer = reply(chat)
    usage = answer.get("usage") or {}
    return {
        "request_id": answer.get("id"),
        "output": {"choices": answer["choices"]},
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "output_tokens": usage.get("completion_tokens", 0),
            "total_tokens": usage.get("total_tokens", 0),
        },
    }


def embedding_of(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """A deterministic unit vector for ``text``: each lower-cased word adds 1 or -1 at a
    position its hash picks (feature hashing), so texts that share words are close."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()) or [text]:
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dimensions
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(value * value for value in vector))
    if norm == 0.0:  # words that cancel out: one position, still deterministic
        vector[0], norm = 1.0, 1.0
    return [value / norm for value in vector]


def embeddings_reply_to(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The status and body of an Embeddings response (400 for an input that is not a
    non-empty string or list of them, as OpenAI answers)."""
    given = request.get("input")
    texts = [given] if isinstance(given, str) else given
    if (
        not isinstance(texts, list)
        or not texts
        or not all(isinstance(text, str) and text for text in texts)
    ):
        error = {"message": "input must be a non-empty string or list of non-empty strings"}
        return 400, {"error": {**error, "type": "invalid_request_error"}}
    dimensions = request.get("dimensions") or EMBEDDING_DIMENSIONS
    as_base64 = request.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = embedding_of(text, dimensions)
        embedding: Any = vector
        if as_base64:
            embedding = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(len(_WORD.findall(text)) or 1 for text in texts)
    return 200, {
        "object": "list",
        "data": data,
        "model": request.get("model") or "mock-embedding",
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many clients connect at once (the default backlog is 5)

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that went away mid-request (cancelled, or its process killed)


@dataclass
class RecordedRequest:
    """One request the server received."""

    path: str
    body: dict[str, Any]
    received_at: float
    """Wall-clock time (``time.time()``) the request was read."""
    replied_at: float | None = None
    """Wall-clock time the answer was written (None: not yet, or the write failed)."""


class MockModelServer:
    """``with MockModelServer() as server: ... server.base_url`` (ends in ``/v1``).

    Args:
        port: the port (0: a free one).
        delay: seconds before each answer: a number, or ``(low, high)`` for a uniform
            random delay in that range.
        reply: the model: a Chat Completions request body to its response body.
    """

    def __init__(
        self,
        port: int = 0,
        delay: float | tuple[float, float] = 0.0,
        reply: Reply = reply_to,
    ) -> None:
        self.request_count = 0
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        low, high = delay if isinstance(delay, tuple) else (delay, delay)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if len(raw) < length:  # the client died mid-request: nothing was asked
                    self.close_connection = True
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                if not isinstance(body, dict):
                    self._send(400, {"error": {"message": "the body is not a JSON object"}})
                    return
                record = RecordedRequest(path=self.path, body=body, received_at=time.time())
                with server._lock:
                    server.request_count += 1
                    server.requests.append(record)
                route = self.path.split("?", 1)[0].rstrip("/")
                if route.endswith("/chat/completions"):
                    status, payload = 200, reply(body)
                elif route.endswith(DASHSCOPE_GENERATION_PATH):
                    status, payload = 200, dashscope_reply_to(body, reply)
                elif route.endswith("/embeddings"):
                    status, payload = embeddings_reply_to(body)
                else:
                    status, payload = 404, {"error": {"message": f"no route {self.path}"}}
                if high > 0:
                    time.sleep(random.uniform(low, high))
                if self._send(status, payload):
                    record.replied_at = time.time()

            def _send(self, status: int, payload: Any) -> bool:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                except OSError:  # the client went away (cancelled, or its process killed)
                    self.close_connection = True
                    return False
                return True

        self._httpd = _Server(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def recorded(self) -> list[RecordedRequest]:
        """A copy of the requests received so far, in arrival order."""
        with self._lock:
            return list(self.requests)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> MockModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> MockModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = MockModelServer(args.port)
    print(f"mock model server on {server.base_url}", flush=True)
    server._httpd.serve_forever()


if __name__ == "__main__":
    main()
