"""Tool parameter injection (upstream's `InjectedArg`): parameters the runtime fills in from
the configuration or memory, hidden from the model and not settable by it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from flink_agents.api import (
    Agent,
    BaseChatModelSetup,
    ChatMessage,
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    InputEvent,
    OutputEvent,
    ResourceDescriptor,
    ResourceType,
    RunnerContext,
    ScriptedChatModelConnection,
    ToolCallBlock,
)
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.decorators import action, tool
from flink_agents.api.tools import InjectedArg, ToolParameterSource
from flink_agents.api.tools.tool import Tool
from flink_agents.api.tools.tool_parameter_injection import (
    injected_arguments,
    merge_injected_args,
    normalize_injected_args,
)
from flink_agents.runtime.local_runner import LocalExecutionEnvironment


def query_order(order_id: str, tenant_id: str) -> str:
    """Query an order.

    Args:
        order_id: The order id to query.
        tenant_id: Whose order.
    """
    return f"{order_id}@{tenant_id}"


def test_injected_arg_forms() -> None:
    assert InjectedArg.from_config("t") == InjectedArg(source=ToolParameterSource.CONFIG, key="t")
    assert InjectedArg().source is ToolParameterSource.SENSORY_MEMORY  # the default source
    assert ToolParameterSource("SHORT_TERM_MEMORY") is ToolParameterSource.SHORT_TERM_MEMORY
    normalized = normalize_injected_args(
        {"tenant_id": {"source": "config"}, "trace": InjectedArg.from_sensory_memory("req.trace")}
    )
    assert normalized == {
        "tenant_id": InjectedArg.from_config("tenant_id"),  # the key defaults to the name
        "trace": InjectedArg.from_sensory_memory("req.trace"),
    }
    with pytest.raises(TypeError, match="InjectedArg or a dict"):
        normalize_injected_args({"x": "config"})  # type: ignore[dict-item]


def test_injected_parameters_are_hidden_from_the_model() -> None:
    tool = Tool.from_callable(
        query_order, injected_args={"tenant_id": InjectedArg.from_config("tenant_id")}
    )
    schema = tool.metadata.args_schema
    assert list(schema["properties"]) == ["order_id"]
    assert schema["required"] == ["order_id"]
    assert tool.injected_args == {"tenant_id": InjectedArg.from_config("tenant_id")}


def test_decorator_and_descriptor_declarations_merge_or_conflict() -> None:
    @tool(injected_args={"tenant_id": InjectedArg.from_config("tenant_id")})
    def decorated(order_id: str, tenant_id: str) -> str:
        return order_id

    same = Tool.from_callable(decorated, injected_args={"tenant_id": {"source": "config"}})
    assert same.injected_args == {"tenant_id": InjectedArg.from_config("tenant_id")}
    with pytest.raises(ValueError, match="declare it once"):
        Tool.from_callable(
            decorated, injected_args={"tenant_id": InjectedArg.from_sensory_memory("t")}
        )
    with pytest.raises(ValueError, match="declare it once"):
        merge_injected_args(
            {"a": InjectedArg.from_config("a")}, {"a": InjectedArg.from_config("b")}, tool_name="t"
        )


def test_an_injected_name_must_be_a_parameter() -> None:
    with pytest.raises(ValueError, match="tenant are not parameters of query_order"):
        Tool.from_callable(query_order, injected_args={"tenant": InjectedArg.from_config("t")})
    with pytest.raises(ValueError, match="not parameters"):

        @tool(injected_args={"nope": InjectedArg()})
        def f(x: int) -> int:
            return x

    def anything(**kwargs: Any) -> Any:
        return kwargs

    assert Tool.from_callable(anything, injected_args={"nope": InjectedArg()}).injected_args


def test_a_config_value_is_read_by_key_and_a_missing_one_named() -> None:
    ctx = SimpleNamespace(config=AgentConfiguration({"tenant_id": "tenant-a"}))
    arg = {"tenant_id": InjectedArg.from_config("tenant_id")}
    assert injected_arguments(arg, ctx) == {"tenant_id": "tenant-a"}  # type: ignore[arg-type]
    empty = SimpleNamespace(config=AgentConfiguration())
    with pytest.raises(LookupError, match="agent configuration has no 'tenant_id'"):
        injected_arguments(arg, empty)  # type: ignore[arg-type]


# ------------------------------------------------------------------ in an agent


class OrderAgent(Agent):
    @tool(
        injected_args={
            "tenant_id": InjectedArg.from_config("tenant_id"),
            "trace_id": InjectedArg.from_sensory_memory("request.trace_id"),
            "user": InjectedArg.from_short_term_memory("user.name"),
        }
    )
    @staticmethod
    def query_order(order_id: str, tenant_id: str, trace_id: str, user: str) -> str:
        """Query an order.

        Args:
            order_id: The order id to query.
        """
        return f"{order_id}/{tenant_id}/{trace_id}/{user}"

    @action(InputEvent)
    @staticmethod
    def start(event: Event, ctx: RunnerContext) -> None:
        ctx.sensory_memory.set("request.trace_id", "trace-1")
        ctx.short_term_memory.set("user.name", "ann")
        text = str(event.input)  # type: ignore[attr-defined]
        ctx.send_event(ChatRequestEvent(model="orders", messages=[ChatMessage.user(text)]))

    @action(ChatResponseEvent)
    @staticmethod
    def finish(event: Event, ctx: RunnerContext) -> None:
        response = event.response  # type: ignore[attr-defined]
        ctx.send_event(OutputEvent(output=response.text if response is not None else ""))


class NoTraceAgent(OrderAgent):
    @action(InputEvent)
    @staticmethod
    def start(event: Event, ctx: RunnerContext) -> None:
        ctx.sensory_memory.set("request.other", 1)
        ctx.short_term_memory.set("user.name", "ann")
        ctx.send_event(ChatRequestEvent(model="orders", messages=[ChatMessage.user("o-7?")]))


class TraceObjectAgent(OrderAgent):
    @action(InputEvent)
    @staticmethod
    def start(event: Event, ctx: RunnerContext) -> None:
        ctx.sensory_memory.set("request.trace_id.part", 1)  # an object, not a value
        ctx.short_term_memory.set("user.name", "ann")
        ctx.send_event(ChatRequestEvent(model="orders", messages=[ChatMessage.user("o-7?")]))


def _run(
    config: dict[str, Any], agent: Agent | None = None
) -> tuple[list[Any], ScriptedChatModelConnection]:
    model = ScriptedChatModelConnection(
        replies=[
            ChatMessage.assistant(
                tool_calls=[
                    ToolCallBlock(
                        id="c1",
                        name="query_order",
                        input={"order_id": "o-7", "tenant_id": "spoofed"},
                    )
                ]
            ),
            "done",
        ]
    )
    env = LocalExecutionEnvironment(config)
    env.add_resource("local", ResourceType.CHAT_MODEL_CONNECTION, model)
    env.add_resource(
        "orders",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=BaseChatModelSetup, connection="local", tools=["query_order"]),
    )
    records = [{"key": "k", "value": "where is o-7?"}]
    out = env.from_list(records).apply(agent or OrderAgent()).to_list()
    env.execute()
    return out, model


def test_the_runtime_fills_injected_parameters_and_the_model_cannot_spoof_them() -> None:
    out, model = _run({"tenant_id": "tenant-a"})
    assert out == [{"k": "done"}]
    (offered,) = model.calls[0].tools
    assert list(offered.args_schema["properties"]) == ["order_id"]  # the model sees only this
    result = model.calls[1].messages[-1].tool_result_block
    assert result is not None
    assert not result.is_error
    assert result.text == "o-7/tenant-a/trace-1/ann"


def test_a_missing_injected_value_is_a_tool_error_the_model_reads() -> None:
    out, model = _run({})
    assert out == [{"k": "done"}]
    result = model.calls[1].messages[-1].tool_result_block
    assert result is not None
    assert result.is_error
    assert "the agent configuration has no 'tenant_id'" in result.text


@pytest.mark.parametrize(
    ("agent", "says"),
    [
        (NoTraceAgent(), "sensory memory has no 'request.trace_id'"),
        (TraceObjectAgent(), "'request.trace_id' in sensory memory is an object, not a value"),
    ],
)
def test_a_memory_path_must_lead_to_a_value(agent: Agent, says: str) -> None:
    out, model = _run({"tenant_id": "tenant-a"}, agent)
    assert out == [{"k": "done"}]
    result = model.calls[1].messages[-1].tool_result_block
    assert result is not None
    assert result.is_error
    assert says in result.text


def test_upstreams_words_for_injected_args_it_refuses() -> None:
    # Upstream's messages (code matching them keeps working), then ours.
    with pytest.raises(
        ValueError, match=r"Injected tool parameter\(s\) tenant do not match function query_order"
    ):
        Tool.from_callable(query_order, injected_args={"tenant": InjectedArg.from_config("t")})
    with pytest.raises(TypeError, match=r"'injected_args' must be a dict.*got list"):
        tool(injected_args=["tenant_id"])  # type: ignore[arg-type]


def test_a_tool_function_is_marked_as_upstreams_are() -> None:
    @tool
    def lookup(order_id: str) -> str:
        return order_id

    assert getattr(lookup, "_is_tool") is True  # noqa: B009
