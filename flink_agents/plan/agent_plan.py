"""`AgentPlan`: an agent compiled for running: actions by trigger, resource specs.

A plan holds functions, descriptors and resource instances only (no live clients),
so it pickles (cloudpickle for agents defined in a script or a test) and ships to
Flink workers. The runtime adds its built-in chat and tool actions when it compiles an
agent (``runtime_actions``); the plan itself knows nothing of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from flink_agents.api._callables import is_async_callable
from flink_agents.api.agents.agent import ActionFunction, Agent
from flink_agents.api.events.event import Event
from flink_agents.api.events.event_type import classify_triggers
from flink_agents.api.resource import (
    Resource,
    ResourceDescriptor,
    ResourceType,
)
from flink_agents.plan.trigger_condition import TriggerCondition

__all__ = ["ActionSpec", "AgentPlan", "ConditionErrorHandler", "ResourceSpec"]

ResourceSpec = ResourceDescriptor | Resource | Callable[..., Any]
"""How a resource is declared: a descriptor, an instance, or (tools) a function."""


class ActionSpec(NamedTuple):
    """One action of a plan."""

    name: str
    """Unique within the plan."""
    event_types: tuple[str, ...]
    """Event ``type`` strings that trigger it."""
    func: ActionFunction
    """What runs."""
    config: Mapping[str, Any]
    """Its ``ctx.action_config``."""
    is_async: bool
    """True for an ``async def`` (awaited on the loop), False for a sync function
    (run in a worker thread)."""
    conditions: tuple[TriggerCondition, ...] = ()
    """Condition expressions that also trigger it (any one true)."""


ConditionErrorHandler = Callable[[ActionSpec, TriggerCondition, Exception], None]
"""Told of a condition that could not be evaluated on an event (it counts as false); it
may raise instead."""


def _check_descriptor(descriptor: ResourceDescriptor) -> None:
    """An unknown option of a descriptor, or a class upstream has and this project does
    not (`ResourceUnavailableError`), fails the plan (on the client, before a job is
    submitted), not its first use on a worker. A class that cannot be imported here is
    checked where it is built."""
    try:
        descriptor.check()
    except ImportError:
        return


def _check_resources(specs: Mapping[str, ResourceSpec]) -> None:
    for spec in specs.values():
        if isinstance(spec, ResourceDescriptor):
            _check_descriptor(spec)


class AgentPlan:
    """Actions by the event types that trigger them, and resource specs by type and name."""

    def __init__(
        self,
        actions: Mapping[str, ActionSpec],
        resources: Mapping[ResourceType, Mapping[str, ResourceSpec]],
    ) -> None:
        self.actions: dict[str, ActionSpec] = dict(actions)
        self.resources: dict[ResourceType, dict[str, ResourceSpec]] = {
            t: dict(resources.get(t, {})) for t in ResourceType
        }
        triggers: dict[str, list[ActionSpec]] = {}
        for spec in self.actions.values():
            for event_type in spec.event_types:
                triggers.setdefault(event_type, []).append(spec)
        self.triggers: dict[str, tuple[ActionSpec, ...]] = {
            t: tuple(specs) for t, specs in triggers.items()
        }
        self.conditioned: tuple[ActionSpec, ...] = tuple(
            spec for spec in self.actions.values() if spec.conditions
        )
        """The actions with condition expressions, in plan order."""

    @classmethod
    def from_agent(
        cls,
        agent: Agent,
        *,
        shared_resources: Mapping[ResourceType, Mapping[str, ResourceSpec]] | None = None,
        runtime_actions: Iterable[ActionSpec] = (),
    ) -> AgentPlan:
        """Compile ``agent``. ``shared_resources`` (from the execution environment) fill in
        names the agent does not define; ``runtime_actions`` (the runtime's built-in chat
        and tool actions) come first, and their names are reserved: an agent action of the
        same name raises `ValueError`.

        Raises `TriggerConditionError` (a `ValueError`) for a condition expression that
        cannot be used, naming the action and the expression, `ValueError` for an action
        with no trigger, and `ResourceUnavailableError`
        for what upstream has and this project does not: a resource of a type with no
        implementation here (skills), a `ResourceName` whose provider is not
        here, a Java function."""
        actions: dict[str, ActionSpec] = {spec.name: spec for spec in runtime_actions}
        for name, (triggers, function, config) in agent.actions.items():
            if name in actions:
                raise ValueError(f"action name {name!r} is reserved")
            func = function.as_callable()
            classified = classify_triggers(triggers, owner=f"action {name!r}")
            actions[name] = ActionSpec(
                name=name,
                event_types=classified.event_types,
                func=func,
                config=dict(config or {}),
                is_async=is_async_callable(func),
                conditions=tuple(TriggerCondition(s, name) for s in classified.expressions),
            )
        resources: dict[ResourceType, dict[str, ResourceSpec]] = {}
        for resource_type in ResourceType:
            merged: dict[str, ResourceSpec] = dict((shared_resources or {}).get(resource_type, {}))
            merged.update(agent.resources.get(resource_type, {}))
            _check_resources(merged)
            resources[resource_type] = merged
        return cls(actions, resources)

    def actions_for(self, event_type: str) -> tuple[ActionSpec, ...]:
        """The actions that listen to this event type, in declaration order (not those
        whose condition expressions an event may satisfy: `actions_for_event`)."""
        return self.triggers.get(event_type, ())

    def may_trigger(self, event_type: str) -> bool:
        """Whether an event of this type may trigger an action: one listens to the type,
        or one has a condition expression (which may test anything)."""
        return bool(self.triggers.get(event_type)) or bool(self.conditioned)

    def actions_for_event(
        self, event: Event, on_condition_error: ConditionErrorHandler
    ) -> tuple[ActionSpec, ...]:
        """The actions ``event`` triggers, each once: those listening to its type first,
        then those one of whose condition expressions it satisfies, in plan order (as
        upstream). A condition that cannot be evaluated counts as false after
        ``on_condition_error`` is told (which may raise instead)."""
        by_type = self.triggers.get(event.type, ())
        if not self.conditioned:
            return by_type
        matched = list(by_type)
        names = {spec.name for spec in by_type}
        for spec in self.conditioned:
            if spec.name in names:
                continue
            for condition in spec.conditions:
                try:
                    hit = condition.matches(event)
                except Exception as exc:  # the handler decides
                    on_condition_error(spec, condition, exc)
                    hit = False
                if hit:
                    matched.append(spec)
                    break
        return tuple(matched)

    def resource_spec(self, name: str, resource_type: ResourceType) -> ResourceSpec:
        """How the named resource is declared; `KeyError` when it is not."""
        try:
            return self.resources[resource_type][name]
        except KeyError:
            known = sorted(self.resources.get(resource_type, {}))
            raise KeyError(
                f"no {resource_type.value} resource named {name!r} (known: {known})"
            ) from None

    def __repr__(self) -> str:
        counts = {t.value: len(r) for t, r in self.resources.items() if r}
        return f"AgentPlan(actions={list(self.actions)}, resources={counts})"
