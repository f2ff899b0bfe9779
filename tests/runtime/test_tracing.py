"""OpenTelemetry traces of agent runs (`flink_agents.runtime.tracing`): spans after the
GenAI semantic conventions, one trace per input across steps, restores and retries,
content only on request and sanitized, nothing of OpenTelemetry when tracing is off.

Spans go to the SDK's in-memory exporter behind the global tracer provider (set once for
this process); global set-ups (`install_sdk_from_env`, the import check) run in fresh
interpreters.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from flink_agents.api import (
    Agent,
    ChatMessage,
    Event,
    InputEvent,
    OutputEvent,
    RunnerContext,
    ScriptedChatModelConnection,
    ToolCallBlock,
)
from flink_agents.api.chat_result import ChatResult, Usage
from flink_agents.api.content_blocks import ImageBlock, TextBlock
from flink_agents.api.errors import ChatModelError
from flink_agents.api.redaction import clear_registered_secrets, register_secret
from flink_agents.runtime import builtin_actions
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.run_state import RunState
from flink_agents.runtime.tracing import RunTracing
from tests.runtime.chat_agents import chat_agent, run_local

ROOT = Path(__file__).resolve().parents[2]
ON = {"tracing.enabled": True}
PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2).decode()
SECRET = "sk-test-0123456789abcdefghij"


@pytest.fixture(scope="module")
def _exporter() -> InMemorySpanExporter:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def spans(_exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    _exporter.clear()
    yield _exporter
    _exporter.clear()


def finished(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return list(exporter.get_finished_spans())


def named(found: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in found if s.name.startswith(prefix)]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id


# ---------------------------------------------------------------------------- agents


class TwoStepAgent(Agent):
    """`first` (async) sends an event `second` (sync) answers; `second` fails while the
    input says so, and opens a span of its own (it must nest under its action span)."""

    def __init__(self, failures: int = 0) -> None:
        super().__init__()
        self.failures_left = [failures]
        self.add_action("first", [InputEvent], self._first)
        self.add_action("second", ["t_second"], self._second)

    @staticmethod
    async def _first(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(Event("t_second", {"value": event.attributes["input"]}))

    def _second(self, event: Event, ctx: RunnerContext) -> None:
        with trace.get_tracer("user").start_as_current_span("user work"):
            pass
        if self.failures_left[0] > 0:
            self.failures_left[0] -= 1
            raise RuntimeError(f"boom with api_key={SECRET}")
        ctx.send_event(OutputEvent(output=f"done {event.attributes['value']}"))


def run_engine(engine: AgentEngine, key: Any, value: Any) -> RunState:
    key_state = engine.new_key_state()
    run = engine.start_run(key, value, key_state)
    asyncio.run(engine.run(run, key_state))
    return run


# ---------------------------------------------------------------------------- runs


def test_each_input_is_one_trace_with_its_run_and_action_spans(
    spans: InMemorySpanExporter,
) -> None:
    outputs, _ = run_local(TwoStepAgent(), [{"key": "a", "value": 1}, {"key": 7, "value": 2}], ON)
    assert sorted(o.value for o in outputs) == ["done 1", "done 2"]

    found = finished(spans)
    roots = named(found, "invoke_agent")
    assert len(roots) == 2
    by_key = {attrs(r)["flink_agents.key"]: r for r in roots}
    assert set(by_key) == {"a", "7"}  # a string key as it is, another as its JSON text
    for key, root in by_key.items():
        assert root.name == "invoke_agent TwoStepAgent"
        assert root.kind is SpanKind.INTERNAL
        assert root.parent is None
        assert attrs(root) == {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "TwoStepAgent",
            "flink_agents.key": key,
            "flink_agents.seq": 0,
            "flink_agents.outputs": 1,
        }
        assert root.status.status_code is StatusCode.UNSET
        in_trace = [s for s in found if trace_id(s) == trace_id(root)]
        actions = named(in_trace, "action ")
        assert [a.name for a in sorted(actions, key=lambda s: s.start_time or 0)] == [
            "action first",
            "action second",
        ]
        assert all(parent_id(a) == span_id(root) for a in actions)
        second = named(actions, "action second")[0]
        assert attrs(second)["flink_agents.event.type"] == "t_second"
        assert attrs(second)["flink_agents.action.name"] == "second"
        # A span the sync action opened on its thread nests under its action span.
        (user,) = named(in_trace, "user work")
        assert parent_id(user) == span_id(second)
        assert len(in_trace) == 4
    assert trace_id(roots[0]) != trace_id(roots[1])


def test_a_failed_run_ends_its_spans_failed_with_the_error_redacted(
    spans: InMemorySpanExporter,
) -> None:
    engine = AgentEngine(TwoStepAgent(failures=1), ON)
    with pytest.raises(Exception, match="boom"):
        run_engine(engine, "k", "x")
    found = finished(spans)
    (root,) = named(found, "invoke_agent")
    (action,) = named(found, "action second")
    for span in (root, action):
        assert span.status.status_code is StatusCode.ERROR
        assert SECRET not in (span.status.description or "")
        assert "boom" in (span.status.description or "")
    assert attrs(action)["error.type"] == "RuntimeError"
    assert attrs(root)["error.type"] == "ActionExecutionError"
    (event,) = [e for e in action.events if e.name == "exception"]
    event_attrs = dict(event.attributes or {})
    assert event_attrs["exception.type"] == "builtins.RuntimeError"
    assert "boom" in str(event_attrs["exception.message"])
    for value in event_attrs.values():
        assert SECRET not in str(value)
    engine.close()


def test_a_resumed_run_continues_its_trace_under_the_saved_root(
    spans: InMemorySpanExporter,
) -> None:
    # The first process: one step, then its snapshot (what a checkpoint keeps).
    first = AgentEngine(TwoStepAgent(), ON)
    key_state = first.new_key_state()
    run = first.start_run("k", "x", key_state)
    asyncio.run(first.step(run, key_state))
    snapshot = first.dump_run(run)
    saved = json.loads(snapshot)["trace_parent"]
    assert isinstance(saved, str)
    first.close()  # a stop with savepoint: the open root ends as suspended
    (root,) = named(finished(spans), "invoke_agent")
    assert attrs(root)["flink_agents.run.suspended"] is True
    assert saved.startswith(f"00-{trace_id(root):032x}-{span_id(root):016x}-")

    # Another process restores the snapshot and finishes the run.
    second = AgentEngine(TwoStepAgent(), ON)
    restored = second.load_run(snapshot)
    assert asyncio.run(second.run(restored, second.load_key_state(key_state.to_json()))) == [
        "done x"
    ]
    found = finished(spans)
    assert {trace_id(s) for s in found} == {trace_id(root)}  # one trace
    resumed = [s for s in named(found, "invoke_agent") if s is not root and s.name == root.name]
    (resumed_root,) = [s for s in resumed if attrs(s).get("flink_agents.resumed")]
    assert parent_id(resumed_root) == span_id(root)
    assert attrs(resumed_root)["flink_agents.seq"] == 0
    (second_action,) = named(found, "action second")
    assert parent_id(second_action) == span_id(resumed_root)
    # The resumed run keeps pointing at the first root (a later restore goes there too).
    assert restored.trace_parent == saved
    second.close()


def test_a_run_tried_again_continues_the_trace_of_the_failed_attempt(
    spans: InMemorySpanExporter,
) -> None:
    config = {**ON, "input-failure.policy": "skip", "input-failure.retries": 1}
    outputs, _ = run_local(TwoStepAgent(failures=1), [{"key": "k", "value": "v"}], config)
    assert [o.value for o in outputs] == ["done v"]
    roots = sorted(named(finished(spans), "invoke_agent"), key=lambda s: s.start_time or 0)
    assert len(roots) == 2
    failed, retry = roots
    assert failed.status.status_code is StatusCode.ERROR
    assert attrs(retry)["flink_agents.retry"] is True
    assert trace_id(retry) == trace_id(failed)
    assert parent_id(retry) == span_id(failed)
    assert retry.status.status_code is StatusCode.UNSET


def test_a_snapshot_written_without_tracing_starts_a_trace_when_restored(
    spans: InMemorySpanExporter,
) -> None:
    off = AgentEngine(TwoStepAgent())
    assert off.tracing is None
    key_state = off.new_key_state()
    run = off.start_run("k", "x", key_state)
    asyncio.run(off.step(run, key_state))
    snapshot = off.dump_run(run)
    assert json.loads(snapshot)["trace_parent"] is None
    assert finished(spans) == []

    on = AgentEngine(TwoStepAgent(), ON)
    restored = on.load_run(snapshot)
    asyncio.run(on.run(restored, key_state))
    (root,) = named(finished(spans), "invoke_agent")
    assert root.parent is None
    assert "flink_agents.resumed" not in attrs(root)


def test_a_garbled_saved_context_starts_a_new_trace(spans: InMemorySpanExporter) -> None:
    engine = AgentEngine(TwoStepAgent(), ON)
    key_state = engine.new_key_state()
    run = engine.start_run("k", "x", key_state)
    run.trace_parent = "00-not-a-trace-01"
    asyncio.run(engine.run(run, key_state))
    (root,) = named(finished(spans), "invoke_agent")
    assert root.parent is None
    assert run.trace_parent is not None
    assert run.trace_parent.startswith(f"00-{trace_id(root):032x}-{span_id(root):016x}-")


def test_the_engine_pickles_and_opens_its_tracing_where_unpickled(
    spans: InMemorySpanExporter,
) -> None:
    import cloudpickle

    engine = cloudpickle.loads(cloudpickle.dumps(AgentEngine(TwoStepAgent(), ON)))
    assert isinstance(engine.tracing, RunTracing)
    run_engine(engine, "k", "x")
    assert len(named(finished(spans), "invoke_agent")) == 1


# ---------------------------------------------------------------------------- chat and tools


def lookup(ticket: str) -> str:
    """Look a ticket up.

    Args:
        ticket: The ticket id.
    """
    return f"{ticket} is open"


def broken(ticket: str) -> str:
    """A tool that fails.

    Args:
        ticket: The ticket id.
    """
    raise ValueError(f"no access with token={SECRET}")


def chart(title: str, auth: str = "") -> ImageBlock:
    """Render a chart.

    Args:
        title: The chart title.
        auth: A credential.
    """
    return ImageBlock(mime_type="image/png", data=PNG_B64, name=f"{title}.png")


def by_parent(found: Sequence[ReadableSpan]) -> dict[int, ReadableSpan]:
    return {span_id(s): s for s in found}


def test_model_and_tool_calls_are_chat_and_execute_tool_spans_under_their_actions(
    spans: InMemorySpanExporter,
) -> None:
    calls = [
        ToolCallBlock(id="c1", name="lookup", input={"ticket": "T1"}),
        ToolCallBlock(id="c2", name="broken", input={"ticket": "T2"}),
    ]
    first = ChatResult(
        message=ChatMessage.assistant("Looking.", tool_calls=calls),
        model="model-2024-01",
        response_id="resp_1",
        usage=Usage(input_tokens=11, output_tokens=7, cache_read_tokens=3),
        finish_reason="tool_calls",
    )
    connection = ScriptedChatModelConnection(replies=[first, "T1 is open; T2 failed"])
    agent = chat_agent(connection, tools={"lookup": lookup, "broken": broken})
    outputs, _ = run_local(agent, [{"key": "k", "value": "status?"}], ON)
    assert outputs[0].value.response.text == "T1 is open; T2 failed"

    found = finished(spans)
    assert len({trace_id(s) for s in found}) == 1
    ids = by_parent(found)
    chats = sorted(named(found, "chat"), key=lambda s: s.start_time or 0)
    assert [c.name for c in chats] == ["chat test-model", "chat test-model"]
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT
        assert ids[parent_id(chat) or 0].name == "action _chat_model_action"
    assert attrs(chats[0]) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "_OTHER",
        "gen_ai.request.model": "test-model",
        "gen_ai.response.model": "model-2024-01",
        "gen_ai.response.id": "resp_1",
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 11,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.usage.cache_read.input_tokens": 3,
        "flink_agents.chat.model_setup": "model",
        "flink_agents.chat.retries": 0,
    }
    # Usage the provider did not report is left out, not recorded as 0.
    assert "gen_ai.usage.input_tokens" not in attrs(chats[1])
    assert attrs(chats[1])["gen_ai.response.finish_reasons"] == ("stop",)

    tools = {attrs(t)["gen_ai.tool.name"]: t for t in named(found, "execute_tool")}
    assert set(tools) == {"lookup", "broken"}
    for name, call_id in (("lookup", "c1"), ("broken", "c2")):
        tool = tools[name]
        assert tool.name == f"execute_tool {name}"
        assert ids[parent_id(tool) or 0].name == "action _tool_call_action"
        assert attrs(tool)["gen_ai.operation.name"] == "execute_tool"
        assert attrs(tool)["gen_ai.tool.call.id"] == call_id
        assert "gen_ai.tool.call.arguments" not in attrs(tool)  # content is off
    assert tools["lookup"].status.status_code is StatusCode.UNSET
    assert tools["broken"].status.status_code is StatusCode.ERROR
    assert attrs(tools["broken"])["error.type"] == "tool_error"
    assert "ValueError" in (tools["broken"].status.description or "")
    assert SECRET not in (tools["broken"].status.description or "")
    for span in found:
        assert not any(
            k.startswith("gen_ai.input") or k.startswith("gen_ai.output") for k in attrs(span)
        )


@pytest.fixture
def no_retry_wait(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(builtin_actions, "_sleep", sleep)
    return waits


def test_a_retried_model_call_is_one_chat_span_with_its_retries(
    spans: InMemorySpanExporter, no_retry_wait: list[float]
) -> None:
    overloaded = ChatModelError("busy", retryable=True, status_code=529, kind="overloaded")
    connection = ScriptedChatModelConnection(replies=[overloaded, overloaded, "fine"])
    run_local(chat_agent(connection), [{"key": "k", "value": "hi"}], ON)
    (chat,) = named(finished(spans), "chat")
    assert attrs(chat)["flink_agents.chat.retries"] == 2
    retries = [e for e in chat.events if e.name == "flink_agents.chat.retry"]
    assert [dict(e.attributes or {}) for e in retries] == [
        {"error.type": "overloaded", "flink_agents.retry.wait_s": wait} for wait in no_retry_wait
    ]
    assert chat.status.status_code is StatusCode.UNSET


def test_a_model_call_that_ends_in_an_error_response_fails_its_chat_span_only(
    spans: InMemorySpanExporter,
) -> None:
    limited = ChatModelError(
        f"slow down {SECRET}", retryable=False, status_code=429, kind="rate_limit"
    )
    connection = ScriptedChatModelConnection(replies=[limited])
    outputs, _ = run_local(
        chat_agent(connection),
        [{"key": "k", "value": "hi"}],
        {**ON, "error-handling-strategy": "ignore"},
    )
    assert outputs[0].value.error.kind == "rate_limit"
    found = finished(spans)
    (chat,) = named(found, "chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == "rate_limit"
    assert SECRET not in (chat.status.description or "")
    (root,) = named(found, "invoke_agent")
    assert root.status.status_code is StatusCode.UNSET


def test_under_strategy_fail_a_failed_model_call_fails_its_span_and_the_run(
    spans: InMemorySpanExporter,
) -> None:
    connection = ScriptedChatModelConnection(
        replies=[ChatModelError("no", status_code=400, kind="invalid_request")]
    )
    engine = AgentEngine(chat_agent(connection), {**ON, "error-handling-strategy": "fail"})
    with pytest.raises(Exception, match="no"):
        run_engine(engine, "k", "hi")
    found = finished(spans)
    (chat,) = named(found, "chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == "invalid_request"
    (root,) = named(found, "invoke_agent")
    assert root.status.status_code is StatusCode.ERROR


def test_recorded_content_is_sanitized(spans: InMemorySpanExporter) -> None:
    register_secret(SECRET)
    try:
        question = ChatMessage.user(
            [
                TextBlock(text=f"my key is {SECRET}, see data:image/png;base64,{PNG_B64}"),
                ImageBlock(mime_type="image/png", data=PNG_B64, name="photo.png"),
                ImageBlock(mime_type="image/jpeg", url="https://media.example.com/p.jpg?sig=x"),
            ]
        )
        call = ToolCallBlock(id="c1", name="chart", input={"title": "sales", "auth": SECRET})
        connection = ScriptedChatModelConnection(
            replies=[ChatMessage.assistant("Drawing.", tool_calls=[call]), "A rising line."]
        )
        agent = chat_agent(connection, tools={"chart": chart})
        run_local(
            agent, [{"key": "k", "value": [question]}], {**ON, "tracing.record-content": True}
        )
    finally:
        clear_registered_secrets()

    found = finished(spans)
    recorded = json.dumps([attrs(s) for s in found], default=str)
    for leak in (SECRET, PNG_B64[:64], "media.example.com", "sig=x"):
        assert leak not in recorded

    first, second = sorted(named(found, "chat"), key=lambda s: s.start_time or 0)
    sent = json.loads(attrs(first)["gen_ai.input.messages"])
    assert sent[0]["role"] == "user"
    text, photo, linked = sent[0]["parts"]
    assert text["type"] == "text"
    assert "my key is ***" in text["content"]
    assert "data:image/png;base64,<" in text["content"]
    assert photo == {
        "type": "image",
        "mime_type": "image/png",
        "name": "photo.png",
        "size_bytes": 520,
    }
    assert linked == {"type": "image", "mime_type": "image/jpeg"}
    answered = json.loads(attrs(first)["gen_ai.output.messages"])
    assert answered == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Drawing."},
                {
                    "type": "tool_call",
                    "id": "c1",
                    "name": "chart",
                    "arguments": {"title": "sales", "auth": "***ghij"},
                },
            ],
            "finish_reason": "tool_calls",
        }
    ]
    history = json.loads(attrs(second)["gen_ai.input.messages"])
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[2]["parts"] == [
        {
            "type": "tool_call_response",
            "id": "c1",
            "response": [
                {"type": "image", "mime_type": "image/png", "name": "sales.png", "size_bytes": 520}
            ],
        }
    ]
    (tool,) = named(found, "execute_tool")
    assert json.loads(attrs(tool)["gen_ai.tool.call.arguments"]) == {
        "title": "sales",
        "auth": "***ghij",
    }
    assert json.loads(attrs(tool)["gen_ai.tool.call.result"]) == history[2]["parts"][0]["response"]


# ---------------------------------------------------------------------------- off


def _python(code: str, env: dict[str, str] | None = None, *, replace_env: bool = False) -> str:
    """What ``code`` prints, run in a fresh interpreter (``env`` added to this one's, or
    instead of it)."""
    import os

    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(env or {}) if replace_env else {**os.environ, **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_with_tracing_off_opentelemetry_is_not_even_imported() -> None:
    out = _python(
        """
        import asyncio, sys
        from flink_agents.api import Agent, InputEvent, OutputEvent
        from flink_agents.runtime.local_runner import LocalRunner

        def loaded():
            return sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")

        async def answer(event, ctx):
            ctx.send_event(OutputEvent(output=f"done {event.attributes['input']}"))

        agent = Agent().add_action("answer", InputEvent, answer)
        runner = LocalRunner(agent, {})
        print(asyncio.run(runner.run([{"key": "k", "value": 1}]))[0].value, loaded())
        runner.close()
        runner = LocalRunner(agent, {"tracing.enabled": True})
        asyncio.run(runner.run([{"key": "k", "value": 1}]))
        print("on", "opentelemetry.trace" in loaded())
        """
    )
    assert out.splitlines() == ["done 1 []", "on True"]


# ---------------------------------------------------------------------------- the SDK


def _clean_env(**values: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(values)
    return env


def test_install_sdk_from_env_exports_over_otlp_http_to_the_configured_endpoint() -> None:
    from e2e_tests.otlp_receiver import OtlpReceiver

    with OtlpReceiver() as receiver:
        out = _python(
            """
            import asyncio
            from opentelemetry import trace
            from flink_agents.api import Agent, InputEvent, OutputEvent
            from flink_agents.runtime.local_runner import LocalRunner
            from flink_agents.runtime.tracing import install_sdk_from_env

            async def answer(event, ctx):
                ctx.send_event(OutputEvent(output=event.attributes["input"]))

            print(install_sdk_from_env(), install_sdk_from_env())
            provider = trace.get_tracer_provider()
            runner = LocalRunner(Agent().add_action("answer", InputEvent, answer),
                                 {"tracing.enabled": True})
            asyncio.run(runner.run([{"key": "k", "value": 1}]))
            runner.close()  # flushes the provider
            print(type(provider).__name__)
            """,
            env=_clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint),
            replace_env=True,
        )
        assert out.splitlines() == ["True False", "TracerProvider"]
        found = receiver.wait_for(lambda spans: len(spans) >= 2, timeout_s=30)
    assert sorted(s["name"] for s in found) == ["action answer", "invoke_agent Agent"]
    root = next(s for s in found if s["name"] == "invoke_agent Agent")
    action = next(s for s in found if s["name"] == "action answer")
    assert action["parent_span_id"] == root["span_id"]
    assert action["trace_id"] == root["trace_id"]
    assert root["attributes"]["flink_agents.key"] == "k"
    assert root["resource"]["service.name"] == "flink-agents"
    assert root["scope"] == "flink_agents"


def test_install_sdk_from_env_keeps_a_set_provider_and_refuses_unknown_exporters() -> None:
    out = _python(
        """
        import importlib.metadata
        import os
        from opentelemetry import trace
        from flink_agents.runtime.tracing import install_sdk_from_env

        # As if the gRPC exporter were not installed (chromadb, in dev, brings it).
        real_entry_points = importlib.metadata.entry_points
        importlib.metadata.entry_points = lambda **kw: (
            [] if kw.get("name") == "otlp_proto_grpc" else real_entry_points(**kw)
        )

        def attempt():
            try:
                return install_sdk_from_env()
            except (ImportError, ValueError) as exc:
                return f"{type(exc).__name__}: {exc}"

        os.environ["OTEL_TRACES_EXPORTER"] = "bogus"
        print(attempt())
        os.environ["OTEL_TRACES_EXPORTER"] = "otlp"
        os.environ["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/json"
        print(attempt())
        os.environ["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
        print(attempt())
        print(type(trace.get_tracer_provider()).__name__)  # nothing was set
        os.environ["OTEL_TRACES_EXPORTER"] = "none"
        os.environ["OTEL_SERVICE_NAME"] = "my-agents"
        print(attempt(), attempt())
        provider = trace.get_tracer_provider()
        print(type(provider).__name__, provider.resource.attributes["service.name"])
        """,
        env=_clean_env(),
        replace_env=True,
    )
    lines = out.splitlines()
    assert lines[0].startswith("ValueError: OTEL_TRACES_EXPORTER names 'bogus'")
    assert lines[1].startswith("ValueError: OTEL_EXPORTER_OTLP_PROTOCOL 'http/json'")
    assert lines[2].startswith("ImportError: OTLP over gRPC needs")
    assert lines[3:] == ["ProxyTracerProvider", "True False", "TracerProvider my-agents"]


def test_install_sdk_from_env_leaves_an_application_provider_and_a_disabled_sdk() -> None:
    out = _python(
        """
        import os
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from flink_agents.runtime import tracing

        os.environ["OTEL_SDK_DISABLED"] = "true"
        print(tracing.install_sdk_from_env(), type(trace.get_tracer_provider()).__name__)
        tracing._installed = False
        del os.environ["OTEL_SDK_DISABLED"]
        mine = TracerProvider()
        trace.set_tracer_provider(mine)
        print(tracing.install_sdk_from_env(), trace.get_tracer_provider() is mine)
        """,
        env=_clean_env(),
        replace_env=True,
    )
    assert out.splitlines() == ["False ProxyTracerProvider", "False True"]


def test_the_flink_engine_factory_sets_the_worker_provider_up_when_tracing_is_on() -> None:
    out = _python(
        """
        from opentelemetry import trace
        from flink_agents.api import Agent
        from flink_agents.runtime.flink.engine_factory import AgentEngineFactory
        from flink_agents.runtime.flink.operator import SubtaskContext
        from flink_agents.runtime.metrics import InMemoryMetricGroup

        def build(config):
            context = SubtaskContext("t", 0, 1, 0, InMemoryMetricGroup())
            return AgentEngineFactory(Agent(), config)(context)

        engine = build({})
        print(engine.tracing, type(trace.get_tracer_provider()).__name__)
        engine = build({"tracing.enabled": True})
        print(type(engine.tracing).__name__, type(trace.get_tracer_provider()).__name__)
        engine.close()
        """,
        env=_clean_env(OTEL_TRACES_EXPORTER="none"),
        replace_env=True,
    )
    assert out.splitlines() == ["None ProxyTracerProvider", "RunTracing TracerProvider"]


# ---------------------------------------------------------------------------- approvals


def test_a_wait_for_approval_is_one_span_in_the_runs_trace(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flink_agents.api import ToolApproval
    from flink_agents.runtime import approvals
    from flink_agents.runtime.local_runner import LocalRunner
    from tests.runtime.test_approvals import Refunds, call, refund_model

    now = [1_000_000]
    monkeypatch.setattr(approvals, "clock_ms", lambda: now[-1])
    model = refund_model(call("c1", "refund", order="o", amount=5.0))
    runner = LocalRunner(chat_agent(model, tools=Refunds().tools()), {"tracing.enabled": True})
    try:
        asyncio.run(runner.run([{"key": "k", "value": "go"}]))
        assert named(finished(spans), "await_approval") == []  # still waiting
        now.append(now[-1] + 5_000)  # decided five seconds later
        decision = ToolApproval(call_id="c1", approved=True)
        asyncio.run(runner.run([{"key": "k", "value": decision}]))
    finally:
        runner.close()
    found = finished(spans)
    [wait] = named(found, "await_approval")
    roots = named(found, "invoke_agent")
    assert {trace_id(r) for r in roots} == {trace_id(wait)}
    assert wait.end_time is not None and wait.start_time is not None
    assert wait.end_time - wait.start_time == 5_000 * 1_000_000
    assert attrs(wait)["flink_agents.approval.calls"] == 1
    assert attrs(wait)["flink_agents.approval.approved"] == 1
    assert attrs(wait)["flink_agents.approval.timed_out"] == 0
