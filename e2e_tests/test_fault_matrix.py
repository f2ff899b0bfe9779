"""Exactly once across failures: the fault-injection matrix on the mini-cluster.

Every case runs `FaultAgent` (two actions, a chat round trip with a tool call per input) as a
checkpointed job with a fixed-delay restart strategy, injects one failure (see
`e2e_tests.fault_agent`), and checks that

- every input has exactly one output, and each key's outputs come in input order;
- the key's memory matches the outputs (output `n` saw exactly inputs 0..n of its key);
- with a durable store, no model or tool call was made twice unless it was in flight when
  the failure happened (not finished, or finished within the store's write margin);
  those are counted and reported.

Axes: failure point x input shape (bounded input that ends before the failure; a source
that trickles, so the failure falls mid-stream) x parallelism (1, 2) x store (none,
SQLite) x topology (the outputs collected from the agent operator itself, or through a
`map` that PyFlink fuses with the agent operator into one, as in most jobs). A new failure
point is one entry of `FAILURE_POINTS` plus its branch in the agent.

`test_store_outage_mid_run` takes the store away for a few seconds in the middle of a tool
call (`OUTAGE_POINTS`: SQLite made read-only, PostgreSQL killed) and checks the same, plus
that no call at all was made twice: the store operations wait for the store inside the task,
so nothing fails and nothing restarts.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.fault_agent import (
    FAILURE_POINTS,
    OUTAGE_POINTS,
    STORE_OUTAGE_S,
    FaultAgent,
    set_immutable,
    write_control,
)

pytestmark = [pytest.mark.flink, pytest.mark.slow]

KEYS, INPUTS = 4, 6
TRICKLE_S = 0.03
"""Per record, for the trickling source (the whole input takes about 0.7 s)."""
IN_FLIGHT_MARGIN_S = 0.3
"""A call that ended this close before the failure may not have had its outcome recorded."""

SHAPES = ("ends_early", "trickle")
STORES = ("no_store", "sqlite")
TOPOLOGIES = ("direct", "fused")


def _target(point: str) -> str:
    if point == "drain":
        return f"k{KEYS - 1}/{INPUTS - 1}"  # the last input: the source has ended by then
    return "k1/2"


def _record_ends_early(i: int) -> dict[str, Any]:
    return {"key": f"k{i % KEYS}", "n": i // KEYS}


def _record_trickle(i: int) -> dict[str, Any]:
    time.sleep(TRICKLE_S)
    return {"key": f"k{i % KEYS}", "n": i // KEYS}


def _passed_on(output: dict[str, Any]) -> dict[str, Any]:
    return dict(output)


def _calls(trace: Path) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    """Per call (what, target, turn): its executions, each with start, end, failed."""
    executions: dict[tuple[str, str, int], list[dict[str, Any]]] = defaultdict(list)
    by_token: dict[str, dict[str, Any]] = {}
    lines = sorted(
        (line.split() for f in trace.glob("calls-*.log") for line in f.read_text().splitlines()),
        key=lambda parts: float(parts[0]),
    )
    for at, what, target, turn, status, token in lines:
        if status == "start":
            run = by_token[token] = {"start": float(at), "end": None, "failed": False}
            executions[(what, target, int(turn))].append(run)
        elif status == "end":
            by_token[token]["end"] = float(at)
        else:
            by_token[token]["failed"] = True
    return executions


CASES = list(itertools.product(FAILURE_POINTS, SHAPES, (1, 2), STORES, TOPOLOGIES))


@pytest.mark.parametrize(
    ("point", "shape", "parallelism", "store", "topology"),
    CASES,
    ids=[f"{p}-{s}-p{n}-{st}-{t}" for p, s, n, st, t in CASES],
)
def test_every_input_exactly_once(
    stream_env: Callable[..., Any],
    tmp_path: Path,
    point: str,
    shape: str,
    parallelism: int,
    store: str,
    topology: str,
) -> None:
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    trace = tmp_path / "trace"
    trace.mkdir()
    control = tmp_path / "control.json"
    target = _target(point)
    write_control(control, point=point, target=target, trace_dir=trace)

    env = stream_env(
        parallelism=parallelism,
        **{
            "execution.checkpointing.interval": "100 ms",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "2",
            "restart-strategy.fixed-delay.delay": "200 ms",
        },
    )
    agents_env = FlinkAgentsExecutionEnvironment(env)
    config = agents_env.get_config()
    config.set("e2e.control", str(control))
    config.set("error-handling-strategy", "fail")  # a failed model call fails the run
    if store == "sqlite":
        config.set("durable-execution.store", str(tmp_path / "durable.db"))

    # One source and one map subtask keep each key's inputs in order.
    numbers = env.from_source(
        NumberSequenceSource(0, KEYS * INPUTS - 1), WatermarkStrategy.no_watermarks(), "numbers"
    ).set_parallelism(1)
    make = _record_trickle if shape == "trickle" else _record_ends_early
    records = numbers.map(make, output_type=Types.PICKLED_BYTE_ARRAY()).set_parallelism(1)
    out = (
        agents_env.from_datastream(records, key_selector=lambda r: r["key"])
        .apply(FaultAgent(str(control)))
        .to_datastream()
    )
    if topology == "fused":
        out = out.map(_passed_on)  # fused with the agent operator
    name = f"fault-{point}-{shape}-p{parallelism}-{store}-{topology}"
    with out.execute_and_collect(name) as results:
        outputs = list(results)

    failed_at = float((trace / "failed").read_text())  # it did fail

    # Every input exactly once, in order per key, memory consistent with the outputs.
    pairs = [(o["key"], o["n"]) for o in outputs]
    expected = {(f"k{k}", n) for k in range(KEYS) for n in range(INPUTS)}
    missing = sorted(expected - set(pairs))
    repeated = sorted({p for p in pairs if pairs.count(p) > 1})
    assert not missing and not repeated, f"missing {missing}, repeated {repeated}"
    per_key: dict[str, list[int]] = defaultdict(list)
    for o in outputs:
        per_key[o["key"]].append(o["n"])
        assert o["seen"] == list(range(o["n"] + 1)), o
        assert o["answer"] == f"answer {o['key']}/{o['n']}: found {o['key']}/{o['n']}", o
    assert all(ns == list(range(INPUTS)) for ns in per_key.values()), dict(per_key)

    if store == "no_store":
        return
    # With a store, a call is made again only if it was in flight when the task failed.
    again: list[str] = []
    in_flight = 0
    for (what, call_target, turn), runs in _calls(trace).items():
        done = [r for r in runs if r["end"] is not None]
        assert done, (what, call_target, turn, runs)  # the output needed one that finished
        for run in runs:
            if run is done[-1]:
                continue
            if run["failed"] or run["end"] is None or run["end"] > failed_at - IN_FLIGHT_MARGIN_S:
                in_flight += 1
            else:
                again.append(f"{what} {call_target} turn {turn}")
    print(f"calls in flight at the failure, made again: {in_flight}")
    assert not again, f"recorded calls made again: {again}"


@pytest.mark.parametrize("point", OUTAGE_POINTS)
def test_store_outage_mid_run(stream_env: Callable[..., Any], tmp_path: Path, point: str) -> None:
    import os
    import uuid

    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    trace = tmp_path / "trace"
    trace.mkdir()
    control = tmp_path / "control.json"
    db = str(tmp_path / "durable.db")
    proxy: Any = None
    table = f"fault_outage_{uuid.uuid4().hex[:12]}"
    if point == "store_killed":
        from psycopg.conninfo import conninfo_to_dict

        from tests.runtime.durable._outage_proxy import OutageProxy

        url = os.environ.get("FLINK_AGENTS_TEST_POSTGRES_URL", "")
        if not url:
            pytest.skip("needs FLINK_AGENTS_TEST_POSTGRES_URL (tools/postgres/start.sh)")
        params = conninfo_to_dict(url)
        proxy = OutageProxy(str(params.get("host") or "127.0.0.1"), int(params["port"]))
        store_url = url.replace(f":{params['port']}/", f":{proxy.port}/")  # through the proxy
        extra = {"store_control": proxy.cut_on_signal(STORE_OUTAGE_S)}
    else:
        store_url = db
        extra = {"store": db}
    write_control(control, point=point, target="k1/2", trace_dir=trace, **extra)

    env = stream_env(
        parallelism=2,
        **{
            "execution.checkpointing.interval": "100 ms",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "2",
            "restart-strategy.fixed-delay.delay": "200 ms",
        },
    )
    agents_env = FlinkAgentsExecutionEnvironment(env)
    config = agents_env.get_config()
    config.set("e2e.control", str(control))
    config.set("error-handling-strategy", "fail")
    config.set("durable-execution.store", store_url)
    config.set("durable-execution.store.table", table)
    numbers = env.from_source(
        NumberSequenceSource(0, KEYS * INPUTS - 1), WatermarkStrategy.no_watermarks(), "numbers"
    ).set_parallelism(1)
    records = numbers.map(_record_trickle, output_type=Types.PICKLED_BYTE_ARRAY()).set_parallelism(
        1
    )
    out = (
        agents_env.from_datastream(records, key_selector=lambda r: r["key"])
        .apply(FaultAgent(str(control)))
        .to_datastream()
        .map(_passed_on)
    )
    try:
        with out.execute_and_collect(f"store-outage-{point}") as results:
            outputs = list(results)
    finally:
        set_immutable([db, db + "-wal"], False)
        if proxy is not None:
            proxy.close()
            from tests.runtime.durable.conftest import _drop_table

            _drop_table(url, table)

    assert (trace / "failed").exists()  # the outage happened
    pairs = [(o["key"], o["n"]) for o in outputs]
    expected = {(f"k{k}", n) for k in range(KEYS) for n in range(INPUTS)}
    assert sorted(pairs) == sorted(expected)
    per_key: dict[str, list[int]] = defaultdict(list)
    for o in outputs:
        per_key[o["key"]].append(o["n"])
        assert o["seen"] == list(range(o["n"] + 1)), o
    assert all(ns == list(range(INPUTS)) for ns in per_key.values()), dict(per_key)
    # The task waited for the store: nothing failed, so no call was made twice.
    twice = {call: len(runs) for call, runs in _calls(trace).items() if len(runs) > 1}
    assert not twice, f"calls made more than once: {twice}"
