"""`ActionContext`: the `RunnerContext` one action execution gets from the engine.

It collects the events the action sends (the engine commits them when the step
ends), gives ids to them deterministically from the run's position (so a replayed
run sends events with the same ids), and numbers the action's durable calls.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from flink_agents.api._callables import is_async_callable
from flink_agents.api._trusted import trusted_instance
from flink_agents.api._values import check_state_value
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.event import Event
from flink_agents.api.metric_group import MetricGroup
from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.runtime.keys import encode_key

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from flink_agents.plan.agent_plan import ActionSpec
    from flink_agents.runtime.durable.call_log import SupportsDurableExecute
    from flink_agents.runtime.run_state import KeyState, RunState

__all__ = ["ActionContext", "event_id_for", "key_digest"]

T = TypeVar("T")


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


_cached_digest = functools.lru_cache(maxsize=16384)(_digest)


def key_digest(key: Any) -> str:
    """A short, stable digest of a key (the same in every process)."""
    # Every event id of a run embeds it: remember recent keys' digests.
    return _cached_digest(repr(key))


def event_id_for(key: Any, seq: int, position: str) -> str:
    """The id of the event at ``position`` of run ``(key, seq)``: the same on every replay.

    ``<key digest>-<seq>-<position>``, where the position of an event an action sent is
    ``<action step>.<send index>``.
    """
    return f"{key_digest(key)}-{seq}-{position}"


def _sent_copy(event: Event, lineage: dict[str, Any]) -> Event:
    """A shallow copy of ``event`` (its own attributes dict) with ``lineage`` set, made
    without re-validation; the lineage is also written to ``event`` itself."""
    fields = cast(dict[str, Any], event.__dict__)
    fields.update(lineage)
    return trusted_instance(
        type(event),
        {**fields, "attributes": dict(fields["attributes"])},
        set(event.__pydantic_fields_set__),
    )


class Engine(Protocol):
    """What a context needs from the engine (`AgentEngine`)."""

    config: AgentConfiguration
    metrics: MetricGroup
    durable: SupportsDurableExecute | None

    @property
    def executor(self) -> ThreadPoolExecutor: ...

    def get_resource(self, name: str, type: ResourceType) -> Resource: ...


class ActionContext(RunnerContext):
    """The context of one action execution (``step`` is the run's ``action_steps`` when
    the action started)."""

    __slots__ = (
        "_call_index",
        "_engine",
        "_id_prefix",
        "_key_state",
        "_run",
        "event",
        "sent",
        "spec",
        "step",
    )

    def __init__(
        self,
        engine: Engine,
        run: RunState,
        key_state: KeyState,
        spec: ActionSpec,
        event: Event,
        step: int,
    ) -> None:
        self._engine = engine
        self._run = run
        self._key_state = key_state
        self.spec = spec
        self.event = event
        self.step = step
        self.sent: list[Event] = []
        self._call_index = 0
        self._id_prefix: str | None = None

    # ------------------------------------------------------------------ identity

    @property
    def key(self) -> Any:
        return self._run.key

    @property
    def seq(self) -> int:
        """The run's input sequence number within its key."""
        return self._run.seq

    @property
    def action_name(self) -> str:
        """Name of the running action."""
        return self.spec.name

    # ------------------------------------------------------------------ events

    def send_event(self, event: Event) -> None:
        if not isinstance(event, Event):
            raise TypeError(f"send_event takes an Event, got {type(event).__name__}")
        try:  # refused here, the same on every runner (not when a checkpoint writes it)
            check_state_value(event.attributes, "attribute")
        except TypeError as exc:
            raise TypeError(
                f"key {self._run.key!r}: a {event.type} event cannot be sent: {exc}"
            ) from None
        prefix = self._id_prefix
        if prefix is None:
            run = self._run
            prefix = self._id_prefix = f"{key_digest(run.key)}-{run.seq}-{self.step}."
        lineage = {
            "id": f"{prefix}{len(self.sent)}",
            "upstream_event_id": self.event.id,
            "upstream_action_name": self.spec.name,
        }
        # The sender keeps its object (with the id it was given); the run holds a copy.
        self.sent.append(_sent_copy(event, lineage))

    # ------------------------------------------------------------------ resources, memory

    def get_resource(self, name: str, type: ResourceType) -> Resource:
        return self._engine.get_resource(name, type)

    @property
    def action_config(self) -> dict[str, Any]:
        return dict(self.spec.config)

    def get_action_config_value(self, key: str, default: Any = None) -> Any:
        return self.spec.config.get(key, default)

    @property
    def sensory_memory(self) -> MutableMapping[str, Any]:
        return self._run.sensory_memory

    @property
    def short_term_memory(self) -> MutableMapping[str, Any]:
        return self._key_state.short_term_memory

    @property
    def config(self) -> AgentConfiguration:
        return self._engine.config

    @property
    def agent_metric_group(self) -> MetricGroup:
        return self._engine.metrics

    @property
    def action_metric_group(self) -> MetricGroup:
        return self._engine.metrics.get_sub_group("action").get_sub_group(self.spec.name)

    # ------------------------------------------------------------------ durable calls

    def _call_key(self, call_index: int) -> Any:
        from flink_agents.runtime.durable.records import DurableCallKey

        # The key's typed text: keys 1 and "1" must never share records (None has no text
        # and is refused with TypeError before anything is recorded or run).
        return DurableCallKey(
            agent_key=encode_key(self._run.key),
            seq=self._run.seq,
            step=self.step,
            action=self.spec.name,
            call_index=call_index,
        )

    @property
    def next_call_index(self) -> int:
        """The call index the action's next durable call will get."""
        return self._call_index

    async def forget_durable_calls(self, first_call_index: int) -> None:
        """Drop the records of this action's durable calls from ``first_call_index`` on (and
        every later record of the run): after a restart those calls are made again."""
        log = self._engine.durable
        if log is not None:
            await log.forget(self._call_key(first_call_index))

    def _take_call_index(self) -> int:
        index = self._call_index
        self._call_index += 1
        return index

    def durable_execute(
        self,
        func: Callable[..., T],
        *args: Any,
        reconciler: Callable[..., T] | None = None,
        **kwargs: Any,
    ) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "durable_execute blocks the event loop; in an async action use "
                "`await ctx.durable_execute_async(...)`"
            )
        if is_async_callable(func):
            raise TypeError("durable_execute takes a sync function; use durable_execute_async")
        index = self._take_call_index()
        log = self._engine.durable
        if log is None:
            return func(*args, **kwargs)
        return log.execute_sync(self._call_key(index), func, args, kwargs, reconciler)

    def durable_execute_async(
        self,
        func: Callable[..., Any],
        *args: Any,
        reconciler: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> Awaitable[Any]:
        # The index is taken now, not when awaited: calls started in a fixed order keep
        # their numbers however they interleave.
        index = self._take_call_index()
        if self._engine.durable is None and is_async_callable(func):
            return func(*args, **kwargs)  # nothing to record: the call itself
        return self._durable_async(index, func, args, kwargs, reconciler)

    async def _durable_async(
        self,
        index: int,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        reconciler: Callable[..., Any] | None,
    ) -> Any:
        log = self._engine.durable
        if log is not None:
            return await log.execute(self._call_key(index), func, args, kwargs, reconciler)
        if is_async_callable(func):
            return await func(*args, **kwargs)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(
            self._engine.executor, functools.partial(func, *args, **kwargs)
        )
        if inspect.isawaitable(result):
            result = await result
        return result
