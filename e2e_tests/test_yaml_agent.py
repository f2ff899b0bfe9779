"""Upstream's YAML e2e agents (``resources/yaml_test_agent.yaml``,
``resources/yaml_multi_agent.yaml`` and `e2e_tests.yaml_test_actions`, only the chat model
connection changed to the offline one): ``load_yaml``, then ``apply`` by name, on the
local runner and as a PyFlink job on the mini-cluster, with upstream's assertions (the
math answer went through the ``add`` tool and says 3, the creative one is about cats)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.yaml_test_actions import YamlChatInput, YamlChatOutput
from flink_agents.api.execution_environment import AgentsExecutionEnvironment

RESOURCES = Path(__file__).resolve().parent / "resources"
INPUTS = [
    YamlChatInput.model_validate_json(line)
    for line in (RESOURCES / "yaml_test_input" / "input.txt").read_text().splitlines()
    if line.strip()
]


def _check(answers: dict[int, str]) -> None:
    assert set(answers) == {1, 2}
    assert "3" in answers[1], f"math answer missing '3': {answers[1]!r}"
    assert "cat" in answers[2].lower(), f"creative answer missing 'cat': {answers[2]!r}"


def _local(env: AgentsExecutionEnvironment, agent: str, records: list[Any]) -> list[Any]:
    builder = env.from_list([{"key": r.id, "value": r} for r in records]).apply(agent)
    env.execute()
    return [value for output in builder.to_list() for value in output.values()]


def test_single_yaml_agent_on_the_local_runner() -> None:
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(RESOURCES / "yaml_test_agent.yaml")
    outputs = _local(env, "yaml_test_agent", INPUTS)
    assert all(isinstance(o, YamlChatOutput) for o in outputs)
    _check({o.id: o.answer for o in outputs})


def test_chained_yaml_agents_on_the_local_runner() -> None:
    """Two agents of one file share its connection and its ``process_chat_response``
    action; the math agent's outputs are the commentator's inputs."""
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(RESOURCES / "yaml_multi_agent.yaml")
    math = _local(env, "math_agent", [INPUTS[0]])
    assert [o.id for o in math] == [1] and "3" in math[0].answer
    final = _local(env, "commentator_agent", math)
    assert [(o.id, o.answer) for o in final] == [(1, "3")]


@pytest.mark.flink
def test_single_yaml_agent_as_a_flink_job(stream_env: Callable[..., Any]) -> None:
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    from e2e_tests.yaml_test_actions import YamlChatKeySelector

    env = stream_env(parallelism=1)
    lines = env.from_source(
        source=FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), str(RESOURCES / "yaml_test_input")
        ).build(),
        watermark_strategy=WatermarkStrategy.no_watermarks(),
        source_name="yaml_test_source",
    )
    inputs = lines.map(lambda x: YamlChatInput.model_validate_json(x))

    agents_env = AgentsExecutionEnvironment.get_execution_environment(env=env)
    agents_env.load_yaml(RESOURCES / "yaml_test_agent.yaml")
    outputs = (
        agents_env.from_datastream(input=inputs, key_selector=YamlChatKeySelector())
        .apply("yaml_test_agent")
        .to_datastream()
    )
    texts = outputs.map(lambda x: json.dumps(x), Types.STRING())  # as upstream's yaml_test
    with texts.execute_and_collect("e2e-yaml-agent") as results:
        records = [json.loads(text) for text in results]
    _check({r["id"]: r["answer"] for r in records})
