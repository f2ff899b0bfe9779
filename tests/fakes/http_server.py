"""A scripted HTTP server on 127.0.0.1 for testing provider adapters through the real SDKs.

Each request is recorded (method, path, headers, parsed JSON body); each answer
comes from a queue of `ScriptedResponse`s, or from a function of the request.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeProviderServer", "RecordedRequest", "ScriptedResponse"]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    """The JSON body, parsed (or the raw text when it is not JSON)."""


@dataclass
class ScriptedResponse:
    status: int = 200
    body: Any = None
    """A JSON-able value, or ``str``/``bytes`` sent as they are (for malformed bodies)."""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Seconds before the answer starts."""
    drip_s: float = 0.0
    """Seconds between the body's bytes, sent one at a time (0: the body at once)."""


Responder = Callable[[RecordedRequest], ScriptedResponse]


class FakeProviderServer:
    """``with FakeProviderServer() as server: server.base_url ...``"""

    def __init__(self, responder: Responder | None = None) -> None:
        self.requests: list[RecordedRequest] = []
        self._queue: list[ScriptedResponse] = []
        self._responder = responder
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                request = RecordedRequest(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
                )
                reply = server._next(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if isinstance(reply.body, bytes):
                    payload = reply.body
                elif isinstance(reply.body, str):
                    payload = reply.body.encode("utf-8")
                else:
                    payload = json.dumps(reply.body).encode("utf-8")
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    if reply.drip_s:
                        for i in range(len(payload)):
                            self.wfile.write(payload[i : i + 1])
                            self.wfile.flush()
                            time.sleep(reply.drip_s)
                    else:
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_POST = _handle
            do_GET = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _next(self, request: RecordedRequest) -> ScriptedResponse:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.pop(0)
        if self._responder is not None:
            return self._responder(request)
        return ScriptedResponse(500, {"error": {"message": "no scripted response left"}})

    def enqueue(self, *responses: ScriptedResponse | dict[str, Any]) -> None:
        """Answer the next requests with these (a dict is a 200 JSON body)."""
        with self._lock:
            for response in responses:
                if isinstance(response, ScriptedResponse):
                    self._queue.append(response)
                else:
                    self._queue.append(ScriptedResponse(body=response))

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies received, in order."""
        return [r.body for r in self.requests]

    def __enter__(self) -> FakeProviderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
