"""MCP servers on the mini-cluster: one job, an agent whose tools and prompt come from a
stdio server and one whose come from a streamable HTTP server (started by the test), and
an action that calls a server's tool itself. The servers travel to the workers as
settings; each worker process opens one session per server."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from flink_agents.api import (
    Agent,
    Event,
    InputEvent,
    OutputEvent,
    ResourceType,
    RunnerContext,
    TextBlock,
)
from flink_agents.integrations.mcp import MCPServer, MCPTool
from tests.integrations.mcp.agents import (
    WarehouseAgent,
    expected_output,
    http_descriptor,
    stdio_descriptor,
)
from tests.integrations.mcp.servers import PNG, HttpServer, start_http_server, stdio_command

pytestmark = pytest.mark.flink

INPUTS = [(a, a + 1) for a in range(6)]
PID_KEYS = 8


async def ask_pid(event: Event, ctx: RunnerContext) -> None:
    """Calls the server's ``pid`` tool from an action (not through a model)."""
    tool = ctx.get_resource("pid", ResourceType.TOOL)
    assert isinstance(tool, MCPTool)
    [block] = await tool.acall()
    assert isinstance(block, TextBlock)
    key = event.attributes["input"]["key"]
    ctx.send_event(OutputEvent(output={"key": key, "pid": int(block.text)}))


def pid_agent() -> Agent:
    command, args = stdio_command()
    agent = Agent()
    agent.add_resource(
        "local", ResourceType.MCP_SERVER, stdio_descriptor(command, args, timeout=30)
    )
    agent.add_action("ask", [InputEvent], ask_pid)
    return agent


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    with start_http_server() as process:
        yield process


@pytest.fixture(scope="module")
def job(stream_env: Callable[..., Any], http_server: HttpServer) -> dict[str, list[Any]]:
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=2)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    command, args = stdio_command()
    stdio_in = agents_env.from_datastream(
        env.from_collection([{"key": f"s{i}", "a": a, "b": b} for i, (a, b) in enumerate(INPUTS)]),
        key_selector=lambda r: r["key"],
    )
    http_in = agents_env.from_datastream(
        env.from_collection([{"key": f"h{i}", "a": a, "b": b} for i, (a, b) in enumerate(INPUTS)]),
        key_selector=lambda r: r["key"],
    )
    pids_in = agents_env.from_datastream(
        env.from_collection([{"key": f"p{i}"} for i in range(PID_KEYS)]),
        key_selector=lambda r: r["key"],
    )
    stdio_agent = WarehouseAgent(stdio_descriptor(command, args, timeout=30))
    http_agent = WarehouseAgent(http_descriptor(http_server.endpoint, timeout=30))
    stdio_in.apply(stdio_agent, name="mcp-stdio")
    http_in.apply(http_agent, name="mcp-http")
    pids_in.apply(pid_agent(), name="mcp-pid")
    outputs = (
        stdio_in.to_datastream()
        .map(lambda o: json.dumps({"scenario": "stdio", "output": o}))
        .union(
            http_in.to_datastream().map(lambda o: json.dumps({"scenario": "http", "output": o})),
            pids_in.to_datastream().map(lambda o: json.dumps({"scenario": "pid", "output": o})),
        )
    )
    with outputs.execute_and_collect("e2e-mcp") as results:
        collected = [json.loads(item) for item in results]
    by_scenario: dict[str, list[Any]] = defaultdict(list)
    for item in collected:
        by_scenario[item["scenario"]].append(item["output"])
    return by_scenario


def test_tools_and_prompt_of_a_stdio_server_on_the_cluster(job: dict[str, list[Any]]) -> None:
    assert sorted(job["stdio"], key=lambda o: o["prompt"]) == sorted(
        (expected_output(a, b, PNG) for a, b in INPUTS), key=lambda o: o["prompt"]
    )


def test_tools_and_prompt_of_an_http_server_on_the_cluster(job: dict[str, list[Any]]) -> None:
    assert sorted(job["http"], key=lambda o: o["prompt"]) == sorted(
        (expected_output(a, b, PNG) for a, b in INPUTS), key=lambda o: o["prompt"]
    )


def test_a_worker_process_opens_one_session_per_server(job: dict[str, list[Any]]) -> None:
    """Every key's call went to the same stdio server process: the worker's one session
    (not the one this test process would open)."""
    outputs = job["pid"]
    assert sorted(o["key"] for o in outputs) == sorted(f"p{i}" for i in range(PID_KEYS))
    pids = {o["pid"] for o in outputs}
    assert len(pids) == 1
    command, args = stdio_command()
    here = MCPServer(command=command, args=args, timeout=30)
    try:
        [block] = here.call_tool("pid")
        assert isinstance(block, TextBlock) and int(block.text) not in pids
    finally:
        here.close()


def test_an_unreachable_server_fails_the_job_naming_its_endpoint(
    stream_env: Callable[..., Any],
) -> None:
    from flink_agents.runtime.errors import FlinkJobFailedError
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment
    from tests.integrations.mcp.conftest import free_port

    endpoint = f"http://127.0.0.1:{free_port()}/mcp"
    env = stream_env(parallelism=1)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    stream = agents_env.from_datastream(
        env.from_collection([{"key": "u0", "a": 1, "b": 2}]), key_selector=lambda r: r["key"]
    )
    secret_endpoint = endpoint.replace("//", "//ops:pw-41c9e7@")
    agent = WarehouseAgent(http_descriptor(secret_endpoint, max_retries=1, timeout=10))
    stream.apply(agent, name="mcp-unreachable")
    collect = stream.to_datastream().execute_and_collect
    with pytest.raises(FlinkJobFailedError) as caught, collect("e2e-mcp-unreachable") as results:
        list(results)
    first_line = str(caught.value).splitlines()[0]
    assert first_line.startswith(f"MCPConnectionError: MCP server {endpoint} is unreachable: ")
    assert "pw-41c9e7" not in str(caught.value)
