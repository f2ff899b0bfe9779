"""The local runner: agents on asyncio in this process, no Flink.

Per key, inputs run strictly in input order, one run at a time; different keys run
concurrently, at most ``max-in-flight-runs`` runs at once. Sync actions and tools
run in a thread pool, so they never stall other keys.

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
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentConfiguration, AgentExecutionOptions
from flink_agents.api.events._codec import check_state_value
from flink_agents.api.execution_environment import AgentBuilder, AgentsExecutionEnvironment
from flink_agents.plan.agent_plan import ResourceSpec
from flink_agents.runtime.agent_runner import AgentRunner
from flink_agents.runtime.durable.store_url import open_durable_call_log
from flink_agents.runtime.event_log import EventLog
from flink_agents.runtime.keys import encode_key
from flink_agents.runtime.metrics import MetricGroup
from flink_agents.runtime.run_state import KeyState

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


class _Failed(NamedTuple):
    error: BaseException


_DONE = object()


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


class LocalRunner:
    """Runs an agent over keyed inputs on the running event loop."""

    def __init__(
        self,
        agent: Agent | AgentRunner,
        config: AgentConfiguration | Mapping[str, Any] | None = None,
        *,
        durable: Any = None,
        metrics: MetricGroup | None = None,
        event_log: EventLog | None = None,
        shared_resources: Mapping[Any, Mapping[str, ResourceSpec]] | None = None,
    ) -> None:
        if isinstance(agent, AgentRunner):
            self.runner = agent
        else:
            self.runner = AgentRunner(
                agent,
                config,
                durable=durable,
                metrics=metrics,
                event_log=event_log,
                shared_resources=shared_resources,
            )
        self.key_states: dict[str, KeyState] = {}
        """Per-key state kept across runs (short-term memory, next sequence number), by the
        key's text (`flink_agents.runtime.keys.encode_key`: keys of different types differ)."""
        self.errors: list[dict[str, Any]] = []
        """Failure records of the inputs skipped under `input-failure.policy: skip`."""

    @property
    def metrics(self) -> MetricGroup:
        """The runner's metrics."""
        return self.runner.metrics

    async def stream(self, inputs: Inputs) -> AsyncGenerator[AgentOutput, None]:
        """Run every input; yield outputs as runs send them (in input order per key).

        Reading the input pauses while ``2 x max-in-flight-runs`` inputs are accepted
        and unfinished. If a run fails, the other runs are cancelled and the error
        (an `ActionExecutionError`) is raised here.
        """
        runner = self.runner
        max_in_flight = max(1, runner.config.get(AgentExecutionOptions.MAX_IN_FLIGHT_RUNS))
        slots = asyncio.Semaphore(max_in_flight)
        accepted = asyncio.Semaphore(2 * max_in_flight)
        outputs: asyncio.Queue[Any] = asyncio.Queue()
        queues: dict[str, deque[Any]] = {}
        tasks: set[asyncio.Task[None]] = set()

        def finished(task: asyncio.Task[None]) -> None:
            tasks.discard(task)
            if not task.cancelled() and task.exception() is not None:
                outputs.put_nowait(_Failed(task.exception()))  # type: ignore[arg-type]
            if not tasks:
                outputs.put_nowait(_DONE)

        def spawn(coro: Any) -> None:
            task = asyncio.ensure_future(coro)
            tasks.add(task)
            task.add_done_callback(finished)

        retries = (
            runner.config.get(AgentExecutionOptions.INPUT_FAILURE_RETRIES)
            if runner.keeps_run_start
            else None
        )

        async def run_input(key: Any, value: Any, key_state: KeyState) -> None:
            """One input's run; under policy skip tried again, then abandoned (its failure
            record to `errors`)."""
            run = runner.start_run(key, value, key_state)
            emitted = 0
            attempts = 1
            while True:
                try:
                    while not run.done:  # outputs go out as the run sends them
                        await runner.step(run, key_state)
                        for output in run.outputs[emitted:]:
                            outputs.put_nowait(AgentOutput(key, output, run.seq))
                        emitted = len(run.outputs)
                    return
                except Exception as exc:
                    if retries is None:  # input-failure.policy: fail
                        raise
                    if attempts <= retries:
                        attempts += 1
                        run = runner.retry_run(run, key_state)  # sent outputs stay sent
                        continue
                    self.errors.append(runner.abandon_run(run, key_state, exc, attempts).record)
                    return

        async def work(key: Any, text: str) -> None:
            pending = queues[text]
            key_state = self.key_states.get(text)
            if key_state is None:
                key_state = self.key_states[text] = KeyState()
            while pending:
                value = pending.popleft()
                async with slots:
                    await run_input(key, value, key_state)
                accepted.release()
            del queues[text]

        async def produce() -> None:
            async for key, value in _records(inputs):
                text = encode_key(key)  # refuses a key with no text (None) before running
                try:  # refused at the door, as on Flink (where inputs wait in keyed state)
                    check_state_value(value, "input")
                except TypeError as exc:
                    if retries is None:
                        raise TypeError(f"key {text}: {exc}") from None
                    self.errors.append(runner.refuse_input(key, value, exc).record)
                    continue
                await accepted.acquire()
                pending = queues.get(text)
                if pending is None:
                    queues[text] = deque([value])
                    spawn(work(key, text))
                else:
                    pending.append(value)

        spawn(produce())
        try:
            while True:
                item = await outputs.get()
                if item is _DONE:
                    return
                if isinstance(item, _Failed):
                    raise item.error
                yield item
        finally:
            for task in list(tasks):
                task.cancel()
            if tasks:
                with contextlib.suppress(BaseException):
                    await asyncio.gather(*tasks, return_exceptions=True)

    async def run(self, inputs: Inputs) -> list[AgentOutput]:
        """Run every input; all outputs (per key in input order)."""
        return [output async for output in self.stream(inputs)]

    def close(self) -> None:
        """Release the runner's thread pool and event log."""
        self.runner.close()


class LocalAgentBuilder(AgentBuilder):
    """An input list (or iterable) bound to an agent, in a `LocalExecutionEnvironment`."""

    def __init__(self, env: LocalExecutionEnvironment, inputs: Inputs) -> None:
        self._env = env
        self._inputs = inputs
        self._runner: LocalRunner | None = None
        self._output: list[dict[Any, Any]] = []
        self._errors: list[dict[str, Any]] = []

    def apply(self, agent: Agent) -> LocalAgentBuilder:
        """Run ``agent`` over the input."""
        if self._runner is not None:
            raise RuntimeError("an input is applied to one agent")
        config = self._env.get_config().copy()
        self._runner = LocalRunner(
            agent,
            config,
            durable=open_durable_call_log(config, agent=agent),
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

    async def stream(self) -> AsyncGenerator[AgentOutput, None]:
        """Run now and yield outputs as they come (instead of ``execute``)."""
        async for output in self.runner.stream(self._inputs):
            yield output

    async def _execute(self) -> None:
        async for output in self.stream():
            self._output.append({output.key: output.value})
        self._errors.extend(self.runner.errors)


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
