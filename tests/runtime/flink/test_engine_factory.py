"""The agent runner behind the keyed operator's logic (fake keyed state, no PyFlink)."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api import StoredClassRefusedError
from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.chat_models.function_model import FunctionChatModelConnection
from flink_agents.api.content_blocks import ImageBlock, ToolCallBlock
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.redaction import clear_registered_secrets, redact
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.flink.engine_factory import AgentEngineFactory
from flink_agents.runtime.flink.operator import SubtaskContext
from flink_agents.runtime.metrics import InMemoryMetricGroup
from tests.fakes.planted_module import PlantedModule
from tests.runtime.flink.fake_flink import FakeSubtask

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(64))).decode()
_tool_gate = threading.Event()


def chart_model(messages: list[ChatMessage], tools: Any) -> ChatMessage | str:
    last = messages[-1]
    if last.role is MessageRole.USER:
        call = ToolCallBlock(id="c1", name="render_chart", input={"title": last.text})
        return ChatMessage.assistant("", tool_calls=[call])
    block = last.tool_result_block
    assert block is not None
    images = [b for b in block.content if isinstance(b, ImageBlock)]
    return f"saw {len(images)} {images[0].mime_type} image(s), {len(images[0].data or '')} b64"


async def render_chart(title: str) -> ImageBlock:
    """Render a chart.

    Args:
        title: The chart title.
    """
    return ImageBlock(mime_type="image/png", data=PNG, name=f"{title}.png")


async def ask(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(ChatRequestEvent(model="chart_model", messages=[ChatMessage.user(event.input)]))  # type: ignore[attr-defined]


async def answer(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ChatResponseEvent)
    response = event.response
    ctx.send_event(
        OutputEvent(output={"key": ctx.key, "text": response.text if response else None})
    )


def chart_agent() -> Agent:
    agent = Agent()
    agent.add_action("ask", [InputEvent], ask)
    agent.add_action("answer", [ChatResponseEvent], answer)
    agent.add_resource(
        "conn",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(clazz=FunctionChatModelConnection, function=chart_model),
    )
    agent.add_resource(
        "chart_model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=BaseChatModelSetup, connection="conn", tools=["render_chart"]),
    )
    agent.add_resource("render_chart", ResourceType.TOOL, render_chart)
    return agent


def _context(metrics: InMemoryMetricGroup | None = None) -> SubtaskContext:
    return SubtaskContext(
        task_name="t",
        subtask_index=0,
        parallelism=1,
        attempt=0,
        metrics=metrics or InMemoryMetricGroup(),
    )


def test_tool_round_trip_with_media_through_keyed_runs() -> None:
    metrics = InMemoryMetricGroup()
    engine = AgentEngineFactory(chart_agent())(_context(metrics))
    sub = FakeSubtask(engine)
    try:
        for k in range(3):
            sub.input(f"k{k}", f"chart {k}")
        sub.end_of_input()
    finally:
        sub.close()
    assert sorted(sub.emitted, key=lambda o: o["key"]) == [
        {"key": f"k{k}", "text": f"saw 1 image/png image(s), {len(PNG)} b64"} for k in range(3)
    ]
    snapshot = metrics.snapshot()
    assert snapshot["action"]["ask"]["executions"] == 3
    assert snapshot["tool"]["render_chart"]["calls"] == 3


def test_a_subtask_engine_runs_its_sync_calls_under_batch_scheduling() -> None:
    engine = AgentEngineFactory(chart_agent())(_context())
    try:
        assert engine.batch_scheduling
        assert engine.tool_threads.batch_scheduling
        assert engine.action_threads.batch_scheduling
    finally:
        engine.close()
    local = AgentEngine(chart_agent())  # the local runner's: threads preempt as usual
    try:
        assert not local.tool_threads.batch_scheduling
    finally:
        local.close()


def test_runs_see_the_typed_key_behind_the_flink_key() -> None:
    engine = AgentEngineFactory(chart_agent())(_context())
    sub = FakeSubtask(engine)
    try:
        for key in (1, "1", ("a", 2)):
            sub.input(key, "chart")
        sub.end_of_input()
    finally:
        sub.close()
    keys = [output["key"] for output in sub.emitted]
    assert sorted(keys, key=repr) == sorted([1, "1", ("a", 2)], key=repr)
    assert sorted(type(k).__name__ for k in keys) == ["int", "str", "tuple"]


def test_run_state_round_trips_between_steps() -> None:
    engine = AgentEngineFactory(chart_agent())(_context())
    assert isinstance(engine, AgentEngine)
    key_state = engine.new_key_state()
    run = engine.start_run("k", engine.decode_input(engine.encode_input("chart")), key_state)
    import asyncio

    async def two_steps() -> None:
        await engine.step(run, key_state)
        await engine.step(run, key_state)

    asyncio.run(two_steps())
    assert not engine.is_done(run)
    restored = engine.load_run(engine.dump_run(run))
    restored_key_state = engine.load_key_state(engine.dump_key_state(key_state))

    async def finish() -> None:
        while not engine.is_done(restored):
            await engine.step(restored, restored_key_state)

    asyncio.run(finish())
    assert engine.outputs(restored) == [
        {"key": "k", "text": f"saw 1 image/png image(s), {len(PNG)} b64"}
    ]
    assert restored_key_state.next_seq == 1
    engine.close()


def test_inputs_keep_pydantic_types_through_state() -> None:
    engine = AgentEngineFactory(chart_agent())(_context())
    value = ImageBlock(mime_type="image/png", data=PNG)
    assert engine.decode_input(engine.encode_input(value)) == value
    assert engine.decode_input(engine.encode_input({"a": [1, 2]})) == {"a": [1, 2]}
    with pytest.raises(TypeError, match="object"):
        engine.encode_input(object())
    engine.close()


def test_the_default_pipeline_id_names_the_agent_and_its_operator(tmp_path: Path) -> None:
    agent = chart_agent()
    config = {"durable-execution.store": str(tmp_path / "calls.db")}
    engine = AgentEngineFactory(agent, config, operator_name="triage")(_context())
    try:
        assert engine.acknowledgments is not None
        store = engine.acknowledgments.call_log.store
        kind = type(agent)
        assert store.pipeline == f"{kind.__module__}:{kind.__qualname__}/triage"  # type: ignore[attr-defined]
    finally:
        engine.close()


def _upgrade_agent(with_answer: bool) -> Agent:
    """`ask` sends an `answer_me` event; `answer` (when kept) waits for good."""

    async def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.short_term_memory["asked"] = ctx.short_term_memory.get("asked", 0) + 1
        ctx.send_event(Event("answer_me", {"q": event.attributes["input"]}))

    async def answer(event: Event, ctx: RunnerContext) -> None:
        await asyncio.Event().wait()  # never answered: the checkpoint is taken meanwhile
        ctx.send_event(OutputEvent(output=event.attributes["q"]))

    agent = Agent().add_action("ask", InputEvent, ask)
    if with_answer:
        agent.add_action("answer", ["answer_me"], answer)
    return agent


def _snapshot_after_ask(config: dict[str, Any]) -> Any:
    """A checkpoint of a subtask whose run has sent `answer_me` and waits in keyed state."""
    engine = AgentEngineFactory(_upgrade_agent(with_answer=True), config)(_context())
    sub = FakeSubtask(engine)
    try:
        sub.input("k", "q1")
        sub.fire_polls_while(lambda: "answer_me" not in (sub.backend.slices["k"].run or ""))
        return sub.backend.checkpoint()
    finally:
        sub.close()


@pytest.mark.parametrize("policy", ["fail", "skip"])
def test_a_restore_without_the_action_a_pending_event_needs_is_never_silent(
    policy: str,
) -> None:
    config = {"input-failure.policy": policy}
    snapshot = _snapshot_after_ask(config)
    run_json = snapshot.slices["k"].run
    assert run_json is not None and "answer_me" in run_json
    engine = AgentEngineFactory(_upgrade_agent(with_answer=False), config)(_context())
    restored = FakeSubtask(engine, snapshot)
    try:
        if policy == "fail":
            with pytest.raises(RuntimeError, match="pending 'answer_me' event that no action"):
                restored.end_of_input()
            return
        restored.end_of_input()
    finally:
        restored.close()
    [failure] = restored.emitted
    record = failure.record
    assert (record["key"], record["input"], record["event_type"]) == ("k", "q1", "answer_me")
    assert record["error_type"] == "UnhandledEventError"


@pytest.mark.parametrize(
    ("part", "plain"),
    [
        ("input", '"q1"'),
        ("run", '"attributes":{"q":"q1"}'),
        ("key-state", '"short_term_memory":{"asked":1}'),
    ],
)
def test_a_tampered_savepoint_naming_a_module_not_imported_never_imports_it(
    planted_module: PlantedModule, part: str, plain: str
) -> None:
    snapshot = _snapshot_after_ask({})
    key_slice = snapshot.slices["k"]
    planted = json.dumps({"$model": planted_module.path("Payload"), "$data": {}})
    if part == "input":
        key_slice.inputs[0] = planted
    elif part == "run":
        assert key_slice.run is not None and plain in key_slice.run
        key_slice.run = key_slice.run.replace(plain, f'"attributes":{{"q":{planted}}}')
    else:
        assert key_slice.record is not None and plain in key_slice.record
        key_slice.record = key_slice.record.replace(
            plain, f'"short_term_memory":{{"asked":{planted}}}'
        )
    engine = AgentEngineFactory(_upgrade_agent(with_answer=True))(_context())
    restored = FakeSubtask(engine, snapshot)
    try:
        with pytest.raises(StoredClassRefusedError, match=planted_module.name):
            restored.end_of_input()
    finally:
        restored.close()
    assert not planted_module.imported


def test_a_module_the_job_allows_is_imported_when_its_state_names_it(
    planted_module: PlantedModule,
) -> None:
    config = {"stored-classes.allowed-modules": f"other, {planted_module.name}"}
    engine = AgentEngineFactory(chart_agent(), config)(_context())
    try:
        tagged = json.dumps({"$model": planted_module.path("Payload"), "$data": {"text": "t"}})
        value = engine.decode_input(tagged)
    finally:
        engine.close()
    assert type(value).__name__ == "Payload" and planted_module.imported


def test_opening_a_subtask_registers_the_provider_keys_of_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "anthropic-env-key-0123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    clear_registered_secrets()
    try:
        assert secret in redact(f"boom {secret}")
        engine = AgentEngineFactory(chart_agent())(_context())  # the operator's open
        engine.close()
        assert secret not in redact(f"boom {secret}")
    finally:
        clear_registered_secrets()


class _JavaJobInfo:
    """Stands in for the Java RuntimeContext of PyFlink's thread mode: its job id."""

    def getJobInfo(self) -> Any:
        return self

    def getJobId(self) -> Any:
        return self

    def toHexString(self) -> str:
        return "0123456789abcdef0123456789abcdef"


class _ThreadModeContext:
    _runtime_context = _JavaJobInfo()


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"eventLoggerType": "jsonl"}, "events-2.jsonl"),
        ({}, "events-0123456789abcdef0123456789abcdef-agent -_ Map-2.log"),
        (
            {"eventLoggerType": "file"},
            "events-0123456789abcdef0123456789abcdef-agent -_ Map-2.log",
        ),
    ],
)
def test_a_subtask_logs_events_to_its_own_file(
    tmp_path: Path, options: dict[str, Any], name: str
) -> None:
    context = SubtaskContext(
        task_name="agent -> Map",
        subtask_index=2,
        parallelism=3,
        attempt=0,
        metrics=InMemoryMetricGroup(),
        runtime_context=_ThreadModeContext(),
    )
    engine = AgentEngineFactory(Agent(), {"baseLogDir": str(tmp_path), **options})(context)
    assert engine.event_log is not None
    engine.event_log.log_event("k", 0, InputEvent(input="hi"))
    engine.event_log.close()
    assert [p.name for p in tmp_path.iterdir()] == [name]
