"""`RunnerContext`: what an action gets besides its event.

The runtime (local runner or PyFlink operator) provides the implementation; an
action only talks to this interface, so it runs unchanged on either.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from flink_agents.api.events.event import Event
from flink_agents.api.memory_object import MemoryObject
from flink_agents.api.metric_group import MetricGroup
from flink_agents.api.resource import Resource, ResourceType

if TYPE_CHECKING:
    from flink_agents.api.core_options import AgentConfiguration
    from flink_agents.api.memory.long_term_memory import BaseLongTermMemory

__all__ = ["RunnerContext"]

T = TypeVar("T")


class RunnerContext(ABC):
    """The running action's view of its agent run."""

    @property
    @abstractmethod
    def key(self) -> Any:
        """The key of the input this run processes."""

    @abstractmethod
    def send_event(self, event: Event) -> None:
        """Send an event: actions subscribed to its type run next; an `OutputEvent`
        goes downstream. The runner sets its ``id`` and lineage."""

    @abstractmethod
    def get_resource(
        self, name: str, type: ResourceType, metric_group: MetricGroup | None = None
    ) -> Resource:
        """The agent's resource of that name and type (built on first use, then shared).

        Raises `KeyError` when there is none. ``metric_group`` is upstream's parameter and is
        not used: resources are shared by all actions.
        """

    @property
    @abstractmethod
    def action_config(self) -> dict[str, Any]:
        """The config the running action was added with."""

    def get_action_config_value(self, key: str, default: Any = None) -> Any:
        """One value of `action_config`."""
        return self.action_config.get(key, default)

    @property
    @abstractmethod
    def sensory_memory(self) -> MemoryObject:
        """Memory of this run only, cleared when the run ends (the root `MemoryObject`).
        Values must be JSON-able (pydantic models too): the run may be checkpointed between
        steps."""

    @property
    @abstractmethod
    def short_term_memory(self) -> MemoryObject:
        """Memory of this key, kept across its runs (the root `MemoryObject`; see
        ``short-term-memory.state-ttl.ms`` for expiry). Values must be JSON-able."""

    @property
    def long_term_memory(self) -> BaseLongTermMemory:
        """Memory that outlives runs, in named sets searched by meaning, scoped to this
        run's key (docs/memory.md). The options in `LongTermMemoryOptions` set it up; a
        runner without one raises `NotImplementedError`."""
        raise NotImplementedError(f"{type(self).__name__} has no long-term memory")

    @property
    @abstractmethod
    def config(self) -> AgentConfiguration:
        """The agent's options."""

    @property
    @abstractmethod
    def agent_metric_group(self) -> MetricGroup:
        """Metrics shared by all actions of the agent."""

    @property
    @abstractmethod
    def action_metric_group(self) -> MetricGroup:
        """Metrics of the running action."""

    @abstractmethod
    def durable_execute(
        self,
        func: Callable[..., T],
        *args: Any,
        reconciler: Callable[..., T] | None = None,
        **kwargs: Any,
    ) -> T:
        """Call ``func(*args, **kwargs)`` (a sync function) once across failures.

        With a durable call log configured, the outcome is recorded, and a run replayed
        after a failure gets the recorded outcome instead of calling again; a call that
        began but has no outcome is settled by ``reconciler(*args, **kwargs)`` when given.
        Without one, it just calls. Arguments and result must be JSON-able. Blocks the
        calling thread: use it from sync actions; async actions use
        `durable_execute_async`.
        """

    @abstractmethod
    def durable_execute_async(
        self,
        func: Callable[..., Any],
        *args: Any,
        reconciler: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> Awaitable[Any]:
        """`durable_execute` for async actions: ``await ctx.durable_execute_async(f, ...)``.

        ``func`` may be async or sync (a sync one runs in a worker thread). Calls are
        numbered in the order this method is called, so concurrent calls started in a
        fixed order (``asyncio.gather``) replay correctly.
        """
