"""The local runner: agents on asyncio in this process, no Flink.

Inputs go through the same `RunScheduler` as on Flink (`flink_agents.runtime.scheduler`):
per key strictly in input order, one run at a time; different keys concurrently, as many as
``max-in-flight-runs-bytes`` holds (and at most ``max-in-flight-runs``, when set). Inputs,
runs and per-key state go through the same JSON as in Flink's keyed state (inputs when
accepted, key state after every run, a run when it sends an output before its end), so a
value that would break a Flink job breaks a local run too. Sync actions and tools run on
threads, so they never stall other keys.

>>> env = AgentsExecutionEnvironment.get_execution_environment()
>>> out = env.from_list([{"key": "a", "value": "hi"}]).apply(MyAgent()).to_list()
>>> env.execute()
>>> out
[{'a': ...}]

For long or unbounded inputs, stream: ``async for output in LocalRunner(agent).stream(inputs)``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from flink_agents.api.agents.agent import Agent
from flink_agents.api.approvals import ApprovalRequest, ToolApproval
from flink_agents.api.core_options import AgentConfiguration, AgentExecutionOptions
from flink_agents.api.execution_environment import AgentBuilder, AgentsExecutionEnvironment
from flink_agents.plan.agent_plan import ResourceSpec
from flink_agents.runtime import approvals
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.durable.store_url import open_durable_call_log
from flink_agents.runtime.errors import InputRefusedError
from flink_agents.runtime.event_log import EventLog
from flink_agents.runtime.gc_tuning import tuning as collector_tuning
from flink_agents.runtime.input_failure import FailedInput, accept_key
from flink_agents.runtime.keys import agent_key, decode_key
from flink_agents.runtime.metrics import MetricGroup
from flink_agents.runtime.process_setup import set_up_process
from flink_agents.runtime.run_state import KeyState
from flink_agents.runtime.scheduler import KeyQueue, RunScheduler, admit, runs_within

__all__ = ["AgentOutput", "LocalAgentBuilder", "LocalExecutionEnvironment", "LocalRunner"]

Inputs = Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]]
"""``{"key": ..., "value": ...}`` records, sync or async."""


class AgentOutput(NamedTuple):
    """One output of a run."""

    key: Any
    """The input's key."""
    value: Any
    """The `OutputEvent`'s output."""
    seq: int
    """The input's sequence number within its key."""


async def _records(inputs: Inputs) -> AsyncIterator[tuple[Any, Any]]:
    if isinstance(inputs, AsyncIterable):
        async for record in inputs:
            yield _split(record)
    else:
        for record in inputs:
            yield _split(record)


def _split(record: Mapping[str, Any]) -> tuple[Any, Any]:
    if not isinstance(record, Mapping) or "key" not in record or "value" not in record:
        raise ValueError('each input is a {"key": ..., "value": ...} mapping')
    return record["key"], record["value"]


_PLAIN_KEYS = (str, int, float, bool)
"""Key types (exactly these, no subclass) that are their own text read back."""

_READ_BATCH = 32
"""Inputs read before the runs started get a turn on the loop."""


class _ParkedKey(NamedTuple):
    """A key whose run waits for approval between two `LocalRunner.stream` calls."""

    agent_key: Any
    run_json: str
    waiting: list[tuple[Any, int]]
    """Inputs behind the parked run (decoded, with their JSON's length)."""
    taken: int
    """Outputs of the parked run yielded already (its approval requests)."""


class LocalRunner:
    """Runs an agent over keyed inputs on the running event loop.

    A run that waits for a person's decision (a tool declared ``requires_approval``) is
    parked: its `ApprovalRequest`s go to `approval_requests_sent` (not the outputs), and it
    stays parked across `stream` calls until `ToolApproval` inputs of its key decide every
    call, or ``tool-call.approval-timeout-s`` passes (while a stream runs; a deadline that
    passed between two streams applies when the next one starts). A stream does not wait
    for parked runs: it ends once every other run has.
    """

    def __init__(
        self,
        agent: Agent | AgentEngine,
        config: AgentConfiguration | Mapping[str, Any] | None = None,
        *,
        call_log: Any = None,
        metrics: MetricGroup | None = None,
        event_log: EventLog | None = None,
        shared_resources: Mapping[Any, Mapping[str, ResourceSpec]] | None = None,
    ) -> None:
        if isinstance(agent, AgentEngine):
            self.engine = agent
            set_up_process(agent.config)
        else:
            if not isinstance(config, AgentConfiguration):
                config = AgentConfiguration(config)
            set_up_process(config)  # before the engine: building resources may log
            self.engine = AgentEngine(
                agent,
                config,
                call_log=call_log,
                metrics=metrics,
                event_log=event_log,
                shared_resources=shared_resources,
            )
        self._key_state_json: dict[str, str] = {}
        """Per key text, its state as of the end of the last `stream` (memory, next seq)."""
        self._queues: dict[str, KeyQueue] = {}
        self._parked: dict[str, _ParkedKey] = {}
        """Per key text, its parked run as of the end of the last `stream`."""
        self._scheduler: RunScheduler | None = None
        self.errors: list[dict[str, Any]] = []
        """Failure records of the inputs skipped under `input-failure.policy: skip`."""
        self.approval_requests_sent: list[ApprovalRequest] = []
        """Every `ApprovalRequest` runs sent, in the order they went out."""

    def approval_requests(self) -> list[ApprovalRequest]:
        """The requests of the calls still waiting for a decision (parked runs)."""
        scheduler = self._scheduler
        pending = [] if scheduler is None else scheduler.pending_approvals()
        engine = self.engine
        for parked in self._parked.values():
            pending += engine.pending_approvals(engine.load_run(parked.run_json))
        return pending

    @property
    def metrics(self) -> MetricGroup:
        """The runner's metrics."""
        return self.engine.metrics

    @property
    def key_states(self) -> dict[str, KeyState]:
        """Per-key state kept across runs (short-term memory, next sequence number), by the
        key's text (`flink_agents.runtime.keys.encode_key`: keys of different types
        differ)."""
        states = {key: KeyState.from_json(data) for key, data in self._key_state_json.items()}
        states.update({key: queue.key_state for key, queue in self._queues.items()})
        return states

    async def stream(self, inputs: Inputs) -> AsyncGenerator[AgentOutput, None]:
        """Run every input; yield outputs as runs send them (in input order per key).

        Reading the input pauses while `max-buffered-inputs` (default: twice the runs the
        in-flight bounds let go on, `runs_within`) inputs are accepted and unfinished. If a
        run fails, the other runs are cancelled and the error (an `ActionExecutionError`)
        is raised here. An input refused at the door (its key or value cannot be kept) is a
        failure record in `errors` under `input-failure.policy: skip`; under `fail` reading
        stops, the runs of the inputs accepted before it end and their outputs are yielded,
        then its `InputRefusedError` is raised.
        """
        engine = self.engine
        config = engine.config
        max_in_flight = config.get(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS)
        max_bytes = config.get(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS_BYTES)
        woken = asyncio.Event()
        progressed: dict[str, KeyQueue] = {}
        seqs: dict[str, int] = {}
        """Per key text, the sequence number of its oldest run not taken in full."""

        def on_progress(queue: KeyQueue) -> None:
            progressed[queue.key] = queue
            woken.set()

        scheduler = RunScheduler(
            engine,
            max_in_flight=max_in_flight,
            max_in_flight_bytes=max_bytes,
            max_buffered=config.get(AgentExecutionOptions.MAX_BUFFERED_INPUTS)
            or 2 * runs_within(max_bytes, max_in_flight),
            # Snapshots of runs in progress are what a checkpoint takes; with no checkpoints
            # here, a run is written out where Flink must: when it sends an output.
            snapshot_after_s=float("inf"),
            launch=None,
            on_progress=on_progress,
        )
        self._queues = scheduler.queues
        self._scheduler = scheduler
        loop = asyncio.get_running_loop()
        timers: dict[str, asyncio.TimerHandle] = {}
        """Per parked key with an approval timeout, the loop timer that applies it."""

        def expire(queue: KeyQueue) -> None:
            timers.pop(queue.key, None)
            scheduler.time_out(queue, approvals.clock_ms())
            watch_deadline(queue)

        def watch_deadline(queue: KeyQueue) -> None:
            deadline = scheduler.approval_deadline_ms(queue)
            if deadline is None or queue.key in timers:
                return
            delay = max(0.0, (deadline - approvals.clock_ms()) / 1000.0)
            timers[queue.key] = loop.call_later(delay, expire, queue)

        def create(text: str, key: Any) -> KeyQueue:
            key_state_json = self._key_state_json.pop(text, None)
            parked = self._parked.pop(text, None)
            if parked is None:
                # Runs see the key as Flink's do: read back from its text (a list key is
                # a tuple, a str subclass a str), so every key is hashable and plain.
                run_key = key if type(key) in _PLAIN_KEYS else decode_key(text)
                queue = scheduler.create(text, run_key, key_state_json=key_state_json)
                seqs[text] = queue.key_state.next_seq
                return queue
            queue = scheduler.create(
                text,
                parked.agent_key,
                key_state_json=key_state_json,
                run_json=parked.run_json,
                inputs=[(None, 0), *parked.waiting],  # the first: the parked run's own
                taken=parked.taken,
            )
            seqs[text] = queue.key_state.next_seq - 1  # the parked run's
            scheduler.time_out(queue, approvals.clock_ms())  # a deadline passed meanwhile
            watch_deadline(queue)
            return queue

        for text in list(self._parked):
            create(text, None)

        async def produce() -> None:
            admitted = 0
            async for key, value in _records(inputs):
                admitted += 1
                if admitted % _READ_BATCH == 0:
                    # Let the runs started so far take their first steps (and send their
                    # model calls) before reading on: a long input list does not hold back
                    # the first call until all of it is read.
                    await asyncio.sleep(0)
                key = agent_key(key)  # a UUID (upstream's key type) is its text
                try:  # refused at the door, as on Flink (where inputs wait in keyed state)
                    text = accept_key(key)
                    encoded, decoded = admit(engine, text, value)
                    if isinstance(decoded, ToolApproval):  # decides a parked call, or nothing
                        scheduler.decide(scheduler.get(text), text, decoded)
                        continue
                except InputRefusedError as exc:
                    if engine.failure_retries is None:
                        raise  # after the runs accepted before it have ended
                    self.errors.append(engine.refuse_input(key, value, exc).record)
                    continue
                while not scheduler.has_capacity():
                    woken.clear()
                    await woken.wait()
                queue = scheduler.get(text)
                if queue is None:
                    queue = create(text, key)
                scheduler.submit(queue, decoded, len(encoded))

        def outputs_of(queue: KeyQueue) -> list[AgentOutput]:
            progress = scheduler.take(queue)
            seq = seqs[queue.key]
            found: list[AgentOutput] = []
            for outputs in progress.finished:
                found += self._route(queue.agent_key, outputs, seq)
                seq += 1
            seqs[queue.key] = seq
            found += self._route(queue.agent_key, progress.sent, seq)
            if queue.parked:
                watch_deadline(queue)
            return found

        tuned = bool(engine.config.get(AgentExecutionOptions.GC_TUNING))
        freeze = tuned and bool(engine.config.get(AgentExecutionOptions.GC_FREEZE))
        if tuned:
            collector_tuning.hold(freeze=freeze)
        producer = asyncio.ensure_future(produce())
        producer.add_done_callback(lambda _: woken.set())
        try:
            while True:
                woken.clear()
                if scheduler.failure is not None:
                    raise scheduler.failure
                while progressed:
                    _, queue = progressed.popitem()
                    for output in outputs_of(queue):
                        yield output
                if producer.done() and scheduler.buffered == 0 and not progressed:
                    # Its error (a refused input under `fail`, a failed read), if any, once
                    # the inputs accepted before it have been answered.
                    producer.result()
                    return
                if not progressed:
                    await woken.wait()
        finally:
            producer.cancel()
            scheduler.cancel()
            with contextlib.suppress(BaseException):
                await producer
            for handle in timers.values():
                handle.cancel()
            for text, queue in scheduler.queues.items():
                if queue.key_state_json is not None:
                    self._key_state_json[text] = queue.key_state_json
                if queue.parked and queue.run_json is not None:
                    self._parked[text] = _ParkedKey(
                        queue.agent_key, queue.run_json, list(queue.waiting), queue.taken
                    )
            self._queues = {}
            self._scheduler = None
            if tuned:
                collector_tuning.release(freeze=freeze)

    def _route(self, key: Any, outputs: list[Any], seq: int) -> list[AgentOutput]:
        """Outputs as `AgentOutput`s; failure records (input-failure.policy skip) to
        `errors`."""
        routed: list[AgentOutput] = []
        for output in outputs:
            if type(output) is FailedInput:
                self.errors.append(output.record)
            elif type(output) is ApprovalRequest:
                self.approval_requests_sent.append(output)
            else:
                routed.append(AgentOutput(key, output, seq))
        return routed

    async def run(self, inputs: Inputs) -> list[AgentOutput]:
        """Run every input; all outputs (per key in input order)."""
        return [output async for output in self.stream(inputs)]

    def close(self) -> None:
        """Release the engine's threads and event log."""
        self.engine.close()


class LocalAgentBuilder(AgentBuilder):
    """An input list (or iterable) bound to an agent, in a `LocalExecutionEnvironment`."""

    def __init__(self, env: LocalExecutionEnvironment, inputs: Inputs) -> None:
        self._env = env
        self._inputs = inputs
        self._runner: LocalRunner | None = None
        self._output: list[dict[Any, Any]] = []
        self._errors: list[dict[str, Any]] = []
        self._approval_requests: list[ApprovalRequest] = []

    def apply(self, agent: Agent | str) -> LocalAgentBuilder:
        """Run ``agent`` (an `Agent`, or the name of one `load_yaml` registered) over the
        input."""
        if self._runner is not None:
            raise RuntimeError("an input is applied to one agent")
        agent = self._env.resolve_agent(agent)
        config = self._env.get_config().copy()
        self._runner = LocalRunner(
            agent,
            config,
            call_log=open_durable_call_log(config, agent=agent),
            shared_resources=self._env.resources,
        )
        return self

    @property
    def runner(self) -> LocalRunner:
        """The local runner (its metrics, resources and key states)."""
        if self._runner is None:
            raise RuntimeError("apply(agent) first")
        return self._runner

    def to_list(self) -> list[dict[Any, Any]]:
        """The outputs as ``{key: output}`` dicts, filled by ``env.execute()``."""
        return self._output

    def to_error_list(self) -> list[dict[str, Any]]:
        """Failure records of inputs skipped under `input-failure.policy: skip` (key, input,
        action, event_type, error_type, message, attempts, failed_at), filled by
        ``env.execute()``; each is also logged at WARNING."""
        return self._errors

    def to_approval_request_list(self) -> list[ApprovalRequest]:
        """The `ApprovalRequest`s runs sent (tool calls waiting for a person), filled by
        ``env.execute()``; answer each with a `ToolApproval` input of the same key."""
        return self._approval_requests

    async def stream(self) -> AsyncGenerator[AgentOutput, None]:
        """Run now and yield outputs as they come (instead of ``execute``)."""
        async for output in self.runner.stream(self._inputs):
            yield output

    async def _execute(self) -> None:
        try:
            async for output in self.stream():
                self._output.append({output.key: output.value})
        finally:  # what was answered and skipped before a failure stays readable
            self._errors.extend(self.runner.errors)
            self._approval_requests.extend(self.runner.approval_requests_sent)


class LocalExecutionEnvironment(AgentsExecutionEnvironment):
    """Runs agents in this process on asyncio (see the module doc)."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        for key, value in (config or {}).items():
            self._config.set_str(key, value)
        self._builders: list[LocalAgentBuilder] = []

    def from_list(self, inputs: list[dict[str, Any]]) -> LocalAgentBuilder:
        """Inputs as ``{"key": ..., "value": ...}`` dicts."""
        return self.from_iterable(list(inputs))

    def from_iterable(self, inputs: Inputs) -> LocalAgentBuilder:
        """Inputs from any iterable or async iterable of ``{"key", "value"}`` mappings."""
        builder = LocalAgentBuilder(self, inputs)
        self._builders.append(builder)
        return builder

    def execute(self, job_name: str | None = None) -> None:
        """Run every applied input to the end (blocking); fills the ``to_list`` lists."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("execute() blocks; inside an event loop use `await execute_async()`")
        asyncio.run(self._execute_owned_loop())

    async def _execute_owned_loop(self) -> None:
        threads = self._config.get(AgentExecutionOptions.NUM_ASYNC_THREADS)
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="agent-tool")
        asyncio.get_running_loop().set_default_executor(pool)
        await self.execute_async()

    async def execute_async(self) -> None:
        """`execute` on the running event loop."""
        builders, self._builders = self._builders, []
        for builder in builders:
            if builder._runner is None:
                raise RuntimeError("every input needs apply(agent) before execute()")
        try:
            for builder in builders:
                await builder._execute()
        finally:
            for builder in builders:
                builder.runner.close()
