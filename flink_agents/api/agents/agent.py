"""`Agent`: actions that react to events, and the resources they use.

Declare them on a subclass with decorators, or add them to an instance (upstream's
signatures):

>>> class TriageAgent(Agent):
...     @action(EventType.InputEvent)
...     @staticmethod
...     async def start(event: Event, ctx: RunnerContext) -> None:
...         ctx.send_event(ChatRequestEvent(model="triage", messages=[...]))
...
>>> agent = Agent().add_action("start", [EventType.InputEvent], start).add_resource(
...     "triage", ResourceType.CHAT_MODEL, ResourceDescriptor(clazz=..., connection="...")
... )

``agent.actions`` maps each action's name to ``(trigger_conditions, func, config)`` as
upstream: the triggers as given, the function as a `PythonFunction` (which holds the
function itself) and the config, None when there is none. The triggers are checked
when the plan is built.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from flink_agents.api.decorators import ACTION_MARK, RESOURCE_MARK
from flink_agents.api.events.event import Event
from flink_agents.api.events.event_type import Trigger
from flink_agents.api.function import Function, PythonFunction
from flink_agents.api.resource import (
    Resource,
    ResourceDescriptor,
    ResourceType,
)

if TYPE_CHECKING:
    from flink_agents.api.runner_context import RunnerContext

__all__ = ["STRUCTURED_OUTPUT", "ActionFunction", "Agent", "AgentAction", "Trigger"]

STRUCTURED_OUTPUT = "structured_output"
"""Where a parsed structured answer is found (upstream's key; here the
`ChatResponseEvent` attribute of that name)."""

ActionFunction = Callable[[Event, "RunnerContext"], Awaitable[None] | None]
"""An action: ``(event, ctx) -> None``, sync or ``async def``."""


class AgentAction(NamedTuple):
    """An action as declared: ``(trigger_conditions, func, config)``, as upstream."""

    trigger_conditions: list[Trigger]
    """What triggers it, as given (checked when the plan is built)."""
    func: Function
    """Its function: a `PythonFunction` (``func.as_callable()`` is the function)."""
    config: dict[str, Any] | None
    """Values the action reads through ``ctx.action_config``; None when there are none."""


class Agent:
    """Base class of agents: a set of actions and named resources."""

    def __init__(self) -> None:
        self._actions: dict[str, AgentAction] = {}
        self._resources: dict[ResourceType, dict[str, Any]] = {t: {} for t in ResourceType}
        self._collect_declared()

    @property
    def actions(self) -> dict[str, AgentAction]:
        """The actions by name, in declaration order (decorated ones first):
        ``(trigger_conditions, func, config)`` each."""
        return self._actions

    @property
    def resources(self) -> dict[ResourceType, dict[str, Any]]:
        """The resources, by type and name: descriptors, instances or tool functions."""
        return self._resources

    def add_action(
        self,
        name: str,
        trigger_conditions: Sequence[Trigger] | Trigger,
        func: ActionFunction | Function,
        **config: Any,
    ) -> Agent:
        """Add an action listening to ``trigger_conditions`` (event classes, `EventType`
        constants, type strings or condition expressions; a single one may be given
        alone); ``config`` is its
        ``ctx.action_config``. ``func`` is a function or a `PythonFunction`.

        `ValueError` when the name is taken, `TypeError` when ``func`` is neither; the
        triggers are checked when the plan is built.
        """
        if name in self._actions:
            raise ValueError(f"action {name!r} is already defined")
        if isinstance(func, Function):
            function = func
        elif callable(func):
            function = PythonFunction.from_callable(func)
        else:
            raise TypeError(f"action {name!r}: {func!r} is not callable")
        if isinstance(trigger_conditions, (str, type)):
            triggers: list[Trigger] = [trigger_conditions]
        else:
            triggers = list(trigger_conditions)
        self._actions[name] = AgentAction(triggers, function, dict(config) if config else None)
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
                    # upstream's @action(target=...): that function is the body
                    body = getattr(func, "_target", None) or PythonFunction.from_callable(func)
                    self._actions[attr] = AgentAction(list(event_types), body, None)
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
