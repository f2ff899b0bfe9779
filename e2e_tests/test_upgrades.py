"""Stop with a savepoint, change the job, restore: no input lost or answered twice, no call
made twice, and never a silent loss (on the mini-cluster; every restore is a new job).

- An operator added upstream of the agent: the agent's state maps by its stable uid.
- A graceful stop with the SQLite store (stop-with-savepoint, and a cancel restored from a
  retained checkpoint): calls in flight finish and are recorded within
  `durable-execution.stop-grace-s`, so the restored job replays them.
- An action removed while runs wait for it: the restored job fails naming the event (policy
  `fail`), or those inputs become failure records (policy `skip`).
- Rescaling: the agent's parallelism changed at each restore (2 -> 1 -> 3), the savepoints
  taken mid-stream.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_tests.fault_agent import FaultAgent, write_control
from e2e_tests.test_fault_matrix import _calls
from e2e_tests.upgrade_job import AskOnlyAgent, TwoStepAgent
from flink_agents.api.agents.agent import Agent

pytestmark = [pytest.mark.flink, pytest.mark.slow]

KEYS, INPUTS = 4, 30
TRICKLE_S = 0.05


def _record(i: int) -> dict[str, Any]:
    time.sleep(TRICKLE_S)
    return {"key": f"k{i % KEYS}", "n": i // KEYS}


def _line(output: Any) -> str:
    return json.dumps(output)


def _job(
    stream_env: Callable[..., Any],
    agent: Agent,
    output: Path,
    *,
    restore_from: str | None = None,
    added_operator: bool = False,
    config: dict[str, Any] | None = None,
    flink: dict[str, str] | None = None,
    parallelism: int = 2,
    errors: bool = True,
) -> Any:
    """numbers -> records -> [added] -> agent -> outputs (and failure records, unless not
    `errors`) as JSON lines in a checkpointed FileSink; every operator with state or a changed
    graph has a uid. Without `errors` the agent operator has one consumer, the `map` writing
    its outputs, and PyFlink fuses the two into one operator."""
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from e2e_tests.standalone_job import committed_line_sink
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    options = {"execution.checkpointing.interval": "300 ms", "restart-strategy.type": "none"}
    if restore_from is not None:
        options["execution.state-recovery.path"] = restore_from
    options.update(flink or {})
    env = stream_env(parallelism=parallelism, **options)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    for key, value in (config or {}).items():
        agents_env.get_config().set(key, value)
    numbers = env.from_source(
        NumberSequenceSource(0, KEYS * INPUTS - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    records = (
        numbers.uid("numbers")
        .set_parallelism(1)
        .map(_record, output_type=Types.PICKLED_BYTE_ARRAY())
        .uid("records")
        .set_parallelism(1)
    )
    if added_operator:
        records = (
            records.map(lambda r: r, output_type=Types.PICKLED_BYTE_ARRAY())
            .uid("added")
            .set_parallelism(1)
        )
    stream = agents_env.from_datastream(records, key_selector=lambda r: r["key"]).apply(
        agent,
        uid="the-agent",  # the agent class may change across the restore
    )
    outputs = stream.to_datastream().map(_line, output_type=Types.STRING())
    if errors:
        outputs = outputs.union(
            stream.to_error_datastream().map(
                lambda r: json.dumps({"failure": r}), output_type=Types.STRING()
            )
        )
    outputs.sink_to(committed_line_sink(str(output))).uid("sink").set_parallelism(1)
    return env


def _committed(*folders: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for folder in folders
        for part in sorted(folder.rglob("*"))
        if part.is_file() and not part.name.startswith(".")
        for line in part.read_text().splitlines()
        if line
    ]


def _stop_with_savepoint_after(
    env: Any, output: Path | list[Path], savepoints: Path, committed: int, name: str
) -> str:
    """Run the job until `committed` outputs are committed (in `output`, or in all of the
    folders given), then stop it with a savepoint."""
    folders = output if isinstance(output, list) else [output]
    client = env.execute_async(name)
    deadline = time.monotonic() + 120
    while len(_committed(*folders)) < committed:
        assert time.monotonic() < deadline, "no committed outputs"
        time.sleep(0.05)
    # PyFlink 2.3's JobClient.stop_with_savepoint misses the Java method's format argument.
    from pyflink.java_gateway import get_gateway

    canonical = get_gateway().jvm.org.apache.flink.core.execution.SavepointFormatType.CANONICAL
    j_client = client._j_job_client
    return str(j_client.stopWithSavepoint(False, str(savepoints), canonical).get())


def _assert_exactly_once(lines: list[dict[str, Any]]) -> None:
    counts = Counter((o["key"], o["n"]) for o in lines if "failure" not in o)
    expected = {(f"k{k}", n) for k in range(KEYS) for n in range(INPUTS)}
    assert set(counts) == expected, sorted(expected ^ set(counts))
    assert max(counts.values()) == 1, [p for p, c in counts.items() if c > 1]


def _restore_across(
    stream_env: Callable[..., Any],
    tmp_path: Path,
    name: str,
    first: dict[str, Any],
    second: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`FaultAgent` (no failure) in `_job` with `first`'s options, stopped with a savepoint
    once 8 outputs are committed, then `_job` with `second`'s restored from it and run to its
    end: the outputs committed before and after."""
    control = tmp_path / "control.json"
    (tmp_path / "trace").mkdir()
    write_control(control, point="none", target="-", trace_dir=tmp_path / "trace")
    config = {"e2e.control": str(control)}
    out_1, out_2 = tmp_path / "out-1", tmp_path / "out-2"
    env = _job(stream_env, FaultAgent(str(control)), out_1, config=config, **first)
    savepoint = _stop_with_savepoint_after(env, out_1, tmp_path / "sp", 8, f"{name}-1")
    env = _job(
        stream_env,
        FaultAgent(str(control)),
        out_2,
        restore_from=savepoint,
        config=config,
        **second,
    )
    env.execute(f"{name}-2")
    return _committed(out_1), _committed(out_2)


def test_restore_after_adding_an_operator_upstream_of_the_agent(
    stream_env: Callable[..., Any], tmp_path: Path
) -> None:
    before, after = _restore_across(stream_env, tmp_path, "upgrade", {}, {"added_operator": True})
    assert before  # the stop came mid-stream (a restored FileSink may go on in out-1)
    _assert_exactly_once(before + after)
    for o in before + after:
        assert o["seen"] == list(range(o["n"] + 1))  # memory restored with the agent


@pytest.mark.parametrize("fused_first", [False, True], ids=["then_fused", "then_apart"])
def test_restore_when_the_agent_operator_is_fused_on_one_side_only(
    stream_env: Callable[..., Any], tmp_path: Path, fused_first: bool
) -> None:
    """The agent operator fused with the `map` after it (one consumer) on one side of a
    savepoint, and apart from it on the other (the error stream is consumed too, or, as
    before this runtime fused it, Python operator chaining is off): its state maps across by
    the agent's uid, in both directions."""
    apart = {"python.operator-chaining.enabled": "false"}
    before, after = _restore_across(
        stream_env,
        tmp_path,
        "fusion",
        {"errors": not fused_first, "flink": None if fused_first else apart},
        {"errors": fused_first},
    )
    assert before and after
    _assert_exactly_once(before + after)
    for o in before + after:
        assert o["seen"] == list(range(o["n"] + 1))  # memory restored with the agent


@pytest.mark.parametrize("grace_s", [5.0, 0.0], ids=["grace", "no_grace"])
def test_a_graceful_stop_makes_no_call_twice(
    stream_env: Callable[..., Any], tmp_path: Path, grace_s: float
) -> None:
    control = tmp_path / "control.json"
    trace = tmp_path / "trace"
    trace.mkdir()
    write_control(control, point="none", target="-", trace_dir=trace)
    config = {
        "e2e.control": str(control),
        "durable-execution.store": str(tmp_path / "durable.db"),
        "durable-execution.stop-grace-s": grace_s,
    }
    first, second = tmp_path / "out-1", tmp_path / "out-2"
    env = _job(stream_env, FaultAgent(str(control)), first, config=config)
    savepoint = _stop_with_savepoint_after(env, first, tmp_path / "sp", 6, "graceful-1")
    stopped_at = time.time()
    env = _job(stream_env, FaultAgent(str(control)), second, restore_from=savepoint, config=config)
    env.execute("graceful-2")
    _assert_exactly_once(_committed(first) + _committed(second))
    repeated = {call: len(runs) - 1 for call, runs in _calls(trace).items() if len(runs) > 1}
    in_flight_at_stop = sum(
        1
        for runs in _calls(trace).values()
        for run in runs
        if run["start"] < stopped_at and (run["end"] is None or run["end"] > stopped_at - 1.0)
    )
    print(
        f"grace {grace_s} s: {len(repeated)} call(s) made twice; {in_flight_at_stop} near the stop"
    )
    if grace_s > 0:
        assert not repeated, repeated


def test_rescaling_at_each_restore_keeps_every_output_once(
    stream_env: Callable[..., Any], tmp_path: Path
) -> None:
    """2 -> 1 -> 3 subtasks, each change at a restore from a savepoint taken mid-stream (a
    run takes about 120 ms of model and tool calls, an input comes every 50 ms: runs are in
    flight): every input answered once, each key's memory with it, no call made twice (the
    durable store, with the default grace)."""
    control = tmp_path / "control.json"
    trace = tmp_path / "trace"
    trace.mkdir()
    write_control(control, point="none", target="-", trace_dir=trace)
    config = {"e2e.control": str(control), "durable-execution.store": str(tmp_path / "d.db")}
    folders = [tmp_path / f"out-{p}" for p in (1, 2, 3)]
    # A restored FileSink goes on writing to its first folder: count all of them.
    savepoint: str | None = None
    for job, parallelism in enumerate((2, 1, 3)):
        env = _job(
            stream_env,
            FaultAgent(str(control)),
            folders[job],
            restore_from=savepoint,
            config=config,
            parallelism=parallelism,
        )
        if job == 2:
            env.execute("rescale-3")
            break
        target = len(_committed(*folders)) + 8
        savepoint = _stop_with_savepoint_after(
            env, folders, tmp_path / f"sp-{job}", target, f"rescale-{job + 1}"
        )
        assert len(_committed(*folders)) < KEYS * INPUTS, "inputs left for the next job"
    lines = _committed(*folders)
    _assert_exactly_once(lines)
    for o in lines:
        assert o["seen"] == list(range(o["n"] + 1))  # the key's memory moved with it
    repeated = {call: len(runs) - 1 for call, runs in _calls(trace).items() if len(runs) > 1}
    assert not repeated, repeated


# ---------------------------------------------------------------- an action removed


@pytest.mark.parametrize("policy", ["fail", "skip"])
def test_restore_after_removing_an_action_runs_wait_for_is_never_silent(
    stream_env: Callable[..., Any], tmp_path: Path, policy: str
) -> None:
    config = {"input-failure.policy": policy}
    first, second = tmp_path / "out-1", tmp_path / "out-2"
    env = _job(stream_env, TwoStepAgent(), first, config=config)
    savepoint = _stop_with_savepoint_after(env, first, tmp_path / "sp", 4, "removed-1")
    env = _job(stream_env, AskOnlyAgent(), second, restore_from=savepoint, config=config)
    if policy == "fail":
        with pytest.raises(Exception, match="pending 'finish_me' event that no action"):
            env.execute("removed-2")
        return
    env.execute("removed-2")
    lines = _committed(first) + _committed(second)
    failures = [o["failure"] for o in lines if "failure" in o]
    assert failures, "runs waiting for the removed action at the stop"
    assert {f["event_type"] for f in failures} == {"finish_me"}
    assert {f["error_type"] for f in failures} == {"UnhandledEventError"}
    answered = [o for o in lines if "failure" not in o]
    assert len({(o["key"], o["n"]) for o in answered}) == len(answered)  # none twice


@pytest.mark.parametrize("grace_s", [5.0, 0.0], ids=["grace", "no_grace"])
def test_a_cancel_then_restore_from_a_retained_checkpoint(
    stream_env: Callable[..., Any], tmp_path: Path, grace_s: float
) -> None:
    """Cancel (no savepoint), then restore from the latest retained checkpoint: every input
    once; calls in flight at the cancel finish within the grace and are replayed (printed
    without the grace)."""
    control = tmp_path / "control.json"
    trace = tmp_path / "trace"
    trace.mkdir()
    write_control(control, point="none", target="-", trace_dir=trace)
    checkpoints = tmp_path / "checkpoints"
    config = {
        "e2e.control": str(control),
        "durable-execution.store": str(tmp_path / "durable.db"),
        "durable-execution.stop-grace-s": grace_s,
    }
    first, second = tmp_path / "out-1", tmp_path / "out-2"
    env = _job(
        stream_env,
        FaultAgent(str(control)),
        first,
        config=config,
        flink={
            "execution.checkpointing.dir": f"file://{checkpoints}",
            "execution.checkpointing.externalized-checkpoint-retention": ("RETAIN_ON_CANCELLATION"),
        },
    )
    client = env.execute_async("cancel-1")
    deadline = time.monotonic() + 120
    while len(_committed(first)) < 6:
        assert time.monotonic() < deadline, "no committed outputs"
        time.sleep(0.05)
    client.cancel().result()
    cancelled_at = time.time()
    time.sleep(1.0)
    retained = sorted(checkpoints.rglob("chk-*"), key=lambda p: int(p.name.split("-")[1]))
    assert retained, "a retained checkpoint"
    env = _job(
        stream_env,
        FaultAgent(str(control)),
        second,
        restore_from=str(retained[-1]),
        config=config,
    )
    env.execute("cancel-2")
    _assert_exactly_once(_committed(first) + _committed(second))
    repeated = {call: len(runs) - 1 for call, runs in _calls(trace).items() if len(runs) > 1}
    near = sum(
        1
        for runs in _calls(trace).values()
        for run in runs
        if run["start"] < cancelled_at and (run["end"] is None or run["end"] > cancelled_at - 1)
    )
    print(f"cancel, grace {grace_s} s: {len(repeated)} call(s) made twice; {near} near the cancel")
    if grace_s > 0:
        assert not repeated, repeated
