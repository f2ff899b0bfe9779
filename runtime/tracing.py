"""OpenTelemetry traces of agent runs, after the GenAI semantic conventions.

The engine imports this module only when ``tracing.enabled`` is set: with tracing off no
span is made and ``opentelemetry`` is never imported. Spans go through the global tracer
provider (`opentelemetry.trace.get_tracer_provider`); a Flink worker with none sets one
up from the ``OTEL_*`` environment variables (`install_sdk_from_env`).

One trace per input::

    invoke_agent {agent}        the run (INTERNAL)
      action {action}           one action execution (INTERNAL)
        chat {model}            one model call of the built-in chat action, retries
                                included (CLIENT)
        execute_tool {tool}     one tool call of the built-in tool action (INTERNAL)

A run goes on over many `AgentEngine.step` calls and, on Flink, maybe across a restore in
another process, so its root span is not a context manager: it opens at the run's first
step, is kept open on the run (`RunState.trace_span`) and ends when the run ends or fails.
Its context is written with the run's snapshot (`RunState.trace_parent`, a W3C
``traceparent``). A run resumed from a snapshot, where its root span is not open, goes on
under a new ``invoke_agent`` span with ``flink_agents.resumed`` whose parent is the saved
root (the same trace; the saved root was ended, or is lost with the process that had it
open). A run tried again under ``input-failure.policy: skip`` continues its trace the same
way (``flink_agents.retry``). Roots still open when the engine closes (a stop with
savepoint, runs cancelled at the end of a job) end with ``flink_agents.run.suspended``.

Message content (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``) is recorded only with
``tracing.record-content``, and then sanitized like the event log: media keep their type,
MIME type, name and size but lose their data and URL; every string is redacted
(`flink_agents.api.redaction`: ``data:`` URLs, base64 runs, secrets, credential shapes).
Error messages on spans are redacted the same way, with or without content.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import threading
import traceback
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)

from flink_agents.api.chat_result import ChatResult
from flink_agents.api.content_blocks import (
    MediaBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.api.redaction import redact
from flink_agents.api.resource import ResourceType
from flink_agents.api.tool_response import ToolResponse
from flink_agents.runtime.event_log import sanitize_json
from flink_agents.runtime.keys import encode_key

if TYPE_CHECKING:
    from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
    from flink_agents.api.events.chat_event import ChatError
    from flink_agents.api.events.event import Event
    from flink_agents.api.runner_context import RunnerContext
    from flink_agents.plan.agent_plan import ActionSpec
    from flink_agents.runtime.run_state import ApprovalWait, RunState

__all__ = ["TRACER_NAME", "ChatSpan", "RunTracing", "install_sdk_from_env"]

_LOG = logging.getLogger(__name__)

T = TypeVar("T")

TRACER_NAME = "flink_agents"
"""The instrumentation scope of every span this module makes."""

_OTHER = "_OTHER"
"""The semantic conventions' value for a provider or error class they do not name."""

_REQUEST_PARAMS: dict[str, str] = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
}
"""Model parameters recorded on chat spans, by the name setups pass them under."""


# ---------------------------------------------------------------------------- the runs


class RunTracing:
    """The spans of one engine's runs (see the module doc).

    Args:
        agent_name: ``gen_ai.agent.name`` (and the root span's name).
        record_content: record messages, tool arguments and results (sanitized).
        tracer_provider: where spans go; None: the global provider, looked up at each
            span (so a provider set after the engine was built is used).
    """

    def __init__(
        self,
        agent_name: str | None,
        *,
        record_content: bool = False,
        tracer_provider: trace.TracerProvider | None = None,
    ) -> None:
        self.agent_name = agent_name
        self.record_content = record_content
        self._provider = tracer_provider
        self._tracer = trace.get_tracer(TRACER_NAME, tracer_provider=tracer_provider)
        self._root_name = f"invoke_agent {agent_name}" if agent_name else "invoke_agent"
        self._lock = threading.Lock()
        self._open: set[Span] = set()
        """Root spans open in this process (ended as suspended on `close`)."""

    # ------------------------------------------------------------------ roots

    def _start_root(
        self, run: RunState, parent: otel_context.Context | None, **extra: bool
    ) -> Span:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "flink_agents.key": _key_text(run.key),
            "flink_agents.seq": run.seq,
            **{f"flink_agents.{name}": value for name, value in extra.items()},
        }
        if self.agent_name:
            attributes["gen_ai.agent.name"] = self.agent_name
        # An explicit empty context: a root never nests under whatever is current.
        span = self._tracer.start_span(
            self._root_name,
            context=parent if parent is not None else otel_context.Context(),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        with self._lock:
            self._open.add(span)
        run.trace_span = span
        if run.trace_parent is None:
            span_context = span.get_span_context()
            if span_context.is_valid:
                run.trace_parent = _traceparent(span_context)
        return span

    def _root(self, run: RunState) -> Span:
        """The run's open root span: opened now for a new run (a new trace) or a run
        resumed from a snapshot (under its saved root)."""
        span = run.trace_span
        if span is not None:
            return span
        parent = _parent_context(run.trace_parent)
        if parent is None:
            run.trace_parent = None
            return self._start_root(run, None)
        return self._start_root(run, parent, resumed=True)

    def retried(self, run: RunState, failed: RunState) -> None:
        """``run`` is ``failed`` tried again from its start: it continues its trace."""
        run.trace_parent = failed.trace_parent
        run.trace_span = None
        self._start_root(run, _parent_context(failed.trace_parent), retry=True)

    def end_run(self, run: RunState, error: BaseException | None) -> None:
        """The run ended (``error``: it failed); its root span ends."""
        span = run.trace_span if run.trace_span is not None else self._root(run)
        run.trace_span = None
        with self._lock:
            if span not in self._open:
                return  # ended by `close` already
            self._open.discard(span)
        if error is None:
            span.set_attribute("flink_agents.outputs", len(run.outputs))
        else:
            _record_error(span, error)
        span.end()

    def close(self, flush_timeout_s: float = 5.0) -> None:
        """End the roots still open (``flink_agents.run.suspended``: their runs go on
        after a restore, or never) and flush the provider's spans."""
        with self._lock:
            spans, self._open = self._open, set()
        for span in spans:
            span.set_attribute("flink_agents.run.suspended", True)
            span.end()
        provider = self._provider if self._provider is not None else trace.get_tracer_provider()
        flush = getattr(provider, "force_flush", None)
        if callable(flush):
            try:
                flush(int(flush_timeout_s * 1000))
            except Exception:  # telemetry never fails the engine's close
                _LOG.warning("flushing the tracer provider failed", exc_info=True)

    # ------------------------------------------------------------------ actions

    @contextmanager
    def action(self, run: RunState, spec: ActionSpec, event: Event) -> Iterator[Span]:
        """The ``action`` span of one action execution, a child of the run's root, current
        while the body runs the action (`AgentEngine._execute`: a sync action's thread
        gets a copy of the context, with the span)."""
        root = self._root(run)
        span = self._tracer.start_span(
            f"action {spec.name}",
            context=trace.set_span_in_context(root),
            kind=SpanKind.INTERNAL,
            attributes={
                "flink_agents.action.name": spec.name,
                "flink_agents.event.type": event.type,
                "flink_agents.event.id": str(event.id),
            },
        )
        with _current(span):
            yield span

    # ------------------------------------------------------------------ model calls

    @contextmanager
    def chat(
        self,
        ctx: RunnerContext,
        setup: BaseChatModelSetup,
        setup_name: str,
        history: Sequence[ChatMessage],
    ) -> Iterator[ChatSpan]:
        """The ``chat`` span of one model call of setup ``setup_name`` (its retries
        included), current while the body runs; the body reports the outcome with
        `ChatSpan.answered` (a raise from the body, a failed call under
        ``error-handling-strategy: fail``, marks it failed)."""
        params = setup.model_kwargs
        request_model = params.get("model") or setup.model
        connection = _connection(ctx, setup)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _provider_name(connection),
            "flink_agents.chat.model_setup": setup_name,
        }
        if isinstance(request_model, str) and request_model:
            attributes["gen_ai.request.model"] = request_model
        else:
            request_model = None
        attributes.update(_server_attributes(connection))
        for name, key in _REQUEST_PARAMS.items():
            value = params.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                attributes[key] = value
        if self.record_content:
            attributes["gen_ai.input.messages"] = messages_json(history)
        span = self._tracer.start_span(
            f"chat {request_model}" if request_model else "chat",
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        chat_span = ChatSpan(span, self.record_content)
        with _current(span), chat_span:
            yield chat_span

    def chat_retry(self, kind: str | None, wait_s: float) -> None:
        """A model call failed and is tried again after ``wait_s`` seconds (an event on
        the ``chat`` span open in this context, if any)."""
        chat_span = _OPEN_CHAT.get()
        if chat_span is not None:
            chat_span.retried(kind, wait_s)

    # ------------------------------------------------------------------ approvals

    def approval_wait(self, run: RunState, wait: ApprovalWait) -> None:
        """One ``await_approval`` span for a tool request whose calls waited for a
        person: from when the run parked to the last decision (made once every call is
        decided, in whatever process decides it; under the run's trace)."""
        ended = max((d.decided_at_ms for d in wait.decisions.values()), default=0)
        ended = max(ended, wait.requested_at_ms)
        span = self._tracer.start_span(
            "await_approval",
            context=_parent_context(run.trace_parent) or otel_context.Context(),
            kind=SpanKind.INTERNAL,
            attributes={
                "flink_agents.key": _key_text(run.key),
                "flink_agents.seq": run.seq,
                "flink_agents.approval.calls": len(wait.requests),
                "flink_agents.approval.approved": sum(
                    1 for d in wait.decisions.values() if d.approved
                ),
                "flink_agents.approval.timed_out": sum(
                    1 for d in wait.decisions.values() if d.timed_out
                ),
            },
            start_time=wait.requested_at_ms * 1_000_000,
        )
        span.end(end_time=ended * 1_000_000)

    # ------------------------------------------------------------------ tool calls

    async def tool_call(
        self, name: str, call_id: str, arguments: Mapping[str, Any], call: Awaitable[T]
    ) -> T:
        """Await one tool call (its durable call, maybe replayed) inside its
        ``execute_tool`` span; a failed `ToolResponse` marks the span failed."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        if self.record_content:
            attributes["gen_ai.tool.call.arguments"] = _json(sanitize_json(dict(arguments)))
        span = self._tracer.start_span(
            f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        with _current(span):
            raw = await call
            response = raw if isinstance(raw, ToolResponse) else _tool_response(raw)
            if response is not None:
                if not response.success:
                    span.set_attribute("error.type", "tool_error")
                    span.set_status(Status(StatusCode.ERROR, response.error or "tool failed"))
                elif self.record_content:
                    result = response.to_result_block()
                    span.set_attribute("gen_ai.tool.call.result", _json(_result_json(result)))
        return raw


class ChatSpan:
    """One ``chat`` span while its call goes on (see `RunTracing.chat`)."""

    def __init__(self, span: Span, record_content: bool) -> None:
        self.span = span
        self.record_content = record_content
        self.retries = 0
        """Retries so far."""
        self._token: contextvars.Token[ChatSpan | None] | None = None

    def retried(self, kind: str | None, wait_s: float) -> None:
        """A failed attempt, tried again after ``wait_s`` seconds."""
        self.retries += 1
        self.span.add_event(
            "flink_agents.chat.retry",
            {"error.type": kind or _OTHER, "flink_agents.retry.wait_s": wait_s},
        )

    def answered(self, result: ChatResult | None, error: ChatError | None) -> None:
        """The call's outcome: its result, or the error it ended with."""
        span = self.span
        if result is not None:
            if result.model:
                span.set_attribute("gen_ai.response.model", result.model)
            if result.response_id:
                span.set_attribute("gen_ai.response.id", result.response_id)
            if result.finish_reason:
                span.set_attribute("gen_ai.response.finish_reasons", [result.finish_reason])
            for key, value in _usage_attributes(result).items():
                span.set_attribute(key, value)
            if self.record_content:
                span.set_attribute("gen_ai.output.messages", output_messages_json(result))
        if error is not None:
            span.set_attribute("error.type", error.kind or _status_text(error) or _OTHER)
            span.set_status(Status(StatusCode.ERROR, redact(error.message)))

    def __enter__(self) -> ChatSpan:
        self._token = _OPEN_CHAT.set(self)
        return self

    def __exit__(self, *_: object) -> None:
        self.span.set_attribute("flink_agents.chat.retries", self.retries)
        if self._token is not None:
            _OPEN_CHAT.reset(self._token)
            self._token = None


_OPEN_CHAT: contextvars.ContextVar[ChatSpan | None] = contextvars.ContextVar(
    "flink_agents_open_chat_span", default=None
)
"""The ``chat`` span whose call runs in this context (for `RunTracing.chat_retry`)."""


# ---------------------------------------------------------------------------- helpers


@contextmanager
def _current(span: Span) -> Iterator[Span]:
    """Make ``span`` current while the body runs, then end it: an exception marks it
    failed (redacted), a cancellation marks it ``flink_agents.cancelled``."""
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield span
    except asyncio.CancelledError:
        span.set_attribute("flink_agents.cancelled", True)
        raise
    except BaseException as exc:
        _record_error(span, exc)
        raise
    finally:
        otel_context.detach(token)
        span.end()


def _record_error(span: Span, error: BaseException) -> None:
    """Status ERROR, ``error.type`` and an ``exception`` event, every text redacted."""
    kind = type(error)
    # A provider error names its own class of error (``rate_limit``, ``overloaded``...).
    error_kind = error.kind if isinstance(error, ChatModelError) else None
    span.set_attribute("error.type", error_kind or kind.__qualname__)
    message = redact(str(error))
    span.set_status(Status(StatusCode.ERROR, f"{kind.__name__}: {message}"))
    stack = "".join(traceback.format_exception(kind, error, error.__traceback__))
    span.add_event(
        "exception",
        {
            "exception.type": f"{kind.__module__}.{kind.__qualname__}",
            "exception.message": message,
            "exception.stacktrace": redact(stack),
        },
    )


def _key_text(key: Any) -> str:
    """A string key as it is, any other as its JSON text (`encode_key`), redacted."""
    text = key if type(key) is str else encode_key(key)
    return redact(text)


def _traceparent(span_context: SpanContext) -> str:
    return (
        f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
        f"{int(span_context.trace_flags):02x}"
    )


def _parent_context(traceparent: str | None) -> otel_context.Context | None:
    """A context whose span is the saved root (not recording: it lives elsewhere), or
    None when there is no valid saved root."""
    if not traceparent:
        return None
    parts = traceparent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16 or len(parts[3]) != 2:
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    span_context = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))
    if not span_context.is_valid:
        return None
    return trace.set_span_in_context(NonRecordingSpan(span_context), otel_context.Context())


def _connection(ctx: RunnerContext, setup: BaseChatModelSetup) -> Any:
    """The setup's connection, or None when it cannot be had (the call then fails on
    its own, with its own error)."""
    try:
        return ctx.get_resource(setup.connection, ResourceType.CHAT_MODEL_CONNECTION)
    except Exception:
        return None


def _provider_name(connection: Any) -> str:
    name = getattr(connection, "provider_name", None)
    return name if isinstance(name, str) and name else _OTHER


def _server_attributes(connection: Any) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of a connection with a ``base_url`` (never
    its path, query or credentials)."""
    base_url = getattr(connection, "base_url", None)
    if not isinstance(base_url, str) or not base_url:
        return {}
    try:
        parts = urlsplit(base_url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return {}
    if not host:
        return {}
    attributes: dict[str, Any] = {"server.address": host}
    if port is not None:
        attributes["server.port"] = port
    return attributes


def _usage_attributes(result: ChatResult) -> dict[str, int]:
    usage = result.usage
    pairs = (
        ("gen_ai.usage.input_tokens", usage.input_tokens),
        ("gen_ai.usage.output_tokens", usage.output_tokens),
        ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
        ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
    )
    return {key: value for key, value in pairs if value is not None}


def _status_text(error: ChatError) -> str | None:
    return str(error.status_code) if error.status_code is not None else None


def _tool_response(raw: Any) -> ToolResponse | None:
    try:
        return ToolResponse.model_validate(raw)
    except Exception:
        return None


# ---------------------------------------------------------------------------- content


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _media_json(block: MediaBlock) -> dict[str, Any]:
    return block.redact().model_dump(mode="json", exclude_none=True, exclude={"redacted"})


def _result_json(block: ToolResultBlock) -> Any:
    """A tool result's content: its (redacted) text when it is text only, else parts."""
    if block.is_text_only:
        return redact(block.text)
    return [
        {"type": "text", "content": redact(b.text)} if isinstance(b, TextBlock) else _media_json(b)
        for b in block.content
    ]


def _part_json(block: Any) -> dict[str, Any]:
    """One content block as a part of the conventions' message schema, sanitized."""
    if isinstance(block, TextBlock):
        return {"type": "text", "content": redact(block.text)}
    if isinstance(block, MediaBlock):
        return _media_json(block)
    if isinstance(block, ReasoningBlock):
        # Only the readable text: signatures and encrypted content are the provider's.
        return {"type": "reasoning", "content": redact(block.text)}
    if isinstance(block, ToolCallBlock):
        return {
            "type": "tool_call",
            "id": block.id,
            "name": block.name,
            "arguments": sanitize_json(block.input),
        }
    if isinstance(block, ToolResultBlock):
        part: dict[str, Any] = {
            "type": "tool_call_response",
            "id": block.call_id,
            "response": _result_json(block),
        }
        if block.is_error:
            part["is_error"] = True
        return part
    return {"type": str(getattr(block, "type", "unknown"))}


def _message_json(message: ChatMessage) -> dict[str, Any]:
    return {"role": message.role.value, "parts": [_part_json(b) for b in message.blocks]}


def messages_json(messages: Sequence[ChatMessage]) -> str:
    """``gen_ai.input.messages``: the messages as the conventions' JSON, sanitized."""
    return _json([_message_json(m) for m in messages])


def output_messages_json(result: ChatResult) -> str:
    """``gen_ai.output.messages``: the answer, with its finish reason when known."""
    message = _message_json(result.message)
    if result.finish_reason:
        message["finish_reason"] = result.finish_reason
    return _json([message])


# ---------------------------------------------------------------------------- the SDK

_install_lock = threading.Lock()
_installed = False


def install_sdk_from_env() -> bool:
    """Set the global tracer provider up from the ``OTEL_*`` environment variables, once
    per process, unless a provider is set already; True when this call set it.

    ``OTEL_SDK_DISABLED=true``: nothing. ``OTEL_TRACES_EXPORTER`` (default ``otlp``,
    comma-separated): ``otlp`` (protocol from ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or
    ``OTEL_EXPORTER_OTLP_PROTOCOL``: ``http/protobuf``, the default, or ``grpc``, which
    needs ``opentelemetry-exporter-otlp-proto-grpc``), ``console``, ``none``, or the name
    of an ``opentelemetry_traces_exporter`` entry point. The exporters read their own
    variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``..._HEADERS``, ``..._TIMEOUT``...), the
    batch processor ``OTEL_BSP_*``, the sampler ``OTEL_TRACES_SAMPLER``; the resource
    comes from ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` (service name
    ``flink-agents`` when neither names one).

    Raises `ImportError` (naming the ``tracing`` extra) when the SDK or an exporter is
    not installed, `ValueError` for an exporter or protocol it does not know.
    """
    global _installed
    with _install_lock:
        if _installed:
            return False
        if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            _installed = True
            return False
        if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            _installed = True
            return False  # the application set its own
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise ImportError(
                "tracing.enabled: the OpenTelemetry SDK is not installed in this Python "
                "environment (pip install 'pyflink-agents[tracing]'), and no tracer "
                "provider is set"
            ) from exc
        # A mistake raises here, before anything is set: the next engine raises it again.
        exporters = [_exporter(name) for name in _exporter_names()]
        provider = TracerProvider(resource=Resource.create(_resource_attributes()))
        for exporter in exporters:
            provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        _installed = True
        return True


def _exporter_names() -> list[str]:
    names = os.environ.get("OTEL_TRACES_EXPORTER", "otlp")
    found = [n.strip().lower() for n in names.split(",") if n.strip()]
    return [n for n in found if n != "none"]


def _resource_attributes() -> dict[str, str]:
    if os.environ.get("OTEL_SERVICE_NAME", "").strip():
        return {}
    listed = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    if any(item.split("=", 1)[0].strip() == "service.name" for item in listed.split(",")):
        return {}
    return {"service.name": "flink-agents"}


def _exporter(name: str) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if name == "otlp":
        protocol = (
            os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or "http/protobuf"
        ).strip()
        if protocol == "http/protobuf":
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )
            except ImportError as exc:
                raise ImportError(
                    "tracing.enabled: the OTLP/HTTP span exporter is not installed "
                    "(pip install 'pyflink-agents[tracing]')"
                ) from exc
            return OTLPSpanExporter()
        if protocol == "grpc":
            name = "otlp_proto_grpc"
        else:
            raise ValueError(
                f"OTEL_EXPORTER_OTLP_PROTOCOL {protocol!r} is not supported for traces "
                "(http/protobuf or grpc)"
            )
    from importlib.metadata import entry_points

    found = list(entry_points(group="opentelemetry_traces_exporter", name=name))
    if not found:
        if name == "otlp_proto_grpc":
            raise ImportError(
                "OTLP over gRPC needs opentelemetry-exporter-otlp-proto-grpc "
                "(or use OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)"
            )
        raise ValueError(
            f"OTEL_TRACES_EXPORTER names {name!r}: no such span exporter is installed "
            "(otlp, console, none, or an opentelemetry_traces_exporter entry point)"
        )
    return found[0].load()()
