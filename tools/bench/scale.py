"""Scale benchmark: many keys each waiting on a slow model at once, on the mini-cluster.

`--keys` keys (default 20,000), one input each, arriving as fast as the source gives them;
the agent's one chat call takes `--latency-s` (default 2 s: `FunctionChatModelConnection`'s
`latency`, an asyncio sleep, so a waiting run holds no thread). Mini-cluster, thread mode,
parallelism `--parallelism` (default 2), checkpoints every `--checkpoint-ms` to a folder
under a temp dir, the REST API on a free port. The source stays open after the last input
until every input is answered (`--hold-s`: a fixed time; 0: the input ends at once).

Lines (`--lines`, each in a child process with a JVM of its own, after a 500-key warm-up
job, printed side by side): NAME[@LATENCY_S][+FIX...]

- `read`: the same source, map and `key_by` into a trivial keyed function (no agent): how
  fast the input can be read at all; `read+state`: the function makes the keyed-state and
  timer calls the agent operator makes for an input whose run waits (`_trivial_function`),
  and none of its Python work;
- `tuned`: run slots for every key: `max-in-flight-runs` and the operator's
  `AgentOperatorOptions(max_in_flight, max_buffered)` above the number of keys;
- `config`: only the agent option `max-in-flight-runs` (what `config.yaml` can set); the
  operator's `max_buffered` stays at its default 10,000;
- `defaults`: nothing set (runs in flight bounded by `max-in-flight-runs-bytes`, 256 MiB
  per subtask, about 16,000 such runs; 32,768 buffered inputs per subtask);
- `@30`: a model of 30 s for that line; fixes: see `LineSpec` (`+tool`: half of the keys
  make a tool round trip).

With `--ideal-keys 10` every line also runs with 10 keys, and each agent line's job time
(start-up included) is set against the 10-key job's plus the extra time the read line's job
takes for all the keys (issue 30's measure: at most 1.25 x).

Per agent line:

- wall time from the first input read to the last output (both stamped in the job) against
  the ideal, the time the job took to read its input + the model latency (the issue's
  target: at least 0.8), against the read time of the `read` line, and against the time
  the agent took to take the inputs in (its first action ran);
- the most runs waiting at once (taken in, not answered);
- memory: the JVM's RSS (thread mode: the Python workers run inside it) and heap, sampled
  every 100 ms; per waiting run, as the slope over the runs waiting while they were taken
  in (the mini-cluster's fixed cost falls out); the JVM's CPU while every run only waits;
- checkpoints from the REST API (`/jobs/<id>/checkpoints` and their details): when, how
  long, the keys and the waiting runs when the agent operator took its snapshot, the state
  size (the agent operator's), and the checkpoint folder's size on disk;
- with `--trace`: every callback of the operator and every Python collection in the worker.

Before the Flink lines (skip with `--no-probe`) the same operator code runs in this process
without Flink (`KeyedRuns`, `RunScheduler`, `LoopThread`, `AgentEngine`, keyed state and
timers in dicts), with `--keys / --parallelism` keys waiting at once: the Python memory per
waiting run (tracemalloc, and this process's RSS), the JSON the operator keeps in keyed
state per waiting key (key record, input, run snapshot), and the timers it registers.

    python tools/bench/scale.py --keys 2000 --lines read,tuned --lock /tmp/flink.lock
    python tools/bench/scale.py --lines read,tuned,tuned+gc,config,defaults,tuned@30 \
        --trace --lock /tmp/flink.lock
    python tools/bench/scale.py --lines read,defaults+tool --ideal-keys 10 --no-probe \
        --lock /tmp/flink.lock
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import dataclasses
import gc
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.content_blocks import ToolCallBlock
from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, OutputEvent
from flink_agents.api.message import ChatMessage, MessageRole
from flink_agents.api.runner_context import RunnerContext

BUFFER_TIMEOUT_MS = 5
"""Network buffers are flushed after this long (as in `flink_runtime.py`)."""
SAMPLE_S = 0.1
"""How often the JVM's memory is sampled."""
REST_POLL_S = 0.25
"""How often the checkpoint statistics are read."""

# ------------------------------------------------------------------ the agent


def echo_model(messages: list[ChatMessage], tools: Any) -> str:
    return messages[-1].text


def _ask(event: Event, ctx: RunnerContext, text: str) -> None:
    ctx.sensory_memory["record"] = event.attributes["input"]
    ctx.sensory_memory["started"] = time.time()  # the operator took the input in
    ctx.send_event(ChatRequestEvent(model="bench_model", messages=[ChatMessage.user(text)]))


async def ask(event: Event, ctx: RunnerContext) -> None:
    _ask(event, ctx, event.attributes["input"]["key"])


async def ask_half_with_tool(event: Event, ctx: RunnerContext) -> None:
    """Keys of even number ask for the lookup tool first (`tool_model`)."""
    key = event.attributes["input"]["key"]
    _ask(event, ctx, f"tool:{key}" if int(key[1:]) % 2 == 0 else key)


def lookup(ticket: str) -> str:
    """Look a ticket up.

    Args:
        ticket: The ticket id.
    """
    return f"ticket {ticket} is open"


def tool_model(messages: list[ChatMessage], tools: Any) -> ChatMessage | str:
    """Asks for the lookup tool when the question says so, then answers with the key;
    else echoes the question (the key)."""
    first, last = messages[0], messages[-1]
    if last.role is MessageRole.USER and last.text.startswith("tool:"):
        call = ToolCallBlock(id="call_1", name="lookup", input={"ticket": last.text[5:]})
        return ChatMessage.assistant("Looking it up.", tool_calls=[call])
    if last.role is MessageRole.TOOL:
        return first.text[5:]
    return last.text


async def answer(event: Event, ctx: RunnerContext) -> None:
    assert isinstance(event, ChatResponseEvent)
    record = dict(ctx.sensory_memory["record"])
    record["started"] = ctx.sensory_memory["started"]
    record["answer"] = event.response.text if event.response is not None else None
    ctx.send_event(OutputEvent(output=record))


def scale_agent(
    latency_s: float,
    adaptive_limit: bool = False,
    max_concurrent_requests: int | None = None,
    half_with_tool: bool = False,
) -> Agent:
    """One chat call per input, answered after `latency_s`; the output is the input record
    with the answer (the key echoed back). `adaptive_limit`: the connection's adaptive
    concurrency limit on, as on a real provider's connection (off on a function model);
    `max_concurrent_requests`: the connection's fixed concurrency; `half_with_tool`: half
    of the keys make a tool round trip first (a plain `def` tool between two model calls;
    `lookup` is defined here, so it ships by value with this script's functions)."""
    from flink_runtime import chat_agent  # the other benches' builder (this folder)

    return chat_agent(
        ask_half_with_tool if half_with_tool else ask,
        answer,
        tool_model if half_with_tool else echo_model,
        tools=(lookup,) if half_with_tool else (),
        latency=latency_s,
        adaptive_limit=adaptive_limit,
        max_concurrent_requests=max_concurrent_requests,
    )


def make_record(i: int) -> dict[str, Any]:
    """Input i: its own key, stamped when it is read."""
    return {"key": f"k{i}", "n": 0, "arrived": time.time()}


def stamp(record: dict[str, Any]) -> dict[str, Any]:
    record["out"] = time.time()
    return record


# ------------------------------------------------------------------ the probe (no Flink)


class _Slices:
    """Keyed state and timers of one subtask in dicts (what `KeyedRuns` writes)."""

    def __init__(self) -> None:
        self.records: dict[str, str] = {}
        self.inputs: dict[str, dict[int, str]] = {}
        self.runs: dict[str, str] = {}
        self.poll_timers = 0
        self.end_timers = 0


class _KeyState:
    def __init__(self, slices: _Slices, key: str) -> None:
        self._s, self._k = slices, key

    def read_record(self) -> str | None:
        return self._s.records.get(self._k)

    def write_record(self, data: str) -> None:
        self._s.records[self._k] = data

    def get_input(self, position: int) -> str | None:
        return self._s.inputs.get(self._k, {}).get(position)

    def put_input(self, position: int, data: str) -> None:
        self._s.inputs.setdefault(self._k, {})[position] = data

    def remove_input(self, position: int) -> None:
        self._s.inputs.get(self._k, {}).pop(position, None)

    def read_run(self) -> str | None:
        return self._s.runs.get(self._k)

    def write_run(self, data: str | None) -> None:
        if data is None:
            self._s.runs.pop(self._k, None)
        else:
            self._s.runs[self._k] = data


class _Timers:
    def __init__(self, slices: _Slices) -> None:
        self._s = slices

    def now(self) -> int:
        return int(time.time() * 1000)

    def register_poll(self, timestamp: int) -> None:
        self._s.poll_timers += 1

    def delete_poll(self, timestamp: int) -> None:
        pass

    def register_end_of_input(self) -> None:
        self._s.end_timers += 1


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_kb(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


@dataclass
class ProbeResult:
    keys: int
    python_bytes_per_run: float
    rss_bytes_per_run: float
    record_json: float
    input_json: float
    run_json_in_state: float
    run_json_if_written: float
    key_state_json: float
    poll_timers: int
    end_timers: int


def _waiting_keys(keys: int, traced: bool) -> tuple[int, _Slices, int]:
    """`keys` inputs into a subtask's operator code with a model that never answers in
    time; returns (bytes allocated or RSS growth, the state, a waiting run's JSON size)."""
    from flink_agents.runtime.agent_engine import AgentEngine
    from flink_agents.runtime.flink.keyed_runs import KeyedRuns
    from flink_agents.runtime.flink.loop_thread import LoopThread
    from flink_agents.runtime.flink.operator import AgentOperatorOptions
    from flink_agents.runtime.keys import encode_key
    from flink_agents.runtime.scheduler import RunScheduler

    options = AgentOperatorOptions(max_in_flight=keys + 1, max_buffered=keys + 2)
    engine = AgentEngine(scale_agent(3600.0))
    loop_thread = LoopThread("scale-probe", inline=options.inline_runs)
    loop_thread.start()
    scheduler = RunScheduler(
        engine,
        max_in_flight=options.max_in_flight,
        max_buffered=options.max_buffered,
        snapshot_after_s=options.snapshot_after_ms / 1000.0,
        launch=loop_thread.launch,
    )
    runs = KeyedRuns(engine, scheduler, options.poll, max_cached_keys=options.max_cached_keys)
    slices = _Slices()
    timers = _Timers(slices)
    try:
        # One key first: resources built, modules imported, caches filled.
        warm = encode_key("warm")
        runs.on_input(warm, make_record(-1), _KeyState(slices, warm), timers)
        deadline = time.monotonic() + 30
        while scheduler.running < 1:
            if time.monotonic() > deadline:
                raise TimeoutError("the probe's first run did not start")
            time.sleep(0.01)
        gc.collect()
        if traced:
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
        else:
            before = _rss_kb() * 1024
        for i in range(keys):
            key = encode_key(f"k{i}")
            runs.on_input(key, make_record(i), _KeyState(slices, key), timers)
        deadline = time.monotonic() + 120
        while scheduler.running < keys + 1:  # every run is in its model call
            if time.monotonic() > deadline:
                raise TimeoutError(f"{scheduler.running - 1} of {keys} probe runs started")
            time.sleep(0.01)
        gc.collect()
        if traced:
            grown = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
        else:
            grown = _rss_kb() * 1024 - before
        queue = scheduler.get(encode_key("k0"))
        assert queue is not None and queue.run is not None
        live_run = engine.dump_run(queue.run)
        return grown, slices, len(live_run)
    finally:
        loop_thread.close(before_stop=scheduler.cancel)
        engine.close()


def probe(keys: int) -> ProbeResult:
    """What the operator keeps per waiting run, measured in this process."""
    rss_grown, _, _ = _waiting_keys(keys, traced=False)
    traced_grown, slices, live_run = _waiting_keys(keys, traced=True)
    waiting = [k for k in slices.records if k != '"warm"']

    def mean(values: list[int]) -> float:
        return statistics.fmean(values) if values else 0.0

    return ProbeResult(
        keys=keys,
        python_bytes_per_run=traced_grown / keys,
        rss_bytes_per_run=rss_grown / keys,
        record_json=mean([len(slices.records[k]) for k in waiting]),
        input_json=mean([sum(len(v) for v in slices.inputs.get(k, {}).values()) for k in waiting]),
        run_json_in_state=mean([len(slices.runs.get(k, "")) for k in waiting]),
        run_json_if_written=float(live_run),
        key_state_json=mean(
            [len(json.dumps(json.loads(slices.records[k])["key_state"])) for k in waiting]
        ),
        poll_timers=slices.poll_timers,
        end_timers=slices.end_timers,
    )


# ------------------------------------------------------------------ tracing (--trace)

_TRACE: list[tuple[int, str, float, float, int]] = []
"""In the worker: (thread id, callback, start epoch s, seconds, outputs) per callback."""


def _traced(kind: str, method: Any) -> Any:
    def wrapper(self: Any, *args: Any) -> Any:
        start = time.time()
        begun = time.perf_counter()
        outputs = method(self, *args)
        if not isinstance(outputs, list):  # the end-of-input drain yields as runs finish
            return _traced_drain(kind, start, begun, outputs)
        _TRACE.append(
            (threading.get_ident(), kind, start, time.perf_counter() - begun, len(outputs))
        )
        return outputs

    wrapper.traced = True  # type: ignore[attr-defined]
    return wrapper


def _traced_drain(kind: str, start: float, begun: float, drain: Any) -> Any:
    """Yields what `drain` yields; traced as one callback once it is over."""
    count = 0
    for outputs in drain:
        count += len(outputs)
        yield outputs
    _TRACE.append((threading.get_ident(), kind, start, time.perf_counter() - begun, count))


def _gc_recorder() -> Any:
    """A `gc.callbacks` entry recording each collection as a callback of kind gc<gen>."""
    started = [0.0, 0.0]

    def record(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0], started[1] = time.time(), time.perf_counter()
        else:
            took = time.perf_counter() - started[1]
            _TRACE.append((threading.get_ident(), f"gc{info['generation']}", started[0], took, 0))

    record.traced = True  # type: ignore[attr-defined]
    return record


class BenchEngineFactory:
    """The bench's hooks in the worker, around the agent's engine factory `inner`:

    - `trace_dir`: time every callback of the operator (`KeyedRuns.on_input`, `on_poll`,
      `on_end_of_input`, patched once per interpreter) and every Python garbage collection,
      and write them there when an engine closes (the operator's close);
    - `gc_prototype`: a fix tried without changing the runtime: no automatic full
      collections in the worker's interpreter (`gc.set_threshold(700, 10, 1_000_000)`;
      young collections as before);
    - `switch_s`: the interpreter's switch interval (`sys.setswitchinterval`; the `switch`
      fix tries 0.5 ms), or None to leave Python's own.
    """

    def __init__(
        self, inner: Any, trace_dir: str | None, gc_prototype: bool, switch_s: float | None = None
    ) -> None:
        self.inner = inner
        self.trace_dir = trace_dir
        self.gc_prototype = gc_prototype
        self.switch_s = switch_s

    def __call__(self, context: Any) -> Any:
        import gc
        import sys

        if self.switch_s is not None:
            sys.setswitchinterval(self.switch_s)

        from flink_agents.runtime.flink.keyed_runs import KeyedRuns

        # The interpreter outlives the job (thread mode): set it either way every time.
        gc.set_threshold(700, 10, 1_000_000 if self.gc_prototype else 10)
        engine = self.inner(context)
        if self.trace_dir is None:
            return engine
        for name, kind in (("on_input", "input"), ("on_poll", "poll"), ("on_end_of_input", "end")):
            method = getattr(KeyedRuns, name)
            if not getattr(method, "traced", False):
                setattr(KeyedRuns, name, _traced(kind, method))
        if not any(getattr(c, "traced", False) for c in gc.callbacks):
            gc.callbacks.append(_gc_recorder())
        path = Path(self.trace_dir) / "callbacks.json"
        if not any(t.name == "scale-trace-writer" for t in threading.enumerate()):
            # Written every second: PyFlink may drop the operator without `close`.
            threading.Thread(
                target=_write_trace_every_second,
                args=(path,),
                name="scale-trace-writer",
                daemon=True,
            ).start()
        close = engine.close

        def close_and_write() -> None:
            _write_trace(path)
            close()

        engine.close = close_and_write
        return engine


def _write_trace(path: Path) -> None:
    part = path.with_suffix(".part")
    part.write_text(json.dumps(list(_TRACE)))
    part.replace(path)


def _write_trace_every_second(path: Path) -> None:
    while True:
        time.sleep(1.0)
        _write_trace(path)


# ------------------------------------------------------------------ sampling the job


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=2) as response:
        return json.loads(response.read())


def _dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
    return total


@dataclass
class Checkpoint:
    id: int
    status: str
    trigger_s: float
    """Trigger time, epoch seconds."""
    duration_ms: int
    state_bytes: int
    agent_state_bytes: int | None
    agent_ack_s: float | None = None
    """When the last agent subtask acknowledged it (its snapshot), epoch seconds."""
    failure: str | None = None
    disk_bytes: int | None = None


@dataclass
class Samples:
    memory: list[tuple[float, int, int]] = field(default_factory=list)
    """(epoch s, JVM RSS bytes, JVM heap used bytes)."""
    cpu: list[tuple[float, float]] = field(default_factory=list)
    """(epoch s, CPU seconds the JVM used so far)."""
    checkpoints: dict[int, Checkpoint] = field(default_factory=dict)
    disk: dict[int, int] = field(default_factory=dict)
    """Largest size seen of each completed checkpoint's folder."""
    errors: list[str] = field(default_factory=list)


class JobSampler(threading.Thread):
    """Samples the JVM's memory, the job's checkpoint statistics and their folders while a
    job runs (on its own thread; py4j calls from here use their own connection)."""

    def __init__(self, jvm_pid: int, rest_url: str, checkpoint_dir: Path, agent_name: str):
        super().__init__(name="scale-sampler", daemon=True)
        from pyflink.java_gateway import get_gateway

        jvm: Any = get_gateway().jvm
        self._memory_bean = jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
        self._pid = jvm_pid
        self._rest = rest_url
        self._checkpoint_dir = checkpoint_dir
        self._agent_name = agent_name
        self._stop_event = threading.Event()
        self._job_id: str | None = None
        self._agent_vertex: str | None = None
        self.samples = Samples()

    def stop(self) -> Samples:
        self._stop_event.set()
        self.join(10)
        return self.samples

    def run(self) -> None:
        next_rest = 0.0
        while not self._stop_event.is_set():
            now = time.time()
            heap = int(self._memory_bean.getHeapMemoryUsage().getUsed())
            self.samples.memory.append((now, _rss_kb(self._pid) * 1024, heap))
            self.samples.cpu.append((now, _cpu_s(self._pid)))
            if now >= next_rest:
                next_rest = now + REST_POLL_S
                try:
                    self._read_checkpoints()
                except Exception as exc:  # the REST API comes up with the job
                    if len(self.samples.errors) < 5:
                        self.samples.errors.append(f"{type(exc).__name__}: {exc}")
                self._read_disk()
            self._stop_event.wait(SAMPLE_S)

    def _read_disk(self) -> None:
        for chk in self._checkpoint_dir.glob("*/chk-*"):
            if (chk / "_metadata").exists():
                cid = int(chk.name.split("-")[1])
                size = _dir_bytes(chk)
                self.samples.disk[cid] = max(size, self.samples.disk.get(cid, 0))

    def _read_checkpoints(self) -> None:
        if self._job_id is None:
            jobs = _get(f"{self._rest}/jobs/overview")["jobs"]
            running = [j for j in jobs if j["state"] == "RUNNING"]
            if not running:
                return
            self._job_id = running[0]["jid"]
            vertices = _get(f"{self._rest}/jobs/{self._job_id}")["vertices"]
            for v in vertices:
                if self._agent_name in v["name"]:
                    self._agent_vertex = v["id"]
        stats = _get(f"{self._rest}/jobs/{self._job_id}/checkpoints")
        for entry in stats.get("history", []):
            cid = int(entry["id"])
            known = self.samples.checkpoints.get(cid)
            if known is not None and known.status != "IN_PROGRESS":
                continue
            agent_bytes = agent_ack = None
            if entry["status"] == "COMPLETED" and self._agent_vertex is not None:
                details = _get(f"{self._rest}/jobs/{self._job_id}/checkpoints/details/{cid}")
                task = details.get("tasks", {}).get(self._agent_vertex)
                if task is not None:
                    agent_bytes = int(task.get("state_size", 0))
                    agent_ack = task.get("latest_ack_timestamp", 0) / 1000.0 or None
            self.samples.checkpoints[cid] = Checkpoint(
                id=cid,
                status=entry["status"],
                trigger_s=entry["trigger_timestamp"] / 1000.0,
                duration_ms=int(entry.get("end_to_end_duration", 0)),
                state_bytes=int(entry.get("state_size", 0)),
                agent_state_bytes=agent_bytes,
                agent_ack_s=agent_ack,
                failure=entry.get("failure_message"),
            )


# ------------------------------------------------------------------ the jobs


@dataclass
class LineResult:
    name: str
    keys: int
    latency_s: float
    outputs: list[dict[str, Any]]
    samples: Samples
    rss_before: int
    heap_before: int
    job_s: float
    slots: str
    trace: list[tuple[int, str, float, float, int]] | None = None
    """The operator's callbacks (`--trace`)."""

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> LineResult:
        data = json.loads(text)
        samples = data.pop("samples")
        checkpoints = {int(k): Checkpoint(**v) for k, v in samples["checkpoints"].items()}
        data["samples"] = Samples(
            memory=[tuple(m) for m in samples["memory"]],  # type: ignore[misc]
            checkpoints=checkpoints,
            disk={int(k): v for k, v in samples["disk"].items()},
            errors=samples["errors"],
            cpu=[tuple(c) for c in samples["cpu"]],  # type: ignore[misc]
        )
        if data["trace"] is not None:
            data["trace"] = [tuple(t) for t in data["trace"]]
        return cls(**data)


def _environment(
    parallelism: int, checkpoint_ms: int, checkpoint_dir: Path, port: int, unaligned: bool
) -> Any:
    from flink_agents.runtime.flink import create_stream_execution_environment

    options: dict[str, Any] = {
        "rest.port": port,
        "rest.address": "127.0.0.1",
        "rest.cache.checkpoint-statistics.timeout": "100 ms",
    }
    if checkpoint_ms > 0:  # 0: no checkpoints
        options["execution.checkpointing.interval"] = f"{checkpoint_ms} ms"
        options["execution.checkpointing.dir"] = checkpoint_dir.as_uri()
        options["execution.checkpointing.num-retained"] = 1000
        if unaligned:
            options["execution.checkpointing.unaligned.enabled"] = "true"
    env = create_stream_execution_environment(options)
    env.set_parallelism(parallelism)
    env.set_buffer_timeout(BUFFER_TIMEOUT_MS)
    return env


HOLD_STEP_S = 0.1
"""How long each number after the inputs holds the source open at most (between numbers
the source task takes checkpoint barriers)."""
HOLD_MAX_S = 600.0
"""The longest the source is held open waiting for the answers."""


class Holding:
    """Turns number i into input i; numbers from `keys` on are not inputs: each sleeps
    `HOLD_STEP_S` unless `stop_file` exists, and is dropped, so the source stays open after
    the last input (as a stream does: no end of input while the runs wait)."""

    def __init__(self, keys: int, stop_file: str | None) -> None:
        self.keys = keys
        self.stop_file = stop_file

    def __call__(self, i: int) -> dict[str, Any] | None:
        if i < self.keys:
            return make_record(i)
        if self.stop_file is None or not os.path.exists(self.stop_file):
            time.sleep(HOLD_STEP_S)
        return None


def _is_input(record: dict[str, Any] | None) -> bool:
    return record is not None


def _source(env: Any, keys: int, hold_s: float, stop_file: str | None = None) -> Any:
    from pyflink.common import WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    # The sequence is split into one range per source subtask; the holding numbers come
    # last in the last range.
    last = keys - 1 + math.ceil(hold_s / HOLD_STEP_S)
    numbers = env.from_source(
        NumberSequenceSource(0, last), WatermarkStrategy.no_watermarks(), "numbers"
    )
    return numbers.map(Holding(keys, stop_file)).filter(_is_input)


def _trivial_function(state: bool = False) -> Any:
    """The `read` line's keyed function: a count per key, or with ``state`` (`read+state`)
    the Java round trips the agent operator makes for an input whose run waits, and none of
    its Python work: on the input, the current key, a read and a write of the key record, the
    input put in a map, the end-of-input and poll timers registered; on the poll (1 ms later),
    the key record read and written, the input read and removed from the map."""
    from pyflink.common import Types
    from pyflink.datastream import KeyedProcessFunction, RuntimeContext, TimeDomain
    from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

    from flink_agents.runtime.flink.keyed_runs import END_OF_INPUT_TIMER

    class CountPerKey(KeyedProcessFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, value: dict[str, Any], ctx: Any) -> Any:
            count = (self.count.value() or 0) + 1
            self.count.update(count)
            yield value

    class OperatorStateCalls(KeyedProcessFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            self.record = runtime_context.get_state(ValueStateDescriptor("key", Types.STRING()))
            self.inputs = runtime_context.get_map_state(
                MapStateDescriptor("inputs", Types.LONG(), Types.STRING())
            )

        def process_element(self, value: dict[str, Any], ctx: Any) -> Any:
            ctx.get_current_key()
            self.record.value()
            self.inputs.put(0, json.dumps(value))
            self.record.update('{"head":0,"tail":1}')
            timers = ctx.timer_service()
            timers.register_event_time_timer(END_OF_INPUT_TIMER)
            timers.register_processing_time_timer(int(time.time() * 1000) + 1)
            yield value

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            self.record.value()
            if ctx.time_domain() == TimeDomain.PROCESSING_TIME:
                ctx.get_current_key()
                self.inputs.get(0)
                self.inputs.remove(0)
                self.record.update('{"head":1,"tail":1}')
            return iter(())

    return OperatorStateCalls() if state else CountPerKey()


def _jvm() -> tuple[int, Any]:
    from pyflink.java_gateway import get_gateway

    jvm: Any = get_gateway().jvm
    return int(jvm.java.lang.ProcessHandle.current().pid()), jvm


_FIXES = ("gc", "cache", "poll5s", "adaptive", "fixed", "tool", "count1000", "state", "switch")


@dataclass(frozen=True)
class LineSpec:
    """A line of `--lines`: NAME[@LATENCY_S][+FIX...], e.g. `tuned`, `tuned+gc`,
    `tuned@30`, `tuned+gc+cache`. Fixes: `gc`, the GC prototype (`BenchEngineFactory`);
    `cache`, `AgentOperatorOptions.max_cached_keys` above the keys; `poll5s`, a busy key
    looked at every 5 s at most (`PollPolicy.max_interval_ms`, default 1 s), these two on
    the tuned line only; `adaptive`, the model connection's adaptive limit on (the default
    of a real provider's connection); `fixed`, its `max_concurrent_requests` at the number
    of keys (a fixed limit: no slow start); `tool`, half of the keys make a tool round
    trip (two model calls and a plain `def` tool); `count1000`, the defaults before runs
    were bounded by memory (`max-in-flight-runs: 1000`, `max-buffered-inputs: 10000`);
    `state`, on the read line only: the agent operator's keyed-state and timer calls;
    `switch`, the worker interpreter's switch interval at 0.5 ms (Python's default: 5 ms)."""

    name: str
    latency_s: float
    fixes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, latency_s: float) -> LineSpec:
        name, *fixes = text.split("+")
        name, _, latency = name.partition("@")
        if name not in ("read", "tuned", "config", "defaults") or set(fixes) - set(_FIXES):
            raise ValueError(f"unknown line {text!r}")
        if ("state" in fixes) != (name == "read" and bool(fixes)):
            raise ValueError(f"unknown line {text!r}: read takes +state only, +state read only")
        return cls(name, float(latency) if latency else latency_s, tuple(fixes))

    def label(self, latency_s: float | None = None) -> str:
        label = self.name
        if self.latency_s != latency_s:
            label += f"@{self.latency_s:g}"
        return label + "".join(f"+{fix}" for fix in self.fixes)

    @property
    def gc_prototype(self) -> bool:
        return "gc" in self.fixes


@dataclass(frozen=True)
class JobSettings:
    keys: int
    parallelism: int
    checkpoint_ms: int
    hold_s: float | None
    """None: until every input is answered."""
    trace: bool
    unaligned: bool = False


def run_line(spec: LineSpec, settings: JobSettings, tmp: Path) -> LineResult:
    """One job of the line; the JVM's memory is measured from just before it starts."""
    name, keys, latency_s = spec.name, settings.keys, spec.latency_s
    parallelism, checkpoint_ms = settings.parallelism, settings.checkpoint_ms
    trace, gc_prototype = settings.trace, spec.gc_prototype
    stop_file = str(tmp / f"answered-{uuid.uuid4().hex}")
    hold_s = settings.hold_s if settings.hold_s is not None else HOLD_MAX_S
    if name == "read":  # `read`, `read+state`
        hold_s = 0.0
    from pyflink.common import Types

    from flink_agents.runtime.flink import AgentOperatorOptions, FlinkAgentsExecutionEnvironment
    from flink_agents.runtime.flink.keyed_runs import PollPolicy

    checkpoint_dir = Path(tempfile.mkdtemp(prefix="checkpoints-", dir=tmp))
    port = free_port()
    env = _environment(parallelism, checkpoint_ms, checkpoint_dir, port, settings.unaligned)
    slots = "n/a"
    if name == "read":
        FlinkAgentsExecutionEnvironment(env, execution_mode="thread")  # same worker options
        keyed = _source(env, keys, 0.0).key_by(lambda r: r["key"], key_type=Types.STRING())
        out: Any = keyed.process(_trivial_function("state" in spec.fixes)).map(stamp)
    else:
        options = None
        if name == "tuned":
            # max_buffered: the input that fills it blocks the operator until a run ends.
            options = AgentOperatorOptions(max_in_flight=keys, max_buffered=keys + 1)
            if "cache" in spec.fixes:
                options.max_cached_keys = keys + 1
            if "poll5s" in spec.fixes:
                options.poll = PollPolicy(max_interval_ms=5000)
        agents_env = FlinkAgentsExecutionEnvironment(
            env, execution_mode="thread", operator_options=options
        )
        if name in ("tuned", "config"):
            agents_env.get_config().set(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS, keys)
        if "count1000" in spec.fixes:
            agents_env.get_config().set(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS, 1000)
            agents_env.get_config().set(AgentExecutionOptions.MAX_BUFFERED_INPUTS, 10000)
        used = agents_env.operator_options_for_job()
        slots = f"{used.max_in_flight}/{used.max_buffered}/{used.max_cached_keys}"
        agent: Any = scale_agent(
            latency_s,
            adaptive_limit="adaptive" in spec.fixes,
            max_concurrent_requests=keys if "fixed" in spec.fixes else None,
            half_with_tool="tool" in spec.fixes,
        )
        if trace or gc_prototype or "switch" in spec.fixes:
            inner = agents_env.engine_factory_for(agent, name="scale-agent")
            switch_s = 0.0005 if "switch" in spec.fixes else None
            agent = BenchEngineFactory(inner, str(tmp) if trace else None, gc_prototype, switch_s)
        out = (
            agents_env.from_datastream(
                _source(env, keys, hold_s, stop_file), key_selector=lambda r: r["key"]
            )
            .apply(agent, name="scale-agent")
            .to_datastream()
            .map(stamp)
        )
    pid, jvm = _jvm()
    gc_bean = jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
    jvm.java.lang.System.gc()
    rss_before = _rss_kb(pid) * 1024
    heap_before = int(gc_bean.getHeapMemoryUsage().getUsed())
    sampler = JobSampler(pid, f"http://127.0.0.1:{port}", checkpoint_dir, "scale-agent")
    sampler.start()
    started = time.time()
    try:
        outputs = []
        with out.execute_and_collect(f"bench-scale-{name}") as results:
            for output in results:
                outputs.append(output)
                if len(outputs) == keys:  # all answered: the source may end
                    Path(stop_file).touch()
    finally:
        samples = sampler.stop()
    job_s = time.time() - started
    for cid, size in samples.disk.items():
        if cid in samples.checkpoints:
            samples.checkpoints[cid].disk_bytes = size
    shutil.rmtree(checkpoint_dir, ignore_errors=True)
    result = LineResult(
        name, keys, latency_s, outputs, samples, rss_before, heap_before, job_s, slots
    )
    trace_file = tmp / "callbacks.json"
    if trace:
        time.sleep(1.5)  # the last write of the trace (every second in the worker)
    if trace_file.exists():
        result.trace = [tuple(t) for t in json.loads(trace_file.read_text())]  # type: ignore[misc]
        trace_file.unlink()
    return result


# ------------------------------------------------------------------ the report


def _is_read(label: str) -> bool:
    """Whether a line's label names a `read` line (`read`, `read+state`): no agent."""
    return label.partition("+")[0] == "read"


def check_answers(result: LineResult) -> None:
    outputs = result.outputs
    keys = sorted(o["key"] for o in outputs)
    if len(outputs) != result.keys or len(set(keys)) != result.keys:
        raise AssertionError(f"{result.name}: {len(outputs)} outputs for {result.keys} keys")
    if not _is_read(result.name):
        wrong = [o for o in outputs if o.get("answer") != o["key"]]
        if wrong:
            raise AssertionError(f"{result.name}: {len(wrong)} wrong answers, e.g. {wrong[0]}")


class Timeline:
    """One line's inputs over time, from the stamps in its outputs: read (by the source's
    map), taken in (the agent's first action ran, its model call started), answered (the
    output passed the map after the agent)."""

    def __init__(self, outputs: list[dict[str, Any]]) -> None:
        self.arrived = sorted(o["arrived"] for o in outputs)
        self.started = sorted(o.get("started", o["arrived"]) for o in outputs)
        self.out = sorted(o["out"] for o in outputs)

    def taken_in(self, t: float) -> int:
        """Inputs the agent had taken in by `t` (keys with state)."""
        return bisect.bisect_right(self.started, t)

    def waiting(self, t: float) -> int:
        """Runs taken in and not answered at `t`."""
        return self.taken_in(t) - bisect.bisect_right(self.out, t)

    def queued(self, t: float) -> int:
        """Inputs read and not taken in yet at `t` (in network buffers)."""
        return bisect.bisect_right(self.arrived, t) - self.taken_in(t)

    def peak(self) -> tuple[int, float]:
        """The most runs waiting at once, and when."""
        events = sorted([(t, 1) for t in self.started] + [(t, -1) for t in self.out])
        level = best = 0
        at = events[0][0]
        for t, step in events:
            level += step
            if level > best:
                best, at = level, t
        return best, at


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _mb(n: float) -> str:
    return f"{n / 2**20:,.0f} MB"


def _kb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1024:,.0f} KB"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def print_probe(p: ProbeResult) -> None:
    print(f"probe (this process, no Flink): {p.keys:,} keys waiting in one subtask's operator code")
    print(
        f"    Python memory per waiting run: {p.python_bytes_per_run / 1024:.1f} KB allocated "
        f"(tracemalloc), {p.rss_bytes_per_run / 1024:.1f} KB of RSS"
    )
    print(
        f"    keyed state per waiting key (JSON characters): key record {p.record_json:.0f} "
        f"(its key state {p.key_state_json:.0f}), input {p.input_json:.0f}, run snapshot "
        f"{p.run_json_in_state:.1f} on average (a snapshot of a waiting run would be "
        f"{p.run_json_if_written:.0f}: not written while the run waits, a restore runs it "
        f"again from its input)"
    )
    print(
        f"    timers: {p.poll_timers:,} poll and {p.end_timers:,} end-of-input timers "
        f"registered for {p.keys + 1:,} keys"
    )


def _memory_slope(
    line: Timeline, memory: list[tuple[float, int, int]], peak_at: float
) -> tuple[float, float, int] | None:
    """Bytes of RSS and of heap per waiting run: the least-squares slope of the samples
    against the runs waiting then, from the first run taken in to the peak (fixed costs,
    such as the mini-cluster's, fall out)."""
    points = [
        (line.waiting(t), rss, heap) for t, rss, heap in memory if line.started[0] <= t <= peak_at
    ]
    if len(points) < 5:
        return None
    mean_w = statistics.fmean(p[0] for p in points)
    spread = sum((p[0] - mean_w) ** 2 for p in points)
    if spread == 0:
        return None

    def slope(index: int) -> float:
        mean_y = statistics.fmean(p[index] for p in points)
        return sum((p[0] - mean_w) * (p[index] - mean_y) for p in points) / spread

    return slope(1), slope(2), len(points)


def _print_waiting_cpu(r: LineResult, line: Timeline, intake: float) -> None:
    """The JVM's CPU while every run only waits: after the last input was taken in (and
    a second more), before the first answer."""
    start, end = line.arrived[0] + intake + 1.0, line.out[0] - 0.2
    cpu = [c for c in r.samples.cpu if start <= c[0] <= end]
    if end - start < 3.0 or len(cpu) < 2:
        return
    used = (cpu[-1][1] - cpu[0][1]) / (cpu[-1][0] - cpu[0][0])
    text = (
        f"    while all {line.waiting(start):,} runs only waited ({start - line.arrived[0]:.0f}-"
        f"{end - line.arrived[0]:.0f} s): the JVM used {used:.2f} cores"
    )
    if r.trace:
        polls = sum(1 for t in r.trace if t[1] == "poll" and cpu[0][0] <= t[2] <= cpu[-1][0])
        rate = polls / (cpu[-1][0] - cpu[0][0])
        python = sum(t[3] for t in r.trace if t[1] == "poll" and cpu[0][0] <= t[2] <= cpu[-1][0])
        text += (
            f"; {rate:,.0f} polls/s, {python / polls * 1e6:.0f} us of Python each"
            if polls
            else "; no polls"
        )
    print(text)


def print_line(r: LineResult, latency_s: float, read_span: float | None) -> None:
    line = Timeline(r.outputs)
    first_in = line.arrived[0]
    span = line.arrived[-1] - first_in
    wall = line.out[-1] - first_in
    print()
    print(
        f"{r.name}: {r.keys:,} keys, all answered; model {latency_s} s; job {r.job_s:.1f} s "
        f"with start-up; read {span:.2f} s ({r.keys / max(span, 1e-9):,.0f} inputs/s)"
    )
    if _is_read(r.name):
        return
    ideal = span + latency_s
    print(
        f"    per subtask max_in_flight/max_buffered/max_cached_keys {r.slots}: wall {wall:.2f} s, "
        f"ideal (read + model) {ideal:.2f} s, ratio {ideal / wall:.2f} (target >= 0.8)"
    )
    if read_span is not None:
        strict = read_span + latency_s
        print(
            f"    with the read line's read time: ideal {strict:.2f} s, ratio {strict / wall:.2f}"
        )
    intake = line.started[-1] - first_in
    print(
        f"    intake: the agent took the last input in {intake:.2f} s after the first was read "
        f"({r.keys / intake:,.0f} inputs/s); intake + model {intake + latency_s:.2f} s, ratio "
        f"{(intake + latency_s) / wall:.2f}"
    )
    added = [o["out"] - o["arrived"] - latency_s for o in r.outputs]
    found = [o["out"] - o["started"] - latency_s for o in r.outputs]
    print(
        f"    added latency, output - read - model: p50 {_ms(percentile(added, 0.5))}, p99 "
        f"{_ms(percentile(added, 0.99))}; output - model call start - model: p50 "
        f"{_ms(percentile(found, 0.5))}, p99 {_ms(percentile(found, 0.99))}, max "
        f"{_ms(max(found))}"
    )
    _print_waiting_cpu(r, line, intake)
    peak, peak_at = line.peak()
    memory = r.samples.memory
    slope = _memory_slope(line, memory, peak_at)
    if slope is not None:
        print(
            f"    memory per waiting run while runs were taken in (RSS growth over waiting "
            f"runs, least squares over {slope[2]} samples): JVM RSS {slope[0] / 1024:.1f} KB, "
            f"heap used {slope[1] / 1024:.1f} KB (not after GC)"
        )
    if memory:
        at_peak = min(memory, key=lambda s: abs(s[0] - peak_at))
        rss_max = max(s[1] for s in memory)
        print(
            f"    peak: {peak:,} runs waiting at {peak_at - first_in:.2f} s "
            f"({line.queued(peak_at):,} more inputs read, not taken in). JVM RSS before the job "
            f"{_mb(r.rss_before)}, then {_mb(at_peak[1])}, at most {_mb(rss_max)}: "
            f"{(at_peak[1] - r.rss_before) / peak / 1024:.1f} KB per waiting run (includes the "
            f"mini-cluster's start-up). Heap used {_mb(r.heap_before)} after GC before the job, "
            f"{_mb(at_peak[2])} then (not after GC)"
        )
    print(
        "    checkpoints: trigger (s after the first input), duration, agent operator's "
        "snapshot (s), keys in its state then, runs waiting then; state size (the agent "
        "operator's), on disk:"
    )
    for c in sorted(r.samples.checkpoints.values(), key=lambda c: c.id):
        at = c.agent_ack_s if c.agent_ack_s is not None else c.trigger_s
        keys, waiting = line.taken_in(at), line.waiting(at)
        acked = f"{c.agent_ack_s - first_in:6.2f} s" if c.agent_ack_s is not None else "     ? "
        disk = _kb(c.disk_bytes) if c.disk_bytes is not None else "?"
        text = (
            f"      #{c.id:<3d} {c.status:11s} {c.trigger_s - first_in:6.2f} s "
            f"{c.duration_ms:6,} ms  {acked} {keys:7,} keys {waiting:7,} waiting  "
            f"{_kb(c.state_bytes)} ({_kb(c.agent_state_bytes)}), {disk}"
        )
        if c.failure:
            text += f"  {c.failure[:100]}"
        print(text)
    if r.trace:
        print_trace(r.trace, first_in)


def report(results: list[LineResult], probe_result: ProbeResult | None) -> None:
    print()
    if probe_result is not None:
        print_probe(probe_result)
    read_span: float | None = None
    for r in results:
        check_answers(r)
        print_line(r, r.latency_s, read_span)
        if r.name == "read":
            read_span = Timeline(r.outputs).arrived[-1] - Timeline(r.outputs).arrived[0]


def report_against_small_jobs(results: list[LineResult], small: list[LineResult]) -> None:
    """Issue 30's measure: each agent line's job time (start-up included) against the same
    job with few keys plus the extra time the read line's job takes for all the keys."""
    read = next(i for i, r in enumerate(results) if r.name == "read")
    extra_read = results[read].job_s - small[read].job_s
    print()
    print(
        f"against small jobs: read job {results[read].job_s:.1f} s for {results[read].keys:,} "
        f"keys, {small[read].job_s:.1f} s for {small[read].keys:,}: {extra_read:.1f} s more"
    )
    for full, few in zip(results, small, strict=True):
        if full.name == "read":
            continue
        if _is_read(full.name):  # `read+state`
            print(
                f"    {full.name}: job {full.job_s:.1f} s for {full.keys:,} keys, "
                f"{few.job_s:.1f} s for {few.keys:,}: {full.job_s - few.job_s:.1f} s more"
            )
            continue
        check_answers(few)
        ideal = few.job_s + extra_read
        print(
            f"    {full.name}: job {full.job_s:.1f} s for {full.keys:,} keys; ideal "
            f"{few.job_s:.1f} s ({few.keys:,} keys) + {extra_read:.1f} s = {ideal:.1f} s; "
            f"job / ideal {full.job_s / ideal:.2f} (target <= 1.25), ideal / job "
            f"{ideal / full.job_s:.2f}"
        )


def print_trace(trace: list[tuple[int, str, float, float, int]], first_in: float) -> None:
    """Per operator thread: callbacks by kind, their time, and per second."""
    for generation in ("gc0", "gc1", "gc2"):
        pauses = [t for t in trace if t[1] == generation]
        if pauses:
            longest = max(pauses, key=lambda t: t[3])
            print(
                f"    Python {generation[:2]} generation {generation[2]}: {len(pauses):,} "
                f"collections, {sum(t[3] for t in pauses):.2f} s, longest "
                f"{longest[3] * 1000:.0f} ms (at {longest[2] - first_in:.2f} s)"
            )
    trace = [t for t in trace if not t[1].startswith("gc")]
    threads = sorted({t[0] for t in trace})
    for number, thread in enumerate(threads):
        mine = [t for t in trace if t[0] == thread]
        print(f"    operator thread {number}: callbacks (count, seconds in them, empty ones):")
        for kind in ("input", "poll", "end"):
            calls = [t for t in mine if t[1] == kind]
            if not calls:
                continue
            spent = sum(t[3] for t in calls)
            empty = sum(1 for t in calls if t[4] == 0)
            longest = max(calls, key=lambda t: t[3])
            print(
                f"      {kind:5s} {len(calls):8,}  {spent:6.2f} s  {empty:8,} empty  "
                f"longest {_ms(longest[3])} (at {longest[2] - first_in:.2f} s)"
            )
        end = max(t[2] + t[3] for t in mine)
        buckets = int(end - first_in) + 1
        rows = []
        for b in range(buckets):
            lo, hi = first_in + b, first_in + b + 1
            inside = [t for t in mine if lo <= t[2] < hi]
            counts = {k: sum(1 for t in inside if t[1] == k) for k in ("input", "poll", "end")}
            busy = sum(t[3] for t in inside)
            rows.append(
                f"{b:3d} s: in {counts['input']:5d} poll {counts['poll']:6d} "
                f"end {counts['end']:5d} busy {busy:4.0%}"
            )
        print("      per second: " + "\n                  ".join(rows))


def run_in_this_process(spec: LineSpec, settings: JobSettings) -> LineResult:
    """A warm-up job (the first job in a JVM runs cold; it also loads Python and the agent
    into the JVM), then the line's job."""
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as tmp:
        warm_up = dataclasses.replace(
            settings, keys=min(settings.keys, 500), hold_s=0.0, trace=False
        )
        run_line(dataclasses.replace(spec, latency_s=0.2), warm_up, Path(tmp))
        return run_line(spec, settings, Path(tmp))


def run_in_a_new_jvm(spec: LineSpec, args: argparse.Namespace, keys: int) -> LineResult:
    """The line with `keys` keys in a child process: a JVM of its own, so memory is
    measured from a baseline no earlier line raised. Holds `--lock` while it runs."""
    from flink_runtime import flink_lock  # the other benches' helpers (this folder)

    with tempfile.NamedTemporaryFile(suffix=".json") as out, flink_lock(args.lock):
        command = [
            sys.executable,
            __file__,
            "--line",
            spec.label(),
            "--out",
            out.name,
            "--keys",
            str(keys),
            "--parallelism",
            str(args.parallelism),
            "--checkpoint-ms",
            str(args.checkpoint_ms),
        ]
        if args.hold_s is not None:
            command += ["--hold-s", str(args.hold_s)]
        if args.trace:
            command.append("--trace")
        if args.unaligned:
            command.append("--unaligned")
        subprocess.run(command, check=True)
        result = LineResult.from_json(Path(out.name).read_text())
    result.name = spec.label(args.latency_s)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description="Scale benchmark: many runs waiting at once.")
    parser.add_argument("--keys", type=int, default=20000)
    parser.add_argument("--latency-s", type=float, default=2.0, help="the model's latency")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--checkpoint-ms", type=int, default=1000, help="0: no checkpoints")
    parser.add_argument(
        "--lines",
        default="read,tuned,tuned+gc,defaults",
        help="comma-separated NAME[@LATENCY_S][+gc]: names read, tuned, config, defaults; "
        "@30: a model of 30 s for this line; +gc: with the GC prototype (BenchEngineFactory); "
        "+cache: max_cached_keys above the keys; +poll5s: polls every 5 s at most; +adaptive: "
        "the connection's adaptive limit; +fixed: its max_concurrent_requests at the keys; "
        "read+state: the read line with the agent operator's state and timer calls; +switch: "
        "the worker's switch interval at 0.5 ms",
    )
    parser.add_argument("--no-probe", action="store_true", help="skip the in-process probe")
    parser.add_argument(
        "--ideal-keys",
        type=int,
        default=None,
        help="also run every line with this many keys (e.g. 10) and compare each agent "
        "line's job time with the small job's + the read line's extra time for --keys "
        "(issue 30's measure; needs the read line)",
    )
    parser.add_argument(
        "--hold-s",
        type=float,
        default=None,
        help="keep the source open this long after the last input (default: until every input "
        "is answered; 0: the input ends at once and the end-of-input timers wait for the runs)",
    )
    parser.add_argument(
        "--lock",
        default=None,
        help="take this flock (e.g. /tmp/flink.lock) around each line's JVM only",
    )
    parser.add_argument(
        "--trace", action="store_true", help="time the agent operator's callbacks and Python GC"
    )
    parser.add_argument(
        "--unaligned", action="store_true", help="unaligned checkpoints (Flink's option)"
    )
    parser.add_argument("--line", help=argparse.SUPPRESS)  # one line, in this process
    parser.add_argument("--out", help=argparse.SUPPRESS)  # ... its result as JSON here
    args = parser.parse_args()
    settings = JobSettings(
        args.keys, args.parallelism, args.checkpoint_ms, args.hold_s, args.trace, args.unaligned
    )
    if args.line is not None:
        result = run_in_this_process(LineSpec.parse(args.line, args.latency_s), settings)
        Path(args.out).write_text(result.to_json())
        return
    try:
        texts = [t.strip() for t in args.lines.split(",") if t.strip()]
        specs = [LineSpec.parse(t, args.latency_s) for t in texts]
    except ValueError as exc:
        parser.error(str(exc))
    probe_result = None if args.no_probe else probe(args.keys // args.parallelism)
    hold = "until all are answered" if args.hold_s is None else f"{args.hold_s} s"
    print(
        f"scale: {args.keys:,} keys, one input each, parallelism {args.parallelism}, "
        f"checkpoints every {args.checkpoint_ms} ms{' (unaligned)' if args.unaligned else ''}, "
        f"thread mode, source open after the last input {hold}; each line in a JVM of its "
        "own after a warm-up job"
    )
    if args.ideal_keys is not None and "read" not in [spec.name for spec in specs]:
        parser.error("--ideal-keys needs the read line")
    results: list[LineResult] = []
    small: list[LineResult] = []
    for spec in specs:
        results.append(run_in_a_new_jvm(spec, args, args.keys))
        print(f"  ran {results[-1].name}", flush=True)
        if args.ideal_keys is not None:
            small.append(run_in_a_new_jvm(spec, args, args.ideal_keys))
            print(f"  ran {small[-1].name} with {args.ideal_keys} keys", flush=True)
    report(results, probe_result)
    if small:
        report_against_small_jobs(results, small)


if __name__ == "__main__":
    main()
