"""Apache Flink Agents' two quickstart agents (examples/upstream_quickstart/), written as
upstream's documentation has them with only the model swapped for the offline one, run
on the local runner and as PyFlink jobs on the mini-cluster, with upstream's entry points
(``StreamExecutionEnvironment.get_execution_environment()`` then
``AgentsExecutionEnvironment.get_execution_environment(env)``, ``from_datastream``,
``to_datastream``, ``execute(job_name)``).

Each run is a fresh process, as a user runs the script, with this environment's ``bin``
first on PATH (an activated virtualenv), which thread mode needs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "upstream_quickstart"
TABLE_JOB = Path(__file__).resolve().parent / "upstream_table_job.py"

EXPECTED = [
    {"id": "p-101", "score": 1, "reasons": ["poor quality"]},
    {"id": "p-102", "score": 5, "reasons": []},
    {"id": "p-101", "score": 2, "reasons": ["shipping damage"]},
    {"id": "p-103", "score": 1, "reasons": ["shipping damage", "late delivery"]},
    {"id": "p-102", "score": 3, "reasons": ["short cable"]},
    {"id": "p-104", "score": 5, "reasons": []},
]
"""One analysis per review of resources/product_review.txt, in input order."""

NOTIFIED = {"p-101", "p-103"}
"""Products whose review complains about the shipping: the model calls the tool first."""


def _run(script: str | Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(
        [sys.executable, str(QUICKSTART / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results = [
        json.loads(line.split("RESULT ", 1)[1])
        for line in done.stdout.splitlines()
        if "RESULT " in line
    ]
    return results, done.stdout


def _check(results: list[dict[str, Any]]) -> None:
    def by_product(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for item in items:
            grouped.setdefault(item["id"], []).append(item)
        return grouped

    # Every review analyzed once; a product's reviews in input order (one key, one run
    # at a time); products in any order.
    assert by_product(results) == by_product(EXPECTED)


def _notified(stdout: str) -> set[str]:
    # Anywhere in the output: the tool prints from tool threads, and two calls at once can
    # put both texts on one line (print writes the text and its newline separately).
    return set(re.findall(r"Shipping problem with product \[([^\]]+)\]", stdout))


@pytest.mark.parametrize(
    "script",
    [
        "workflow_single_agent_example.py",
        "react_agent_example.py",
        "yaml_workflow_agent_example.py",
    ],
)
def test_quickstart_on_the_local_runner(script: str) -> None:
    results, stdout = _run(script, "--local")
    _check(results)
    assert _notified(stdout) == NOTIFIED  # the tool ran for the shipping complaints


@pytest.mark.flink
@pytest.mark.parametrize(
    "script",
    [
        "workflow_single_agent_example.py",
        "react_agent_example.py",
        "yaml_workflow_agent_example.py",
    ],
)
def test_quickstart_as_a_flink_job(script: str) -> None:
    results, stdout = _run(script)
    _check(results)
    assert _notified(stdout) == NOTIFIED


@pytest.mark.flink
@pytest.mark.parametrize("mode", ["table", "external", "stream"])
def test_upstream_table_and_typed_stream_outputs(mode: str) -> None:
    """from_table, then upstream's to_table(schema, output_type) (the output type a
    RowTypeInfo, or an ExternalTypeInfo of one as upstream's docs show) or
    to_datastream(output_type): each analysis becomes a row of (id, score)."""
    results, _ = _run(TABLE_JOB, mode)
    expected = [{"id": e["id"], "score": e["score"]} for e in EXPECTED]
    assert sorted(results, key=json.dumps) == sorted(expected, key=json.dumps)
