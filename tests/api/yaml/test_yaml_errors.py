"""A wrong YAML agent file fails with the file, the line and the field named, whether the
mistake is in its YAML, its shape, a name or something it asks for that is not here."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_agents.api.errors import YamlDefinitionError
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceType

T = "tests.api.yaml.targets"

INCREMENT = f"{{name: inc, function: '{T}:increment', trigger_conditions: [input]}}"


def _load(tmp_path: Path, text: str, *, env: AgentsExecutionEnvironment | None = None) -> Path:
    path = tmp_path / "agents.yaml"
    path.write_text(text)
    (env or AgentsExecutionEnvironment.get_execution_environment()).load_yaml(path)
    return path


def _error(tmp_path: Path, text: str) -> YamlDefinitionError:
    with pytest.raises(YamlDefinitionError) as caught:
        _load(tmp_path, text)
    error = caught.value
    assert error.file == str(tmp_path / "agents.yaml")
    assert str(error).startswith(f"{error.file}, line {error.line}, {error.field}: ")
    return error


def _at(error: YamlDefinitionError) -> tuple[int, str]:
    return error.line, error.field


def test_not_yaml(tmp_path: Path) -> None:
    error = _error(tmp_path, "agents:\n  - name: a\n    actions: [x\n")
    assert error.line == 4 and "not valid YAML" in str(error)


def test_an_empty_file(tmp_path: Path) -> None:
    assert "is empty" in str(_error(tmp_path, "# nothing\n"))


def test_a_key_written_twice(tmp_path: Path) -> None:
    error = _error(tmp_path, "agents:\n  - name: a\n    name: b\n")
    assert _at(error) == (3, "agents[0].name")
    assert "written twice (first on line 2)" in str(error)


def test_a_missing_field_an_unknown_one_and_a_wrong_type_each_at_their_line(
    tmp_path: Path,
) -> None:
    error = _error(
        tmp_path,
        f"""agents:
  - name: a
    actions:
      - {INCREMENT}
      - name: b
        function: {T}:decrement
    tools:
      - name: t
        fuction: {T}:query_order
  - name: c
    description: [not, text]
""",
    )
    assert [(line, field) for _, line, field, _ in error.problems] == [
        (5, "agents[0].actions[1].trigger_conditions"),
        (9, "agents[0].tools[0].fuction"),
        (11, "agents[1].description"),
    ]
    assert "Field required" in error.problems[0][3]
    assert "Extra inputs are not permitted" in error.problems[1][3]


def test_a_prompt_with_text_and_messages(tmp_path: Path) -> None:
    error = _error(tmp_path, "prompts:\n  - name: p\n    text: hi\n    messages: [{content: hi}]\n")
    assert _at(error) == (2, "prompts[0]")
    assert "exactly one non-empty 'text' or 'messages'" in str(error)


def test_injected_args_that_are_no_mapping(tmp_path: Path) -> None:
    error = _error(
        tmp_path,
        f"agents:\n  - name: a\n    tools:\n      - name: t\n        function: {T}:query_order\n"
        "        injected_args: [tenant_id]\n",
    )
    assert _at(error) == (6, "agents[0].tools[0].injected_args")
    assert "'injected_args' must be a dict" in str(error)


def test_a_function_reference_of_the_wrong_form(tmp_path: Path) -> None:
    error = _error(
        tmp_path,
        f"agents:\n  - name: a\n    actions:\n      - name: x\n        function: {T}.increment\n"
        "        trigger_conditions: [input]\n",
    )
    assert _at(error) == (4, "agents[0].actions[0]")
    assert "<module-or-class>:<qualname>" in str(error)


def test_a_function_that_is_not_there(tmp_path: Path) -> None:
    error = _error(
        tmp_path,
        f"agents:\n  - name: a\n    actions:\n      - name: x\n        function: {T}:incremnt\n"
        "        trigger_conditions: [input]\n",
    )
    assert _at(error) == (5, "agents[0].actions[0].function")
    assert "incremnt" in str(error)
    tool = _error(
        tmp_path,
        "agents:\n  - name: a\n    tools:\n      - name: t\n        function: no_such_pkg:f\n",
    )
    assert _at(tool) == (4, "agents[0].tools[0]")
    assert "no_such_pkg" in str(tool)


def test_a_condition_expression_that_cannot_be_used(tmp_path: Path) -> None:
    head = f"agents:\n  - name: a\n    actions:\n      - name: x\n        function: {T}:increment\n"
    _load(tmp_path, head + '        trigger_conditions: [input, "score > 5"]\n')
    error = _error(tmp_path, head + '        trigger_conditions: [input, "score >"]\n')
    assert _at(error) == (6, "agents[0].actions[0].trigger_conditions")
    assert "action 'x': invalid trigger condition expression 'score >'" in str(error)


def test_a_reference_to_a_shared_action_that_is_not_there(tmp_path: Path) -> None:
    error = _error(
        tmp_path, f"agents:\n  - name: a\n    actions:\n      - {INCREMENT}\n      - b\n"
    )
    assert _at(error) == (5, "agents[0].actions[1]")
    assert "references shared action 'b'" in str(error)


def test_names_declared_twice(tmp_path: Path) -> None:
    error = _error(tmp_path, "agents:\n  - name: a\n  - name: a\n")
    assert _at(error) == (3, "agents[1].name")
    assert "Duplicate agent name 'a'" in str(error)
    own = _error(
        tmp_path,
        "agents:\n  - name: a\n    prompts:\n      - {name: p, text: x}\n      - {name: p, text: y}\n",
    )
    assert _at(own) == (5, "agents[0].prompts[1]")
    assert "'p' is already defined" in str(own)
    shared = _error(
        tmp_path,
        "chat_model_connections:\n  - {name: c, clazz: ollama}\n  - {name: c, clazz: openai}\n",
    )
    assert _at(shared) == (3, "chat_model_connections[1].name")
    assert "Duplicate shared resource name 'c'" in str(shared)


def test_names_the_environment_has_already(tmp_path: Path) -> None:
    env = AgentsExecutionEnvironment.get_execution_environment()
    first = tmp_path / "first.yaml"
    first.write_text(f"agents:\n  - name: a\n    actions: [{INCREMENT}]\n")
    env.load_yaml(first)
    with pytest.raises(YamlDefinitionError) as caught:
        _load(tmp_path, "agents:\n  - name: b\n  - name: a\n", env=env)
    assert _at(caught.value) == (3, "agents[1].name")
    assert "Duplicate agent name 'a'" in str(caught.value)
    assert "b" not in env._agents  # a file that fails adds nothing
    env.add_resource("c", ResourceType.PROMPT, _prompt())
    with pytest.raises(YamlDefinitionError, match=r"line 3, prompts\[1\].name: Duplicate"):
        _load(tmp_path, "prompts:\n  - {name: d, text: x}\n  - {name: c, text: x}\n", env=env)
    assert "d" not in env.resources[ResourceType.PROMPT]


def _prompt() -> Prompt:
    return Prompt.from_text("x")


def test_an_option_the_class_does_not_take(tmp_path: Path) -> None:
    error = _error(
        tmp_path,
        f"chat_model_connections:\n  - name: c\n    clazz: {T}.OrderModelConnection\n"
        "    base_ur: x\n",
    )
    assert _at(error) == (2, "chat_model_connections[0]")
    assert "base_ur" in str(error) and "base_url" in str(error)  # the closest option


def test_a_resource_type_once_here_loads(tmp_path: Path) -> None:
    """Embedding models pass the same checks now that the project has them."""
    _load(
        tmp_path,
        "agents:\n  - name: a\n    embedding_model_connections:\n      - {name: e, clazz: ollama}\n",
    )


def test_a_java_implementation(tmp_path: Path) -> None:
    error = _error(
        tmp_path,
        "agents:\n  - name: a\n    chat_model_connections:\n"
        "      - {name: c, type: java, clazz: ollama, endpoint: 'http://x'}\n",
    )
    assert _at(error) == (4, "agents[0].chat_model_connections[0].clazz")
    assert "Java" in str(error)
    action = _error(
        tmp_path,
        "agents:\n  - name: a\n    actions:\n      - name: x\n        type: java\n"
        "        function: com.example.Actions:handle\n        trigger_conditions: [input]\n",
    )
    assert _at(action) == (6, "agents[0].actions[0].function")
    assert "Java" in str(action)


def test_a_setup_naming_a_resource_nobody_has_fails_when_applied(tmp_path: Path) -> None:
    """Names a setup refers to are looked up when the agent is applied by name, once every
    file is loaded: the agent's own resources, then the environment's."""
    agents = tmp_path / "agents.yaml"
    agents.write_text(
        f"""agents:
  - name: a
    chat_model_setups:
      - name: chat_model
        clazz: ollama
        connection: models
        prompt: greeting
        tools: [lookup, lookp]
    tools:
      - {{name: lookup, function: "{T}:query_order"}}
    actions: [{INCREMENT}]
"""
    )
    infra = tmp_path / "infra.yaml"
    infra.write_text(
        f"chat_model_connections:\n  - {{name: models, clazz: {T}.OrderModelConnection}}\n"
    )
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(agents)  # the connection comes in the next file: not an error yet
    env.load_yaml(infra)
    with pytest.raises(YamlDefinitionError) as caught:
        env.from_list([]).apply("a")
    assert [(line, field) for _, line, field, _ in caught.value.problems] == [
        (7, "agents[0].chat_model_setups[0].prompt"),
        (8, "agents[0].chat_model_setups[0].tools[1]"),
    ]
    assert "agent 'a' has no prompt named 'greeting'" in str(caught.value)
    assert "no tool named 'lookp'" in str(caught.value) and "known: ['lookup']" in str(caught.value)
    env.add_resource("greeting", ResourceType.PROMPT, _prompt())
    env.add_resource("lookp", ResourceType.TOOL, _prompt)
    env.from_list([]).apply("a")  # all there now


def test_a_shared_setup_is_checked_for_each_agent_that_uses_it(tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text(
        f"""agents:
  - name: own_connection
    chat_model_connections:
      - {{name: models, clazz: {T}.OrderModelConnection}}
    actions: [{INCREMENT}]
  - name: no_connection
    actions: [{INCREMENT}]
  - name: own_setup
    chat_model_setups:
      - {{name: chat_model, clazz: ollama, connection: elsewhere}}
    chat_model_connections:
      - {{name: elsewhere, clazz: {T}.OrderModelConnection}}
    actions: [{INCREMENT}]
chat_model_setups:
  - {{name: chat_model, clazz: ollama, connection: models}}
"""
    )
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(path)
    env.from_list([]).apply("own_connection")
    env.from_list([]).apply("own_setup")  # its own chat_model replaces the shared one
    with pytest.raises(YamlDefinitionError, match=r"line 15, chat_model_setups\[0\].connection"):
        env.from_list([]).apply("no_connection")
