"""Agents written against upstream's API on the mini-cluster: ReActAgent with a
RowTypeInfo output schema gives PyFlink Rows, and its tool gets the parameter the
runtime injects from the agent configuration (not the model's value); a pydantic output
reaches downstream as upstream's JSON crossing leaves it, so upstream's e2e jobs'
`json.dumps` map works."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.flink


def test_react_agent_rows_and_injected_tool_parameters(stream_env: Callable[..., Any]) -> None:
    from pyflink.common import Row

    from e2e_tests.upstream_api_agents import order_model, order_react_agent, query_order
    from flink_agents.api.chat_models.function_model import FunctionChatModelConnection
    from flink_agents.api.resource import ResourceDescriptor, ResourceType
    from flink_agents.api.tools.tool import Tool
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=2)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    agents_env.get_config().set_str("e2e.tenant_id", "tenant-a")
    agents_env.add_resource(
        "orders_model",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(clazz=FunctionChatModelConnection, function=order_model),
    )
    agents_env.add_resource("query_order", ResourceType.TOOL, Tool.from_callable(query_order))
    source = env.from_collection([{"order_id": f"o{i}"} for i in range(8)])
    orders = agents_env.from_datastream(source, key_selector=lambda r: r["order_id"])
    orders.apply(order_react_agent(), name="orders")
    stream: Any = orders.to_datastream()
    with stream.execute_and_collect("e2e-upstream-api") as results:
        outputs: list[Any] = list(results)
    assert all(isinstance(row, Row) for row in outputs), outputs
    assert sorted(outputs, key=lambda row: row.id) == [
        Row(id=f"o{i}", status="tenant-a: shipped") for i in range(8)
    ]


def test_a_model_output_is_json_downstream_as_upstreams_e2e_jobs_use_it(
    stream_env: Callable[..., Any],
) -> None:
    from pyflink.common import Types

    from e2e_tests.upstream_api_agents import ExecuteAgent, ExecuteData
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    env = stream_env(parallelism=1)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env=env)
    source = env.from_collection(
        ['{"id":1,"value":5}', '{"id":2,"value":15}', '{"id":3,"value":10}']
    ).map(lambda x: ExecuteData.model_validate_json(x))
    outputs: Any = (
        agents_env.from_datastream(input=source, key_selector=lambda x: x.id)
        .apply(ExecuteAgent())
        .to_datastream()
    )
    texts = outputs.map(lambda x: json.dumps(x), Types.STRING())  # as upstream's e2e jobs
    with texts.execute_and_collect("e2e-model-output-json") as results:
        lines = sorted(results)
    assert lines == [  # upstream's ground truth test_execute_basic.txt, in json.dumps' spacing
        '{"id": 1, "result": 15}',
        '{"id": 2, "result": 25}',
        '{"id": 3, "result": 20}',
    ]
