"""A tiny OTLP/HTTP trace receiver on 127.0.0.1 for tests: it decodes each protobuf
``ExportTraceServiceRequest`` (``opentelemetry-proto``) that arrives at ``/v1/traces``
and keeps its spans as plain dicts.

    with OtlpReceiver() as receiver:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        ...
        spans = receiver.wait_for(lambda spans: len(spans) >= 3, timeout_s=30)
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

__all__ = ["OtlpReceiver", "ReceivedSpan"]

ReceivedSpan = dict[str, Any]
"""``name``, ``trace_id``, ``span_id``, ``parent_span_id`` (hex, ``""`` for none), ``kind``
(the OTLP enum name, ``SPAN_KIND_CLIENT``...), ``attributes``, ``status`` (``code``,
``message``), ``events`` (names), ``scope`` and ``resource`` (attributes)."""

_KINDS = {
    0: "SPAN_KIND_UNSPECIFIED",
    1: "SPAN_KIND_INTERNAL",
    2: "SPAN_KIND_SERVER",
    3: "SPAN_KIND_CLIENT",
    4: "SPAN_KIND_PRODUCER",
    5: "SPAN_KIND_CONSUMER",
}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one serialized ``ExportTraceServiceRequest``."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    {
                        "name": span.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "kind": _KINDS.get(span.kind, str(span.kind)),
                        "attributes": _attributes(span.attributes),
                        "status": {
                            "code": _STATUS.get(span.status.code, str(span.status.code)),
                            "message": span.status.message,
                        },
                        "events": [event.name for event in span.events],
                        "event_attributes": [_attributes(e.attributes) for e in span.events],
                        "scope": scope_spans.scope.name,
                        "resource": resource,
                    }
                )
    return spans


class OtlpReceiver:
    """Receives OTLP/HTTP protobuf trace exports on 127.0.0.1 (a free port)."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._spans: list[ReceivedSpan] = []
        self.requests = 0
        """Export requests received."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                spans = decode(body)
                with receiver._lock:
                    receiver._spans.extend(spans)
                    receiver.requests += 1
                    receiver._lock.notify_all()
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="otlp-receiver", daemon=True
        )

    @property
    def endpoint(self) -> str:
        """The base URL for ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the exporter adds
        ``/v1/traces``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def spans(self) -> list[ReceivedSpan]:
        """The spans received so far."""
        with self._lock:
            return list(self._spans)

    def wait_for(
        self, done: Callable[[list[ReceivedSpan]], bool], timeout_s: float
    ) -> list[ReceivedSpan]:
        """The spans once ``done(spans)`` holds; `TimeoutError` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while not done(list(self._spans)):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"the spans received ({len(self._spans)}) never became what was waited for"
                    )
                self._lock.wait(left)
            return list(self._spans)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
