"""A job with upstream's Table and typed-stream entry points, on upstream's table agent
(``TableReviewAnalysisAgent``: rows reach it as PyFlink ``Row``s, as upstream hands them,
and its key selector reads ``row.id``): ``from_table``, ``to_table(schema, output_type)`` (``table`` mode; ``external``
mode: ``output_type=ExternalTypeInfo(RowTypeInfo(...))``, the form upstream's docs show) and
``to_datastream(output_type)`` (``stream`` mode). Prints ``RESULT {json}`` per output row.

    python e2e_tests/upstream_table_job.py table|external|stream
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "upstream_quickstart"
UPSTREAM = Path(__file__).resolve().parents[1] / "examples" / "upstream"
sys.path.insert(0, str(QUICKSTART))
sys.path.insert(0, str(UPSTREAM))  # upstream's examples, as flink_agents.examples
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(UPSTREAM), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
)

from _harness import reviews, share_this_folder_with_workers  # noqa: E402
from custom_types_and_resources import ollama_server_descriptor  # noqa: E402

from flink_agents.api.execution_environment import AgentsExecutionEnvironment  # noqa: E402
from flink_agents.api.resource import ResourceType  # noqa: E402
from flink_agents.examples.quickstart.agents.table_review_analysis_agent import (  # noqa: E402
    TableReviewAnalysisAgent,
)


def main(mode: str) -> None:
    share_this_folder_with_workers()
    from pyflink.common import Types
    from pyflink.common.typeinfo import BasicTypeInfo, ExternalTypeInfo, RowTypeInfo
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import DataTypes, Schema, StreamTableEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env, t_env)
    agents_env.add_resource(
        "ollama_server", ResourceType.CHAT_MODEL_CONNECTION, ollama_server_descriptor
    )
    records = [json.loads(line) for line in reviews()]
    table = t_env.from_elements(
        [(r["id"], r["review"]) for r in records],
        DataTypes.ROW(
            [
                DataTypes.FIELD("id", DataTypes.STRING()),
                DataTypes.FIELD("review", DataTypes.STRING()),
            ]
        ),
    )
    output_type = Types.ROW_NAMED(["id", "score"], [Types.STRING(), Types.INT()])
    builder = agents_env.from_table(table, key_selector=lambda row: row.id).apply(
        TableReviewAnalysisAgent()
    )
    if mode == "external":
        output_type = ExternalTypeInfo(
            RowTypeInfo(
                [BasicTypeInfo.STRING_TYPE_INFO(), BasicTypeInfo.INT_TYPE_INFO()], ["id", "score"]
            )
        )
    if mode in ("table", "external"):
        schema = (
            Schema.new_builder()
            .column("id", DataTypes.STRING())
            .column("score", DataTypes.INT())
            .build()
        )
        table = builder.to_table(schema=schema, output_type=output_type)
        with table.execute().collect() as rows:
            results = [{"id": row[0], "score": row[1]} for row in rows]
    else:
        with builder.to_datastream(output_type).execute_and_collect("typed-stream") as rows:
            results = [{"id": row["id"], "score": row["score"]} for row in rows]
    for result in results:
        print("RESULT " + json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1])
