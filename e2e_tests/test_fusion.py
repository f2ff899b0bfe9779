"""The agent operator fused with the Python operator after it (PyFlink's operator chaining).

PyFlink fuses a Python operator with a Python operator after it into one; the agent's outputs
then reach the next function without being pickled. `execute_and_collect` over a union (or a
repartition) of such pairs used to leave the unfused operators in the job as well: the job ran every agent
twice, and with the agent's uid Flink refused it (see `flink_agents.runtime.flink.compat.pyflink`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.agents import UpperAgent

pytestmark = pytest.mark.flink


def _mark(output: dict[str, Any]) -> dict[str, Any]:
    return {**output, "marked": True}


def _agents(
    stream_env: Callable[..., Any], log_dir: Path | None = None, *, rebalanced: bool = False
) -> tuple[Any, Any]:
    """(stream environment, a union of two agents' outputs, each through a `map`; or, when
    ``rebalanced``, the two rebalanced, each of its own, and that union)."""
    from flink_agents.api.core_options import AgentConfigOptions
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=1)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    streams = []
    for name in ("left", "right"):
        if log_dir is not None:  # each agent's event log in a folder of its own
            agents_env.get_config().set_str("eventLoggerType", "jsonl")
            agents_env.get_config().set(AgentConfigOptions.BASE_LOG_DIR, str(log_dir / name))
        records = env.from_collection([{"id": i, "text": f"{name} {i}"} for i in range(5)])
        agent = agents_env.from_datastream(records, key_selector=lambda r: r["id"])
        stream = agent.apply(UpperAgent(), name=name).to_datastream().map(_mark)
        streams.append(stream.rebalance() if rebalanced else stream)
    return env, streams[0].union(streams[1])


def test_the_agent_operator_and_the_map_after_it_are_one_operator(
    stream_env: Callable[..., Any],
) -> None:
    env, _ = _agents(stream_env)
    plan = json.loads(env.get_execution_plan())
    contents = [node["contents"] for node in plan["nodes"]]
    assert "left, Map" in contents and "right, Map" in contents, contents


@pytest.mark.parametrize("rebalanced", [False, True], ids=["union", "rebalanced"])
def test_collecting_a_union_of_fused_agents_runs_each_input_once(
    stream_env: Callable[..., Any], tmp_path: Path, rebalanced: bool
) -> None:
    _, outputs = _agents(stream_env, tmp_path, rebalanced=rebalanced)
    with outputs.execute_and_collect("fused-union") as results:
        collected = list(results)
    assert sorted(o["reply"] for o in collected) == sorted(
        f"{name.upper()} {i}" for name in ("left", "right") for i in range(5)
    )
    assert all(o["marked"] for o in collected)
    runs = [
        record
        for log in tmp_path.glob("*/events-*.jsonl")
        for record in map(json.loads, log.read_text().splitlines())
        if record.get("type") == "_input_event"
    ]
    assert len(runs) == 10  # not 20: no unfused copy of an agent ran beside the fused one
