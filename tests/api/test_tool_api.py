"""Upstream's tool API: `Tool.from_callable`, `ToolType`, `ToolMetadata` with a model class
as schema, a `Tool` subclass with a sync ``call``; `FunctionTool` keeps working."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Annotated, Any

import cloudpickle
import pytest
from pydantic import Field

from flink_agents.api import (
    BaseChatModelSetup,
    ChatMessage,
    FunctionTool,
    Prompt,
    ReActAgent,
    ResourceDescriptor,
    ResourceType,
    ScriptedChatModelConnection,
    ToolCallBlock,
)
from flink_agents.api.tools.tool import BaseTool, Tool, ToolMetadata, ToolType
from flink_agents.api.tools.utils import create_schema_from_function
from flink_agents.runtime.local_runner import LocalExecutionEnvironment


def foo(bar: int, baz: str) -> str:
    """Function for testing ToolMetadata.

    Parameters
    ----------
    bar : int
        The bar value.
    baz : str
        The baz value.

    Returns:
    -------
    str
        Response string value.
    """
    return f"{bar}-{baz}"


def test_tool_type_members() -> None:
    assert {t.name: t.value for t in ToolType} == {
        "MODEL_BUILT_IN": "model_built_in",
        "FUNCTION": "function",
        "REMOTE_FUNCTION": "remote_function",
        "MCP": "mcp",
    }


def test_from_callable_makes_a_function_tool() -> None:
    tool = Tool.from_callable(foo)
    assert isinstance(tool, FunctionTool)
    assert isinstance(tool, Tool)
    assert tool.tool_type() is ToolType.FUNCTION
    assert tool.name == "foo"
    assert tool.metadata.description == "Function for testing ToolMetadata."
    assert tool.metadata.args_schema["properties"]["bar"] == {
        "type": "integer",
        "description": "The bar value.",
    }
    assert tool.call(1, baz="x") == "1-x"  # upstream's call: the function, as it is
    assert asyncio.run(tool.acall(bar=2, baz="y")) == "2-y"


def test_metadata_takes_a_model_class_and_writes_its_json_schema() -> None:
    metadata = ToolMetadata(
        name="foo",
        description="Function for testing ToolMetadata",
        args_schema=create_schema_from_function(name="foo", func=foo),  # pyright: ignore[reportArgumentType]  (upstream passes the class; it is kept as its schema)
    )
    written = json.loads(metadata.model_dump_json())
    assert written == {
        "name": "foo",
        "description": "Function for testing ToolMetadata",
        "args_schema": {
            "properties": {
                "bar": {"description": "The bar value.", "title": "Bar", "type": "integer"},
                "baz": {"description": "The baz value.", "title": "Baz", "type": "string"},
            },
            "required": ["bar", "baz"],
            "title": "foo",
            "type": "object",
        },
    }
    assert ToolMetadata.model_validate_json(metadata.model_dump_json()) == metadata
    assert metadata.get_parameters_dict() == {
        "type": "object",
        "properties": written["args_schema"]["properties"],
        "required": ["bar", "baz"],
    }


class Weather(Tool):
    """An upstream-style tool: a sync ``call`` and its own metadata."""

    metadata: ToolMetadata = ToolMetadata(
        name="weather",
        description="The weather in a city.",
        args_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    )

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.REMOTE_FUNCTION

    def call(self, *args: Any, **kwargs: Any) -> Any:
        return {"city": kwargs["city"], "thread": threading.current_thread().name}


def test_a_tool_subclass_with_a_sync_call_runs_off_the_loop() -> None:
    async def run() -> Any:
        return await Weather().acall(city="Oslo"), threading.current_thread().name

    result, loop_thread = asyncio.run(run())
    assert result["city"] == "Oslo"
    assert result["thread"] != loop_thread
    assert Weather.tool_type() is ToolType.REMOTE_FUNCTION
    assert isinstance(Weather(), BaseTool)


def test_a_tool_subclass_with_an_async_call_is_awaited() -> None:
    class Echo(Weather):
        async def call(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return kwargs

    assert asyncio.run(Echo().acall(city="Rome")) == {"city": "Rome"}


def test_annotated_descriptions_reach_the_schema() -> None:
    def lookup(
        order_id: Annotated[str, "The order's id."],
        limit: Annotated[int, Field(description="At most this many.")] = 5,
    ) -> str:
        """Look an order up."""
        return order_id

    properties = Tool.from_callable(lookup).metadata.args_schema["properties"]
    assert properties["order_id"] == {"type": "string", "description": "The order's id."}
    assert properties["limit"]["description"] == "At most this many."
    assert properties["limit"]["default"] == 5


def test_function_tool_still_validates_and_pickles() -> None:
    tool = FunctionTool.from_function(foo, name="renamed", description="Foo it.")
    assert tool.metadata.name == "renamed"
    with pytest.raises(Exception, match="bar"):
        tool.bind(baz="x")
    copy = cloudpickle.loads(cloudpickle.dumps(tool))
    assert copy.bind(bar=3, baz="z")() == "3-z"


class Greeting(Tool):
    """Reads a prompt of its agent through upstream's ``resource_context``."""

    metadata: ToolMetadata = ToolMetadata(
        name="greet",
        args_schema={"type": "object", "properties": {"name": {"type": "string"}}},
    )

    def call(self, *args: Any, **kwargs: Any) -> Any:
        assert self.resource_context is not None
        template = self.resource_context.get_resource("greeting", ResourceType.PROMPT)
        return template.format_string(name=kwargs["name"])  # type: ignore[attr-defined]


def test_a_tool_reaches_its_agents_resources_through_resource_context() -> None:
    assert Greeting().resource_context is None  # not built by a runtime yet
    model = ScriptedChatModelConnection(
        replies=[
            ChatMessage.assistant(
                tool_calls=[ToolCallBlock(id="c1", name="greet", input={"name": "Ada"})]
            ),
            "done",
        ]
    )
    env = LocalExecutionEnvironment()
    env.add_resource("local", ResourceType.CHAT_MODEL_CONNECTION, model)
    env.add_resource("greet", ResourceType.TOOL, Greeting())
    env.add_resource("greeting", ResourceType.PROMPT, Prompt.from_text("Hello, {name}!"))
    agent = ReActAgent(
        chat_model=ResourceDescriptor(clazz=BaseChatModelSetup, connection="local", tools=["greet"])
    )
    out = env.from_list([{"key": "k", "value": "greet Ada"}]).apply(agent).to_list()
    env.execute()
    assert out == [{"k": "done"}]
    result = model.calls[1].messages[-1].tool_result_block
    assert result is not None
    assert result.text == "Hello, Ada!"


def test_a_function_tool_of_a_function_descriptor_as_upstream_makes_it() -> None:
    """Upstream's ``FunctionTool(func=PythonFunction(...), injected_args=...)``: the schema
    comes from the function it names; ``func`` stays the descriptor; it runs, also after
    travelling pickled; a JavaFunction is refused (no Java here)."""
    import pickle

    from flink_agents.api.function import JavaFunction, PythonFunction
    from flink_agents.api.tools.tool_parameter_injection import InjectedArg

    descriptor = PythonFunction(module="tests.api.yaml.targets", qualname="query_order")
    tool = FunctionTool(  # pyright: ignore[reportCallIssue]  (metadata: made from func)
        func=descriptor, injected_args={"tenant_id": {"source": "config", "key": "tenant"}}
    )
    assert tool.func == descriptor
    assert tool.metadata.name == "query_order"
    assert tool.metadata.description == "Look an order up."
    assert list(tool.metadata.args_schema["properties"]) == ["order_id"]
    assert tool.injected_args == {"tenant_id": InjectedArg.from_config("tenant")}
    assert tool.bind(order_id="o-1", tenant_id="acme")() == "acme:o-1"
    copy = pickle.loads(pickle.dumps(tool))
    assert asyncio.run(copy.acall(order_id="o-2", tenant_id="acme")) == "acme:o-2"
    assert copy.call("o-3", "t") == "t:o-3"
    with pytest.raises(ValueError, match=r"the Java function com\.example\.Tools\.add"):
        FunctionTool(func=JavaFunction.for_action("com.example.Tools", "add"))  # pyright: ignore[reportCallIssue]
