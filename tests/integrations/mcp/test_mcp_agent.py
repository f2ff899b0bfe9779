"""An agent whose tools and prompt come from an MCP server, on the local runner: the
server's tools are listed in the setup's ``tools`` by name, its prompt is the setup's
prompt, results reach the model as typed blocks (an image as an image), calls go through
durable execution; an unreachable server fails the run naming it, a server gone in the
middle gives the model an error result."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api import (
    Agent,
    AgentsExecutionEnvironment,
    BaseChatModelSetup,
    ChatMessage,
    ChatRequestEvent,
    ChatResponseEvent,
    Event,
    FunctionChatModelConnection,
    InputEvent,
    MessageRole,
    OutputEvent,
    ResourceDescriptor,
    ResourceType,
    RunnerContext,
    ToolCallBlock,
    ToolMetadata,
    action,
    chat_model_connection,
    chat_model_setup,
    mcp_server,
)
from flink_agents.api.content_blocks import TextBlock
from flink_agents.integrations.mcp import MCPServer, MCPTool
from tests.integrations.mcp.agents import (
    WarehouseAgent,
    describe_results,
    expected_output,
    http_descriptor,
    stdio_descriptor,
)
from tests.integrations.mcp.conftest import free_port
from tests.integrations.mcp.servers import PNG, HttpServer, start_http_server, stdio_command

QUICK: dict[str, Any] = {"max_retries": 1, "initial_backoff_s": 0.0, "timeout": 10}


def run(agent: Agent, inputs: list[Any], config: dict[str, Any] | None = None) -> list[Any]:
    env = AgentsExecutionEnvironment.get_execution_environment(config=config or {})
    records = [{"key": f"k{i}", "value": value} for i, value in enumerate(inputs)]
    output = env.from_list(records).apply(agent).to_list()
    env.execute()
    return [
        value for record in sorted(output, key=lambda r: sorted(r)) for value in record.values()
    ]


@pytest.fixture
def stdio_agent() -> WarehouseAgent:
    command, args = stdio_command()
    return WarehouseAgent(stdio_descriptor(command, args, timeout=20))


def test_tools_and_prompt_of_a_stdio_server(stdio_agent: WarehouseAgent) -> None:
    assert run(stdio_agent, [[1, 2], [5, 8]]) == [
        expected_output(1, 2, PNG),
        expected_output(5, 8, PNG),
    ]


def test_tools_and_prompt_of_an_http_server() -> None:
    with start_http_server() as process:
        agent = WarehouseAgent(http_descriptor(process.endpoint, timeout=20))
        assert run(agent, [[3, 4]]) == [expected_output(3, 4, PNG)]


class DecoratedAgent(Agent):
    """Declared with the decorators; the setup lists an MCP tool and a local one."""

    @mcp_server
    @staticmethod
    def warehouse() -> ResourceDescriptor:
        command, args = stdio_command()
        return ResourceDescriptor(clazz=MCPServer, command=command, args=args, timeout=20)

    @chat_model_connection
    @staticmethod
    def scripted() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=FunctionChatModelConnection, function=_mixed_model)

    @chat_model_setup
    @staticmethod
    def assistant() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=BaseChatModelSetup, connection="scripted", tools=["add", "double"]
        )

    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ChatRequestEvent(model="assistant", messages=[ChatMessage.user("go")]))

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ChatResponseEvent) and event.response is not None
        ctx.send_event(OutputEvent(output=json.loads(event.response.text)))


def double(x: int) -> int:
    """Double a number."""
    return 2 * x


DecoratedAgent.double = staticmethod(double)  # type: ignore[attr-defined]


def _mixed_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    if messages[-1].role is MessageRole.USER:
        return ChatMessage.assistant(
            tool_calls=[
                ToolCallBlock(id="m", name="add", input={"a": 20, "b": 1}),
                ToolCallBlock(id="l", name="double", input={"x": 21}),
            ]
        )
    return json.dumps({"tools": [t.name for t in tools], "results": describe_results(messages)})


def test_decorated_mcp_server_beside_a_local_tool() -> None:
    agent = DecoratedAgent()
    agent.add_resource("double", ResourceType.TOOL, double)
    [output] = run(agent, ["go"])
    assert output == {
        "tools": ["add", "double"],
        "results": {
            "m": {"is_error": False, "text": "21", "images": []},
            "l": {"is_error": False, "text": "42", "images": []},
        },
    }


def test_the_engine_gives_the_servers_tools_and_prompts_by_name(
    stdio_agent: WarehouseAgent,
) -> None:
    from flink_agents.runtime.agent_engine import AgentEngine

    engine = AgentEngine(stdio_agent)
    tool = engine.get_resource("chart", ResourceType.TOOL)
    assert isinstance(tool, MCPTool) and tool.get_resource is not None
    assert engine.get_resource("chart", ResourceType.TOOL) is tool
    assert engine.get_resource("ask_sum", ResourceType.PROMPT).name == "ask_sum"  # type: ignore[attr-defined]
    with pytest.raises(KeyError, match=r"and no MCP server \(\['warehouse'\]\) offers it"):
        engine.get_resource("nothing", ResourceType.TOOL)
    engine.close()


def test_a_name_two_servers_offer_is_refused(stdio_agent: WarehouseAgent) -> None:
    from flink_agents.runtime.agent_engine import AgentEngine

    command, args = stdio_command()
    stdio_agent.add_resource(
        "second", ResourceType.MCP_SERVER, stdio_descriptor(command, args, timeout=19)
    )
    engine = AgentEngine(stdio_agent)
    with pytest.raises(ValueError, match=r"'add' is offered by more than one MCP server"):
        engine.get_resource("add", ResourceType.TOOL)
    engine.close()
    MCPServer(command=command, args=args, timeout=19).close()


def test_an_unreachable_server_fails_the_run_naming_its_endpoint() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}/mcp"
    agent = WarehouseAgent(http_descriptor(endpoint.replace("//", "//me:pw-9d2c@"), **QUICK))
    with pytest.raises(Exception, match=rf"MCP server {endpoint} is unreachable") as caught:
        run(agent, [[1, 2]])
    assert "pw-9d2c" not in str(caught.value)


# ---------------------------------------------------------------------- gone mid-run

GONE: dict[str, HttpServer] = {}


def _gone_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    turn = sum(1 for m in messages if m.role is MessageRole.ASSISTANT)
    if turn == 0:
        return ChatMessage.assistant(
            tool_calls=[ToolCallBlock(id="t0", name="add", input={"a": 1, "b": 1})]
        )
    if turn == 1:
        GONE["server"].stop()  # the server goes away between two calls
        return ChatMessage.assistant(
            tool_calls=[ToolCallBlock(id="t1", name="add", input={"a": 2, "b": 2})]
        )
    return json.dumps(describe_results(messages))


def test_a_server_gone_mid_run_gives_the_model_an_error_result() -> None:
    with start_http_server() as process:
        GONE["server"] = process
        [output] = run(_gone_agent(process.endpoint), [None])
    assert output["t0"] == {"is_error": False, "text": "2", "images": []}
    assert output["t1"]["is_error"] is True
    assert output["t1"]["text"].startswith(
        f"tool 'add' failed: MCPConnectionError: MCP server {process.endpoint} is unreachable: "
    )
    assert output["t1"]["text"].endswith("(2 attempts)")


def _gone_agent(endpoint: str) -> Agent:
    async def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ChatRequestEvent(model="gone_model", messages=[ChatMessage.user("go")]))

    async def answer(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ChatResponseEvent) and event.response is not None
        ctx.send_event(OutputEvent(output=json.loads(event.response.text)))

    agent = Agent()
    agent.add_resource("http", ResourceType.MCP_SERVER, http_descriptor(endpoint, **QUICK))
    agent.add_resource(
        "gone",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(clazz=FunctionChatModelConnection, function=_gone_model),
    )
    agent.add_resource(
        "gone_model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=BaseChatModelSetup, connection="gone", tools=["add"]),
    )
    agent.add_action("ask", [InputEvent], ask)
    agent.add_action("answer", [ChatResponseEvent], answer)
    return agent


# ---------------------------------------------------------------------- durable execution


def _count_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    if messages[-1].role is MessageRole.USER:
        return ChatMessage.assistant(tool_calls=[ToolCallBlock(id="n", name="count")])
    return describe_results(messages)["n"]["text"]


def _count_agent() -> Agent:
    async def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ChatRequestEvent(model="counting", messages=[ChatMessage.user("go")]))

    async def answer(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, ChatResponseEvent) and event.response is not None
        ctx.send_event(OutputEvent(output=event.response.text))

    command, args = stdio_command()
    agent = Agent()
    agent.add_resource(
        "counter", ResourceType.MCP_SERVER, stdio_descriptor(command, args, timeout=18)
    )
    agent.add_resource(
        "model_fn",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(clazz=FunctionChatModelConnection, function=_count_model),
    )
    agent.add_resource(
        "counting",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=BaseChatModelSetup, connection="model_fn", tools=["count"]),
    )
    agent.add_action("ask", [InputEvent], ask)
    agent.add_action("answer", [ChatResponseEvent], answer)
    return agent


def test_mcp_tool_calls_are_durable_calls(tmp_path: Path) -> None:
    """Run again with the same store, the batch's tool call is replayed, not made: the
    server's counter does not move (it is one server process: one session per process)."""
    command, args = stdio_command()
    counter = MCPServer(command=command, args=args, timeout=18)
    # Held here, the session outlives each run's engine (which closes when its run ends):
    # the counter counts across the runs.
    counter.open()
    try:
        config = {"durable-execution.store": f"sqlite:///{tmp_path}/calls.db"}
        assert run(_count_agent(), ["a"], config) == ["1"]
        assert run(_count_agent(), ["a"], config) == ["1"]
        assert counter.call_tool("count")[0].text == "2"  # type: ignore[union-attr]
        assert run(_count_agent(), ["a"]) == ["3"]  # no store: the call is made
    finally:
        counter.close()


# ---------------------------------------------------------------------- engines closing


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _pid(server: MCPServer) -> int:
    [block] = server.call_tool("pid")
    assert isinstance(block, TextBlock)
    return int(block.text)


def test_the_last_engine_to_close_ends_the_session_it_shares() -> None:
    """Engines of one process (the subtasks of a Python worker) share a server's session;
    closing one keeps it for the others, closing the last stops the stdio server."""
    from flink_agents.runtime.agent_engine import AgentEngine

    command, args = stdio_command()
    agent = WarehouseAgent(stdio_descriptor(command, args, timeout=17))  # a session of its own
    first, second = AgentEngine(agent), AgentEngine(agent)
    server_1 = first.get_resource("warehouse", ResourceType.MCP_SERVER)
    server_2 = second.get_resource("warehouse", ResourceType.MCP_SERVER)
    assert isinstance(server_1, MCPServer) and isinstance(server_2, MCPServer)
    assert server_1 is not server_2  # each engine built its own from the descriptor
    pid = _pid(server_1)
    assert _pid(server_2) == pid  # one process: the session is shared

    first.close()
    assert _alive(pid)
    assert _pid(server_2) == pid  # the session the second engine holds went on

    second.close()
    assert not _alive(pid)  # the last engine closed the session: the server stopped


def test_an_engine_opens_and_closes_the_resources_it_built(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from flink_agents.runtime.agent_engine import AgentEngine

    log: list[str] = []

    class Recording(MCPServer):
        def open(self) -> None:
            log.append("open")
            super().open()

        def close(self) -> None:
            log.append("close")
            super().close()
            raise RuntimeError("closing failed")  # logged; the engine closes the rest

    command, args = stdio_command()
    server = ResourceDescriptor(clazz=Recording, command=command, args=args, timeout=16)
    engine = AgentEngine(WarehouseAgent(server))
    engine.get_resource("warehouse", ResourceType.MCP_SERVER)
    engine.get_resource("warehouse", ResourceType.MCP_SERVER)  # built and opened once
    engine.get_resource("ask_sum", ResourceType.PROMPT)  # offered by the server
    assert log == ["open"]
    engine.close()
    assert log == ["open", "close"]
    assert "closing mcp_server 'warehouse' failed: closing failed" in caplog.text
