"""Benchmark of durable-call recording: throughput cost per store and store size with pruning.

Part 0, the Flink job (``--parts flink``): the same agent job on a local mini-cluster (thread
mode, parallelism 1; ``--flink-records`` inputs over ``--flink-keys`` keys, each input one
model call through the built-in chat action, a model of 0 ms and of 50 ms), run with no
store, with `durable-execution.store` on SQLite and on PostgreSQL. Printed: results per
second (first to last output) and the ratio to no store. No REST address here, so no pruning.

Part 1, cost of recording: the same job, in one process run, makes ``--calls`` model-like calls
(an async function that returns a ~1 KB `ChatResult` after a model latency), a number of them in
flight at a time (``--scenario LATENCY_MS:CONCURRENCY``, several allowed): once calling directly
(no store), once through a `DurableCallLog` on SQLite, once on PostgreSQL. Printed: calls per
second and the ratio to no store, and the rate of replaying the same calls from the store.

Part 2, size: ``--runs`` agent runs (default 100,000) over ``--keys`` keys, each run making two
durable calls (a model call and a tool call, as a chat turn with one tool call does), with a
checkpoint every ``--checkpoint-every`` runs that prunes every key up to its last finished
run (what the operator does when a checkpoint completes). Printed: the store's size at the
end and the largest size seen at a checkpoint. SQLite reuses freed pages, so its file stays at
its largest size; PostgreSQL reuses space after autovacuum, so its table holds about one
autovacuum interval (default one minute) of churn.

    python tools/bench/durable.py                       # SQLite; PostgreSQL when the URL is set
    python tools/bench/durable.py --parts flink         # only the Flink job
    python tools/bench/durable.py --postgres-url postgresql://... --runs 100000
    FLINK_AGENTS_TEST_POSTGRES_URL=$(tools/postgres/start.sh) python tools/bench/durable.py

PostgreSQL parts run when ``--postgres-url`` or FLINK_AGENTS_TEST_POSTGRES_URL is given.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from flink_agents.api.chat_result import ChatResult, Usage
from flink_agents.api.message import ChatMessage
from flink_agents.runtime.durable import (
    ActionStateStore,
    DurableCallKey,
    DurableCallLog,
    PostgresActionStateStore,
    SqliteActionStateStore,
)

ANSWER = "The ticket is open and assigned to the on-call engineer. " * 9  # ~0.5 KB


async def model_call(prompt: str, turn: int, latency_s: float) -> ChatResult:
    """Stands in for a chat model call: waits, then answers ~1 KB of result."""
    if latency_s:
        await asyncio.sleep(latency_s)
    return ChatResult(
        message=ChatMessage.assistant(f"{ANSWER} ({prompt}, turn {turn})"),
        model="bench-model",
        response_id=f"resp_{prompt}_{turn}",
        usage=Usage(input_tokens=812, output_tokens=96, total_tokens=908),
        finish_reason="stop",
    )


def tool_call(ticket: str) -> dict[str, Any]:
    """Stands in for a tool: a small JSON result."""
    return {"ticket": ticket, "status": "open", "assignee": "on-call"}


def call_key(run: int, call_index: int = 0, step: int = 0, action: str = "chat") -> DurableCallKey:
    return DurableCallKey(
        agent_key=f"key-{run % 1000}", seq=run, step=step, action=action, call_index=call_index
    )


# -- part 0: the Flink job ---------------------------------------------------------------

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _flink_runtime_bench() -> Any:
    """`tools/bench/flink_runtime.py` (its agent and job pieces), importable by the workers."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if REPO_ROOT not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([REPO_ROOT, *parts])
    if REPO_ROOT not in sys.path:
        sys.path.insert(0, REPO_ROOT)
    return importlib.import_module("tools.bench.flink_runtime")


def _flink_job(
    bench: Any, records: int, keys: int, latency_s: float, store: str | None, table: str | None
) -> float:
    """Results per second of one agent job (first to last output)."""
    from flink_agents.runtime.flink import (
        FlinkAgentsExecutionEnvironment,
        create_stream_execution_environment,
    )

    env = create_stream_execution_environment()
    env.set_parallelism(1)
    env.set_buffer_timeout(bench.BUFFER_TIMEOUT_MS)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    if store is not None:
        agents_env.get_config().set("durable-execution.store", store)
        if table is not None:
            agents_env.get_config().set("durable-execution.store.table", table)
    out: Any = (
        agents_env.from_datastream(
            bench.source(env, records, keys, 0), key_selector=lambda r: r["key"]
        )
        .apply(bench.bench_agent(latency_s), name="bench-agent")
        .to_datastream()
        .map(bench.stamp)
    )
    with out.execute_and_collect("bench-durable") as results:
        outputs = list(results)
    assert len(outputs) == records, (len(outputs), records)
    return float(bench.throughput(outputs))


def flink_part(
    directory: str, postgres_url: str | None, records: int, keys: int, latencies_ms: list[float]
) -> None:
    bench = _flink_runtime_bench()
    from flink_agents.runtime.flink import prepare_flink_environment

    prepare_flink_environment()
    for latency_ms in latencies_ms:
        print(
            f"\n== Flink job (mini-cluster, parallelism 1): {records} inputs over {keys} keys, "
            f"one model call each, model latency {latency_ms:.0f} ms =="
        )
        stores: dict[str, tuple[str | None, str | None]] = {"no store": (None, None)}
        stores["sqlite"] = (f"sqlite:///{directory}/flink-{uuid.uuid4().hex}.sqlite", None)
        if postgres_url:
            stores["postgresql"] = (postgres_url, f"durable_bench_{uuid.uuid4().hex[:10]}")
        base = 0.0
        for name, (url, table) in stores.items():
            rate = _flink_job(bench, records, keys, latency_ms / 1000, url, table)
            base = base or rate
            print(f"{name:<12} {rate:>9.0f} results/s  ratio {rate / base:.3f}")
            if url is not None and table is not None:
                _drop(PostgresActionStateStore(url, table=table))


# -- part 1: throughput --------------------------------------------------------------------


async def _job(calls: int, concurrency: int, latency_s: float, log: DurableCallLog | None) -> float:
    """Seconds for ``calls`` calls, ``concurrency`` in flight at a time."""
    next_call = 0

    async def worker() -> None:
        nonlocal next_call
        while next_call < calls:
            run = next_call
            next_call += 1
            args = (f"input-{run}", 0, latency_s)
            if log is None:
                await model_call(*args)
            else:
                await log.execute(call_key(run), model_call, args, {})

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


def throughput(
    stores: dict[str, Callable[[], ActionStateStore]],
    calls: int,
    concurrency: int,
    latency_s: float,
) -> None:
    print(
        f"\n== recording cost: {calls} calls, {concurrency} in flight, "
        f"model latency {latency_s * 1000:.0f} ms =="
    )
    base_rate = calls / asyncio.run(_job(calls, concurrency, latency_s, None))
    print(f"{'no store':<12} {base_rate:>9.0f} calls/s  ratio 1.000")
    for name, make in stores.items():
        store = make()
        log = DurableCallLog(store, io_threads=min(8, concurrency))
        try:
            live_rate = calls / asyncio.run(_job(calls, concurrency, latency_s, log))
            replay_rate = calls / asyncio.run(_job(calls, concurrency, latency_s, log))
        finally:
            log.close()
            _drop(store)
        print(
            f"{name:<12} {live_rate:>9.0f} calls/s  ratio {live_rate / base_rate:.3f}  "
            f"(replaying them from the store: {replay_rate:.0f} calls/s)"
        )


# -- part 2: size with pruning ---------------------------------------------------------------


def _sync_model_call(prompt: str, turn: int) -> ChatResult:
    return asyncio.run(model_call(prompt, turn, 0.0))


def size_with_pruning(
    name: str,
    store: ActionStateStore,
    size_of: Callable[[], int],
    runs: int,
    keys: int,
    checkpoint_every: int,
) -> None:
    log = DurableCallLog(store)
    next_seq: dict[str, int] = {}
    finished: dict[str, int] = {}
    largest = 0
    started = time.perf_counter()
    for run in range(runs):
        agent_key = f"key-{run % keys}"
        seq = next_seq.get(agent_key, 0)
        next_seq[agent_key] = seq + 1
        model = DurableCallKey(agent_key=agent_key, seq=seq, step=0, action="chat", call_index=0)
        tool = DurableCallKey(agent_key=agent_key, seq=seq, step=1, action="tool", call_index=0)
        log.execute_sync(model, _sync_model_call, (agent_key, 0), {})
        log.execute_sync(tool, tool_call, (f"T-{run}",), {})
        finished[agent_key] = seq
        if (run + 1) % checkpoint_every == 0:
            largest = max(largest, size_of())
            log.prune_many(finished)  # the checkpoint covers every finished run
            finished.clear()
    elapsed = time.perf_counter() - started
    final = size_of()
    log.close()
    print(
        f"{name:<12} {runs} runs in {elapsed:.0f} s ({2 * runs / elapsed:.0f} recorded calls/s); "
        f"size at the end {final / 1e6:.2f} MB, largest at a checkpoint {largest / 1e6:.2f} MB "
        f"(at most {2 * checkpoint_every} of the {2 * runs} records written are held at once)"
    )


# -- plumbing ----------------------------------------------------------------------------------


def _drop(store: ActionStateStore) -> None:
    if isinstance(store, PostgresActionStateStore):
        import psycopg
        from psycopg import sql

        with psycopg.connect(store.conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(store.table)))
    store.close()
    if isinstance(store, SqliteActionStateStore):
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(store.path + suffix)


@contextmanager
def scratch_dir() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="durable-bench-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument(
        "--scenario",
        nargs="+",
        default=["0:1", "0:32", "200:64"],
        help="model latency in ms and calls in flight, as LATENCY:CONCURRENCY",
    )
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--checkpoint-every", type=int, default=1000)
    parser.add_argument("--skip-size", action="store_true")
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=["flink", "calls", "size"],
        default=["flink", "calls", "size"],
        help="which parts to run (default: all)",
    )
    parser.add_argument("--flink-records", type=int, default=4000)
    parser.add_argument("--flink-keys", type=int, default=400)
    parser.add_argument("--flink-latency-ms", nargs="+", type=float, default=[0.0, 50.0])
    parser.add_argument("--dir", default=None, help="directory for the SQLite files")
    parser.add_argument(
        "--postgres-url", default=os.environ.get("FLINK_AGENTS_TEST_POSTGRES_URL") or None
    )
    options = parser.parse_args()

    with scratch_dir() as scratch:
        directory = options.dir or scratch

        def sqlite() -> ActionStateStore:
            return SqliteActionStateStore(os.path.join(directory, f"{uuid.uuid4().hex}.sqlite"))

        def postgres() -> ActionStateStore:
            return PostgresActionStateStore(
                options.postgres_url, table=f"durable_bench_{uuid.uuid4().hex[:10]}"
            )

        stores: dict[str, Callable[[], ActionStateStore]] = {"sqlite": sqlite}
        if options.postgres_url:
            stores["postgresql"] = postgres
        else:
            print("PostgreSQL: skipped (no --postgres-url / FLINK_AGENTS_TEST_POSTGRES_URL)")

        if "flink" in options.parts:
            flink_part(
                directory,
                options.postgres_url,
                options.flink_records,
                options.flink_keys,
                options.flink_latency_ms,
            )

        if "calls" in options.parts:
            for scenario in options.scenario:
                latency_ms, concurrency = scenario.split(":")
                throughput(stores, options.calls, int(concurrency), float(latency_ms) / 1000)

        if options.skip_size or "size" not in options.parts:
            return
        print(
            f"\n== size after {options.runs} runs over {options.keys} keys, 2 calls per run, "
            f"pruned every {options.checkpoint_every} runs =="
        )
        for name, make in stores.items():
            store = make()
            if isinstance(store, SqliteActionStateStore):
                size_of: Callable[[], int] = store.size_bytes
            else:
                assert isinstance(store, PostgresActionStateStore)
                size_of = store.size_bytes
            try:
                size_with_pruning(
                    name, store, size_of, options.runs, options.keys, options.checkpoint_every
                )
            finally:
                _drop(store)


if __name__ == "__main__":
    main()
