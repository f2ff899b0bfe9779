"""YAML agent files loaded into an environment and run on the local runner, as upstream's
docs describe them: one agent, several agents, several files, shared definitions, tools
and prompts, descriptors and their aliases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.chat_event import ChatResponseEvent
from flink_agents.api.events.event import InputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.function import PythonFunction
from flink_agents.api.prompts.prompt import LocalPrompt
from flink_agents.api.resource import ResourceDescriptor, ResourceName, ResourceType
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.tools.tool_parameter_injection import InjectedArg
from flink_agents.api.yaml.loader import build_agents, load_yaml

T = "tests.api.yaml.targets"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _run(env: AgentsExecutionEnvironment, agent: str, values: list[Any]) -> list[Any]:
    builder = env.from_list([{"key": i, "value": v} for i, v in enumerate(values)])
    builder.apply(agent)
    env.execute()
    by_key = {k: v for out in builder.to_list() for k, v in out.items()}
    return [by_key[i] for i in range(len(values))]


def _env() -> AgentsExecutionEnvironment:
    return AgentsExecutionEnvironment.get_execution_environment()


def test_a_single_agent_runs_by_name(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "one.yaml",
        f"""
agents:
  - name: incrementer
    description: adds one
    actions:
      - name: increment
        function: {T}:increment
        trigger_conditions: [input]
""",
    )
    env = _env()
    env.load_yaml(path)
    assert _run(env, "incrementer", [1, 41]) == [2, 42]


def test_several_agents_in_one_file_each_run_by_name(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "two.yaml",
        f"""
agents:
  - name: up
    actions:
      - {{name: increment, function: "{T}:increment", trigger_conditions: [input]}}
  - name: way_up
    actions:
      - name: bump
        function: {T}:Counter.bump
        trigger_conditions: [input]
  - name: times
    actions:
      - name: scaled
        function: {T}:scaled
        trigger_conditions: [input]
        config: {{factor: 3}}
""",
    )
    env = _env()
    env.load_yaml(str(path))
    assert set(env._agents) == {"up", "way_up", "times"}
    assert _run(env, "up", [1]) == [2]
    assert _run(env, "way_up", [1]) == [101]
    assert _run(env, "times", [2]) == [6]  # the action's config


def test_shared_actions_and_resources_are_every_agents(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "shared.yaml",
        f"""
agents:
  - name: formal
    prompts:
      - name: greeting
        messages:
          - {{role: system, content: "Answer formally."}}
    chat_model_setups:
      - {{name: chat_model, clazz: ollama, connection: orders, prompt: greeting}}
    actions: [ask, answer]
  - name: casual
    chat_model_setups:
      - {{name: chat_model, clazz: ollama, connection: orders, prompt: greeting}}
    actions: [ask, answer]

prompts:
  - name: greeting
    text: "Answer casually."
chat_model_connections:
  - name: orders
    clazz: {T}.OrderModelConnection
actions:
  - name: ask
    function: {T}:ask
    trigger_conditions: [input]
  - name: answer
    function: {T}:answer
    trigger_conditions: [chat_response]
""",
    )
    env = _env()
    env.load_yaml(path)
    assert "orders" in env.resources[ResourceType.CHAT_MODEL_CONNECTION]
    assert "greeting" in env.resources[ResourceType.PROMPT]
    # The agent's own prompt wins over the shared one of the same name.
    assert _run(env, "formal", ["hi"]) == ["Answer formally. | hi"]
    assert _run(env, "casual", ["hi"]) == ["Answer casually. | hi"]


def test_an_agents_file_and_an_infrastructure_file(tmp_path: Path) -> None:
    """Upstream's pattern: the agents in one file, the connections they use in another
    (swapped per deployment); either order, in one call or several."""
    agents = _write(
        tmp_path,
        "agents.yaml",
        f"""
agents:
  - name: orders_agent
    chat_model_setups:
      - {{name: chat_model, clazz: ollama, connection: orders, tools: [query_order]}}
    tools:
      - name: query_order
        function: {T}:query_order
        injected_args:
          tenant_id: {{source: config, key: tenant}}
    actions:
      - {{name: ask, function: "{T}:ask", trigger_conditions: [input]}}
      - {{name: answer, function: "{T}:answer", trigger_conditions: [chat_response]}}
""",
    )
    infra = _write(
        tmp_path,
        "infra.yaml",
        f"""
chat_model_connections:
  - name: orders
    clazz: {T}.OrderModelConnection
    base_url: http://models.internal
""",
    )
    for paths in ([agents, infra], [infra, agents]):
        env = _env()
        env.get_config().set_str("tenant", "acme")
        env.load_yaml(paths)
        assert _run(env, "orders_agent", ["where is o-17?"]) == ["found acme:o-17"]
    env = _env()
    env.load_yaml(infra)
    env.load_yaml(agents)
    assert set(env._agents) == {"orders_agent"}


def test_tools_and_prompts_are_built_as_declared(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "tools.yaml",
        f"""
agents:
  - name: a
    tools:
      - name: lookup
        function: {T}:query_order
        injected_args:
          tenant_id: {{key: request.tenant}}
    prompts:
      - name: text_prompt
        text: "hello {{name}}"
      - name: messages_prompt
        messages:
          - {{role: system, content: "be brief"}}
          - {{content: "{{q}}"}}
""",
    )
    agents, _, _ = build_agents(path)
    resources = agents["a"].resources
    tool = resources[ResourceType.TOOL]["lookup"]
    assert isinstance(tool, FunctionTool)
    assert tool.func == PythonFunction(module=T, qualname="query_order")  # upstream's form
    assert tool.metadata.name == "lookup"  # the resource's name is the one the model calls
    assert tool.metadata.description == "Look an order up."
    assert list(tool.metadata.args_schema["properties"]) == ["order_id"]  # injected: hidden
    assert tool.injected_args == {"tenant_id": InjectedArg.from_sensory_memory("request.tenant")}
    text = resources[ResourceType.PROMPT]["text_prompt"]
    assert isinstance(text, LocalPrompt) and text.template == "hello {name}"
    messages = resources[ResourceType.PROMPT]["messages_prompt"]
    assert isinstance(messages, LocalPrompt) and isinstance(messages.template, list)
    assert [(m.role.value, m.text) for m in messages.template] == [
        ("system", "be brief"),
        ("user", "{q}"),
    ]


def test_descriptors_resolve_aliases_per_section_and_pass_their_arguments(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "descriptors.yaml",
        f"""
agents:
  - name: a
    actions:
      - {{name: inc, function: "{T}:increment", trigger_conditions: [input, chat_response]}}
    chat_model_connections:
      - {{name: conn, clazz: ollama, base_url: "http://localhost:11434", request_timeout: 30}}
    chat_model_setups:
      - {{name: setup, clazz: anthropic, connection: conn, model: claude}}
      - {{name: own, clazz: "my_pkg.models.MySetup", connection: conn}}
    mcp_servers:
      - {{name: tools, clazz: mcp, endpoint: "http://127.0.0.1:8000/mcp"}}
""",
    )
    agents, _, _ = build_agents(path)
    agent = agents["a"]
    triggers, func, config = agent.actions["inc"]
    assert triggers == [InputEvent.EVENT_TYPE, ChatResponseEvent.EVENT_TYPE]
    assert func == PythonFunction(module=T, qualname="increment")
    assert config is None
    resources = agent.resources
    assert resources[ResourceType.CHAT_MODEL_CONNECTION]["conn"] == ResourceDescriptor(
        clazz=ResourceName.ChatModel.OLLAMA_CONNECTION,
        base_url="http://localhost:11434",
        request_timeout=30,
    )
    assert resources[ResourceType.CHAT_MODEL]["setup"] == ResourceDescriptor(
        clazz=ResourceName.ChatModel.ANTHROPIC_SETUP, connection="conn", model="claude"
    )
    assert resources[ResourceType.CHAT_MODEL]["own"].target_clazz == "MySetup"
    assert resources[ResourceType.MCP_SERVER]["tools"] == ResourceDescriptor(
        clazz=ResourceName.MCP_SERVER, endpoint="http://127.0.0.1:8000/mcp"
    )


def test_an_agent_from_yaml_is_an_agent_of_the_api(tmp_path: Path) -> None:
    """What build_agents gives runs like any agent; load_yaml(env, path) is the method."""
    path = _write(
        tmp_path,
        "one.yaml",
        f"agents:\n  - name: a\n    actions:\n"
        f"      - {{name: dec, function: '{T}:decrement', trigger_conditions: [input]}}\n",
    )
    agents, _, _ = build_agents(path)
    assert isinstance(agents["a"], Agent)
    env = _env()
    load_yaml(env, path)
    assert _run(env, "a", [1]) == [0]
    other = _env()
    out = other.from_list([{"key": 1, "value": 5}]).apply(agents["a"])
    other.execute()
    assert out.to_list() == [{1: 4}]


def test_apply_of_an_unknown_name_names_the_known_ones(tmp_path: Path) -> None:
    env = _env()
    env.load_yaml(
        _write(
            tmp_path,
            "one.yaml",
            f"agents:\n  - name: a\n    actions:\n"
            f"      - {{name: i, function: '{T}:increment', trigger_conditions: [input]}}\n",
        )
    )
    with pytest.raises(ValueError, match=r"no agent named 'b'.*known: \['a'\]"):
        env.from_list([]).apply("b")


def test_the_published_schema_is_the_specs() -> None:
    from flink_agents.api.yaml.specs import export

    schema = Path(__file__).parents[3] / "docs" / "yaml-schema.json"
    assert schema.read_text() == export(), (
        "python -m flink_agents.api.yaml.specs > docs/yaml-schema.json"
    )
