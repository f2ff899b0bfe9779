"""One mini-cluster job, five agents side by side (thread mode, parallelism 2):
DataStream in and out, many keys with order per key, a tool round trip with media, a
bounded input whose last runs are still in flight when the input ends, and outputs that
go downstream while their run is still going."""

from __future__ import annotations

import base64
import json
import re
import stat
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.agents import (
    PNG_B64,
    ChartAgent,
    OrderAgent,
    SlowModelAgent,
    TwoPartAgent,
    UpperAgent,
)

pytestmark = pytest.mark.flink

ORDER_KEYS, ORDER_INPUTS = 100, 6
TAIL_KEYS, TAIL_INPUTS, TAIL_LATENCY = 20, 2, 1.0


def _tag(scenario: str) -> Callable[[Any], dict[str, Any]]:
    return lambda output: {"scenario": scenario, **output}


def _stamp(output: dict[str, Any]) -> dict[str, Any]:
    import time

    return {"scenario": "parts", "at": time.time(), **output}


@pytest.fixture(scope="module")
def job(stream_env: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from flink_agents.api.core_options import AgentConfigOptions
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=2)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    assert agents_env.execution_mode == "thread"
    log_dir = tmp_path_factory.mktemp("event-log")

    echo_in = env.from_collection([{"id": i, "text": f"hello {i}"} for i in range(20)])
    order_in = env.from_collection(
        [{"key": f"k{k}", "n": n} for n in range(ORDER_INPUTS) for k in range(ORDER_KEYS)]
    )
    chart_in = env.from_collection([{"key": f"c{i}", "title": f"chart{i}"} for i in range(4)])
    parts_in = env.from_collection([{"key": f"p{i}"} for i in range(6)])
    tail_in = env.from_collection(
        [{"key": f"t{k}", "n": n} for n in range(TAIL_INPUTS) for k in range(TAIL_KEYS)]
    )

    echo = agents_env.from_datastream(echo_in, key_selector=lambda r: r["id"])
    order = agents_env.from_datastream(order_in, key_selector=lambda r: r["key"])
    tail = agents_env.from_datastream(tail_in, key_selector=lambda r: r["key"])
    echo.apply(UpperAgent(), name="upper")
    order.apply(OrderAgent(), name="order")
    tail.apply(SlowModelAgent(TAIL_LATENCY), name="tail")
    parts = agents_env.from_datastream(parts_in, key_selector=lambda r: r["key"])
    parts.apply(TwoPartAgent(), name="parts")
    agents_env.get_config().set_str("eventLoggerType", "jsonl")  # this project's events.jsonl
    agents_env.get_config().set(AgentConfigOptions.BASE_LOG_DIR, str(log_dir))
    chart = agents_env.from_datastream(chart_in, key_selector=lambda r: r["key"])
    chart.apply(ChartAgent(), name="chart")
    # The same agent again, writing upstream's File Event Log (eventLoggerType: file).
    upstream_log_dir = tmp_path_factory.mktemp("upstream-event-log")
    agents_env.get_config().set_str("eventLoggerType", "file")
    agents_env.get_config().set_str("event-log.trace.enabled", "true")
    agents_env.get_config().set(AgentConfigOptions.BASE_LOG_DIR, str(upstream_log_dir))
    chart_in_2 = env.from_collection([{"key": f"u{i}", "title": f"chart{i}"} for i in range(4)])
    chart_2 = agents_env.from_datastream(chart_in_2, key_selector=lambda r: r["key"])
    chart_2.apply(ChartAgent(), name="chart/upstream")

    outputs = (
        echo.to_datastream()
        .map(_tag("echo"))
        .union(
            order.to_datastream().map(_tag("order")),
            chart.to_datastream().map(_tag("chart")),
            chart_2.to_datastream().map(_tag("chart_2")),
            tail.to_datastream().map(_tag("tail")),
            parts.to_datastream().map(_stamp),
        )
    )
    with outputs.execute_and_collect("e2e-datastream") as results:
        collected = list(results)
    by_scenario: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in collected:
        by_scenario[item.pop("scenario")].append(item)
    return {"outputs": by_scenario, "log_dir": log_dir, "upstream_log_dir": upstream_log_dir}


def test_datastream_in_and_out(job: dict[str, Any]) -> None:
    echo = sorted(job["outputs"]["echo"], key=lambda o: o["id"])
    assert echo == [{"id": i, "reply": f"HELLO {i}"} for i in range(20)]


def test_many_keys_keep_input_order_per_key(job: dict[str, Any]) -> None:
    outputs = job["outputs"]["order"]
    assert len(outputs) == ORDER_KEYS * ORDER_INPUTS
    per_key: dict[str, list[int]] = defaultdict(list)
    for out in outputs:
        per_key[out["key"]].append(out["n"])
        # Short-term memory saw this key's earlier inputs, in order, exactly once.
        assert out["seen"] == list(range(out["n"] + 1))
    assert len(per_key) == ORDER_KEYS
    assert all(ns == list(range(ORDER_INPUTS)) for ns in per_key.values())


def test_tool_round_trip_with_media(job: dict[str, Any]) -> None:
    size = len(base64.b64decode(PNG_B64))
    answers = sorted(job["outputs"]["chart"], key=lambda o: o["key"])
    assert answers == [
        {"key": f"c{i}", "answer": f"image chart{i}.png image/png {size} bytes"} for i in range(4)
    ]


def test_event_log_per_subtask_without_media(job: dict[str, Any]) -> None:
    files = sorted(Path(job["log_dir"]).glob("events-*.jsonl"))
    assert files and all(f.name in ("events-0.jsonl", "events-1.jsonl") for f in files)
    records = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    types = {r.get("type") for r in records}
    assert {"_input_event", "_tool_request_event", "_tool_response_event"} <= types
    assert {r["key"] for r in records if r.get("type") == "_input_event"} == {
        f"c{i}" for i in range(4)
    }
    assert all(PNG_B64 not in f.read_text() for f in files)


def test_upstreams_file_event_log_per_subtask(job: dict[str, Any]) -> None:
    import subprocess
    import sys

    assert len(job["outputs"]["chart_2"]) == 4
    directory = Path(job["upstream_log_dir"])
    files = sorted(directory.iterdir())
    # events-{jobId}-{taskName}-{subtaskId}.log: the job's id in thread mode, one job.
    names = [re.fullmatch(r"events-([0-9a-f]{32})-(.+)-([01])\.log", f.name) for f in files]
    assert all(names) and len({m[1] for m in names if m}) == 1, [f.name for f in files]
    assert all("/" not in m[2] for m in names if m)
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    assert all(PNG_B64 not in f.read_text() for f in files)
    done = subprocess.run(
        [sys.executable, "-m", "flink_agents.cli.trace_tree", str(directory), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    forest = json.loads(done.stdout)
    assert len(forest["roots"]) == 4 and forest["warnings"] == [] and done.stderr == ""
    types = {node["eventType"] for node in forest["nodes"].values()}
    assert {"_tool_request_event", "_tool_response_event", "_output_event"} <= types
    # event-log.trace.enabled: upstream's lifecycle records of the actions and of the model
    # and tool calls they made, each execution started and ended (the reader skips them).
    records = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    steps = [r for r in records if "status" in r]
    assert {r["entityType"] for r in steps} == {"action", "llm", "tool"}
    assert {r["status"] for r in steps} == {"started", "success"}
    ended = [r["executionId"] for r in steps if r["status"] == "success"]
    assert sorted(ended) == sorted(r["executionId"] for r in steps if r["status"] == "started")
    assert all(r["eventType"] not in types for r in steps)


def test_bounded_input_delivers_runs_in_flight_at_its_end(job: dict[str, Any]) -> None:
    outputs = job["outputs"]["tail"]
    assert len(outputs) == TAIL_KEYS * TAIL_INPUTS
    per_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for out in outputs:
        per_key[out["key"]].append(out)
    for key, outs in per_key.items():
        assert [o["answer"] for o in outs] == [f"echo {key}/{n}" for n in range(TAIL_INPUTS)]
        # Runs of a key are sequential: the second model call started after the first.
        assert outs[1]["done_at"] - outs[0]["done_at"] >= TAIL_LATENCY * 0.9


def test_outputs_go_downstream_while_their_run_goes_on(job: dict[str, Any]) -> None:
    by_key: dict[str, dict[str, float]] = defaultdict(dict)
    for output in job["outputs"]["parts"]:
        by_key[output["key"]][output["part"]] = output["at"]
    assert sorted(by_key) == [f"p{i}" for i in range(6)]
    for key, parts in by_key.items():
        assert set(parts) == {"early", "late"}, key
        # The early output left when it was sent, not with the late one at the run's end.
        assert parts["late"] - parts["early"] > TwoPartAgent.PAUSE_S / 2, (key, parts)
