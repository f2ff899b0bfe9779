"""`Agent`: actions that react to events, and the resources they use.

Declare them on a subclass with decorators, or add them to an instance:

>>> class TriageAgent(Agent):
...     @action(InputEvent)
...     @staticmethod
...     async def start(event: Event, ctx: RunnerContext) -> None:
...         ctx.send_event(ChatRequestEvent(model="triage", messages=[...]))
...
>>> agent = Agent().add_action("start", [InputEvent], start).add_resource(
...     "triage", ResourceType.CHAT_MODEL, ResourceDescriptor(clazz=..., connection="...")
... )
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from flink_agents.api.decorators import ACTION_MARK, RESOURCE_MARK, event_type_name
from flink_agents.api.events.event import Event
from flink_agents.api.resource import (
    Resource,
    ResourceDescriptor,
    ResourceType,
)

if TYPE_CHECKING:
    from flink_agents.api.runner_context import RunnerContext

__all__ = ["ActionFunction", "Agent", "AgentAction"]

ActionFunction = Callable[[Event, "RunnerContext"], Awaitable[None] | None]
"""An action: ``(event, ctx) -> None``, sync or ``async def``."""


class AgentAction(NamedTuple):
    """An action as declared: its name, triggering event types, function and config."""

    name: str
    """Unique within the agent."""
    event_types: list[str]
    """The event ``type`` strings that trigger it."""
    func: ActionFunction
    """The function to run."""
    config: dict[str, Any]
    """Values the action reads through ``ctx.action_config``."""


class Agent:
    """Base class of agents: a set of actions and named resources."""

    def __init__(self) -> None:
        self._actions: dict[str, AgentAction] = {}
        self._resources: dict[ResourceType, dict[str, Any]] = {t: {} for t in ResourceType}
        self._collect_declared()

    @property
    def actions(self) -> dict[str, AgentAction]:
        """The actions, by name, in declaration order."""
        return self._actions

    @property
    def resources(self) -> dict[ResourceType, dict[str, Any]]:
        """The resources, by type and name: descriptors, instances or tool functions."""
        return self._resources

    def add_action(
        self,
        name: str,
        events: Sequence[type[Event] | str] | type[Event] | str,
        func: ActionFunction,
        **config: Any,
    ) -> Agent:
        """Add an action triggered by ``events``; ``config`` is its ``ctx.action_config``."""
        if name in self._actions:
            raise ValueError(f"action {name!r} is already defined")
        if not callable(func):
            raise TypeError(f"action {name!r}: {func!r} is not callable")
        if isinstance(events, (str, type)):
            events = [events]
        types = [event_type_name(e) for e in events]
        if not types:
            raise ValueError(f"action {name!r} needs at least one event type")
        self._actions[name] = AgentAction(name, types, func, dict(config))
        return self

    def add_resource(
        self,
        name: str,
        resource_type: ResourceType,
        instance: ResourceDescriptor | Resource | Callable[..., Any],
    ) -> Agent:
        """Add a named resource: a `ResourceDescriptor`, a resource instance (a `Prompt`,
        a tool), or for tools a plain function."""
        if name in self._resources[resource_type]:
            raise ValueError(f"{resource_type.value} {name!r} is already defined")
        is_tool_function = resource_type is ResourceType.TOOL and callable(instance)
        if not isinstance(instance, (ResourceDescriptor, Resource)) and not is_tool_function:
            raise TypeError(
                f"{resource_type.value} {name!r}: expected a ResourceDescriptor or a "
                f"resource instance, got {type(instance).__name__}"
            )
        self._resources[resource_type][name] = instance
        return self

    def _collect_declared(self) -> None:
        seen: set[str] = set()
        for cls in reversed(type(self).__mro__):
            for attr, value in vars(cls).items():
                func = value.__func__ if isinstance(value, staticmethod) else value
                if not (inspect.isfunction(func) or inspect.ismethod(func)):
                    continue
                event_types = getattr(func, ACTION_MARK, None)
                resource_type = getattr(func, RESOURCE_MARK, None)
                if event_types is None and resource_type is None:
                    continue
                if not isinstance(value, staticmethod):
                    raise TypeError(
                        f"{cls.__qualname__}.{attr}: decorate a @staticmethod "
                        "(actions and resources take no self)"
                    )
                if attr in seen:  # a subclass redefines it
                    self._actions.pop(attr, None)
                    for by_name in self._resources.values():
                        by_name.pop(attr, None)
                seen.add(attr)
                if event_types is not None:
                    self._actions[attr] = AgentAction(attr, list(event_types), func, {})
                if resource_type is not None:
                    self._resources[resource_type][attr] = _declared_resource(
                        func, resource_type, f"{cls.__qualname__}.{attr}"
                    )


def _declared_resource(func: Callable[..., Any], resource_type: ResourceType, where: str) -> Any:
    if resource_type is ResourceType.TOOL:
        return func
    value = func()
    if not isinstance(value, (ResourceDescriptor, Resource)):
        raise TypeError(
            f"{where} must return a ResourceDescriptor or a resource instance, "
            f"got {type(value).__name__}"
        )
    return value
