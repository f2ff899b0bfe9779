"""Table in, Table out, with the agent operator in process mode (Python workers outside
the JVM): the option users pick where thread mode cannot run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from e2e_tests.agents import UpperAgent

pytestmark = pytest.mark.flink


def test_table_in_and_out_in_process_mode(stream_env: Callable[..., Any]) -> None:
    from pyflink.common import Types
    from pyflink.table import DataTypes, StreamTableEnvironment

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=1)
    t_env = StreamTableEnvironment.create(env)
    agents_env = FlinkAgentsExecutionEnvironment(env, t_env, execution_mode="process")
    assert agents_env.execution_mode == "process"

    table = t_env.from_elements(
        [(i, f"row {i}") for i in range(12)],
        DataTypes.ROW(
            [DataTypes.FIELD("id", DataTypes.BIGINT()), DataTypes.FIELD("text", DataTypes.STRING())]
        ),
    )
    out = (
        agents_env.from_table(table, key_selector=lambda row: row.id % 3)  # a Row, as upstream
        .apply(UpperAgent())
        .to_table(Types.ROW_NAMED(["id", "reply"], [Types.LONG(), Types.STRING()]))
    )
    assert out.get_schema().get_field_names() == ["id", "reply"]
    with out.execute().collect() as results:
        rows = sorted((row[0], row[1]) for row in results)
    assert rows == [(i, f"ROW {i}") for i in range(12)]
