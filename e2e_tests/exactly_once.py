"""What the failure tests share: a standalone cluster that restarts its job after a
TaskManager is killed, the kill, and the exactly-once checks of what the job did across it.

- `restarting_cluster`: a `StandaloneCluster` (two slots, a fixed-delay restart strategy,
  the repository on the workers' PYTHONPATH); the test is skipped where Flink's scripts do
  not start.
- `kill_taskmanager`: SIGKILL the TaskManager and wait until it is gone;
  `replace_taskmanager`: that, and a new TaskManager.
- `check_answered_once`: every input answered exactly once, in input order per key, with the
  key's memory consistent with the answers.
- `check_approvals_once`: each approval asked once, each approved refund made once.
- `check_calls_once`: every model request and tool call made once, except the calls in
  flight at the kill (`ToolChatAgent`'s jobs, against the counting `MockModelServer`).
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from e2e_tests.approval_agent import call_id_of
from e2e_tests.conftest import REPO_ROOT

if TYPE_CHECKING:
    from examples.mock_model_server import RecordedRequest
    from tools.flink_cluster.standalone import StandaloneCluster

__all__ = [
    "MARGIN_S",
    "check_answered_once",
    "check_approvals_once",
    "check_calls_once",
    "keyed_inputs",
    "kill_taskmanager",
    "replace_taskmanager",
    "request_identity",
    "restarting_cluster",
]

MARGIN_S = 3.0
"""How long before the kill an answer may have arrived without its outcome being recorded
(recording takes milliseconds, but waits behind other fsynced writes, and for a CPU, under
load)."""


def restarting_cluster(
    flink_prepared: Any,
    folder: Path,
    *,
    env: Mapping[str, str] | None = None,
    options: Mapping[str, str] | None = None,
) -> StandaloneCluster:
    """A two-slot cluster whose jobs restart (up to 20 times, 1 s apart) after a failure;
    ``env`` and ``options`` (Flink's) come on top of that. Skips without Flink's scripts."""
    from tools.flink_cluster.standalone import StandaloneCluster

    if not flink_prepared.scripts_supported:
        pytest.skip(f"Flink's scripts do not start on Java {flink_prepared.major_version}")
    restart = {
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "20",
        "restart-strategy.fixed-delay.delay": "1 s",
    }
    return StandaloneCluster(
        folder,
        slots=2,
        options={**restart, **(options or {})},
        env={"PYTHONPATH": str(REPO_ROOT), **(env or {})},
    )


def kill_taskmanager(cluster: StandaloneCluster) -> float:
    """SIGKILL the TaskManager and wait until it is gone; the time just before the kill."""
    kill_time = time.time()
    killed = cluster.kill_taskmanager(signal.SIGKILL)
    cluster.wait_for(lambda: killed not in cluster.taskmanager_pids(), 10, "the kill")
    return kill_time


def replace_taskmanager(cluster: StandaloneCluster) -> tuple[float, float]:
    """`kill_taskmanager`, then start a new TaskManager: (just before the kill, just after
    the new one registered)."""
    kill_time = kill_taskmanager(cluster)
    cluster.start_taskmanager()
    return kill_time, time.time()


def keyed_inputs(keys: int, records: int) -> set[tuple[str, int]]:
    """(key, n) of the inputs ``i < records``: key ``k{i % keys}``, its ``n``-th input."""
    return {(f"k{i % keys}", i // keys) for i in range(records)}


def check_answered_once(
    outputs: Sequence[Mapping[str, Any]],
    inputs: set[tuple[str, int]],
    files: Iterable[Sequence[Mapping[str, Any]]],
) -> None:
    """Each of ``inputs`` has exactly one output; output ``n`` of a key saw exactly the
    key's inputs ``0..n`` in memory; a key's outputs are in input order in each of ``files``
    (where they were written in order: a committed part file, a topic of one partition)."""
    pairs = Counter((o["key"], o["n"]) for o in outputs)
    missing = sorted(inputs - set(pairs))
    repeated = sorted(p for p, n in pairs.items() if n > 1)
    assert not missing and not repeated, f"missing {missing}, repeated {repeated}"
    assert set(pairs) == inputs, sorted(set(pairs) - inputs)
    for o in outputs:
        assert o["seen"] == list(range(o["n"] + 1)), o
    for lines in files:
        last: dict[str, int] = {}
        for o in lines:
            assert o["n"] > last.get(o["key"], -1), (o, last)
            last[o["key"]] = o["n"]


def check_approvals_once(lines: Sequence[Mapping[str, Any]], trace: Path, keys: int) -> None:
    """The refund approvals of keys ``k0..`` (`approval_agent`): each key's request committed
    once, with its call id, and one reply; each even key's refund approved and made once,
    each odd key's declined and never made; each question asked once (``trace``: the files
    the agent's tools wrote)."""
    all_keys = [f"k{n}" for n in range(keys)]
    requests = sorted((line["request"], line["call_id"]) for line in lines if "request" in line)
    assert requests == sorted((key, call_id_of(key)) for key in all_keys)
    replies = [(line["output"], line["reply"]) for line in lines if "output" in line]
    assert sorted(key for key, _ in replies) == sorted(all_keys)
    for key, reply in replies:
        if int(key[1:]) % 2 == 0:
            assert reply == f"done: refunded {key}"
        else:
            assert reply.startswith("declined: tool 'refund' was not run: a person declined")
    refunds = sorted(p.read_text() for p in trace.glob("refund-*.log"))
    assert refunds == all_keys[::2]
    asked = sorted(p.read_text() for p in trace.glob("ask-*.log"))
    assert asked == sorted(all_keys)


def request_identity(request: RecordedRequest) -> tuple[str, int]:
    """(input, turn): the user message, and how many tool results the request carries."""
    messages = request.body["messages"]
    user = next(str(m["content"]) for m in messages if m["role"] == "user")
    return user, sum(1 for m in messages if m["role"] == "tool")


def _in_flight_at(request: RecordedRequest, kill: tuple[float, float]) -> bool:
    """Sent by the killed TaskManager, and not answered well before the kill.

    ``kill`` is (just before SIGKILL was sent, just after the new TaskManager registered):
    a request the server read before then came from the killed one, even when the server read
    it after the process was gone (its bytes were sent before). The new TaskManager sends
    nothing until its tasks are deployed after registering, and its Python workers have
    started: seconds later. (Its start is no bound: the killed process can be gone, and a new
    one started, before the server reads the killed one's last request.)
    """
    kill_sent, new_registered = kill
    return request.received_at < new_registered and (
        request.replied_at is None or request.replied_at > kill_sent - MARGIN_S
    )


def check_calls_once(
    run: dict[str, Any],
    records_left: int,
    store: str,
    *,
    records: int,
    keys: int,
    pruned: bool = True,
) -> None:
    """The outputs and the calls of a `ToolChatAgent` job killed mid-run (``run``: its
    ``outputs``, committed ``files``, ``committed_before`` the kill, ``kill_time``,
    ``registered_time`` of the new TaskManager, model ``requests`` and ``tools`` calls) for
    ``records`` inputs over ``keys`` keys: each input answered once with the answer built
    from the tool's result, each (input, turn) requested once and each tool called once but
    for the calls in flight at the kill; with ``pruned``, the store's records (``records_left``
    of them) were pruned during the job."""
    kill_time: float = run["kill_time"]
    kill = (kill_time, float(run["registered_time"]))
    assert run["committed_before"] < records  # the kill happened mid-stream
    inputs = keyed_inputs(keys, records)
    check_answered_once(run["outputs"], inputs, run["files"])
    assert all(
        o["answer"] == f"Based on the tool: found {o['key']}/{o['n']}" for o in run["outputs"]
    )

    # The provider got each (input, turn) exactly once, except calls in flight at the kill.
    requests: list[RecordedRequest] = run["requests"]
    by_identity: dict[tuple[str, int], list[RecordedRequest]] = {}
    for request in requests:
        by_identity.setdefault(request_identity(request), []).append(request)
    expected = {(f"{k}/{n}", turn) for k, n in inputs for turn in (0, 1)}
    assert set(by_identity) == expected
    repeated = {i: len(rs) for i, rs in by_identity.items() if len(rs) > 1}
    in_flight = [r for r in requests if _in_flight_at(r, kill)]
    unexplained = {i: n for i, n in repeated.items() if not _in_flight_at(by_identity[i][0], kill)}

    # Tool calls: once per input, except calls made just before the kill.
    tool_calls = Counter(t["query"] for t in run["tools"])
    assert set(tool_calls) == {f"{k}/{n}" for k, n in inputs}
    first_tool_at: dict[str, float] = {}
    for t in run["tools"]:
        first_tool_at.setdefault(t["query"], t["at"])
    tools_repeated = {q: n for q, n in tool_calls.items() if n > 1}
    tools_unexplained = [
        q for q in tools_repeated if not kill_time - MARGIN_S < first_tool_at[q] < kill[1]
    ]

    print(
        f"\n[{store}] {len(requests)} model requests for {len(expected)} distinct (input, turn); "
        f"in flight at the kill: {len(in_flight)}; sent again after the restart "
        f"(in flight, no recorded outcome): {sum(n - 1 for n in repeated.values())} {repeated}; "
        f"tool calls repeated: {tools_repeated}; store records left after pruning: "
        f"{records_left} of {len(requests) + len(run['tools'])} calls"
    )
    timings = {  # seconds after the kill: (request received, answer sent)
        i: [(r.received_at - kill_time, r.replied_at and r.replied_at - kill_time) for r in rs]
        for i, rs in by_identity.items()
        if i in unexplained
    }
    assert not unexplained, f"calls with a recorded outcome were made again: {timings}"
    assert sum(n - 1 for n in repeated.values()) <= len(in_flight)
    assert not tools_unexplained, f"tool calls made again: {tools_unexplained}"
    if pruned:
        assert records_left < len(expected)  # completed checkpoints pruned covered runs
