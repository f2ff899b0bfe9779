"""Decorators that declare an agent's actions and resources on its static methods.

>>> class TriageAgent(Agent):
...     @action(InputEvent)
...     @staticmethod
...     def start(event: Event, ctx: RunnerContext) -> None: ...
...
...     @chat_model_setup
...     @staticmethod
...     def triage_model() -> ResourceDescriptor: ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from flink_agents.api.events.event import Event
from flink_agents.api.resource import ResourceType

__all__ = [
    "ACTION_MARK",
    "RESOURCE_MARK",
    "action",
    "chat_model_connection",
    "chat_model_setup",
    "event_type_name",
    "prompt",
    "tool",
]

ACTION_MARK = "__flink_agents_action__"
"""Attribute set on an action function: the event types that trigger it."""
RESOURCE_MARK = "__flink_agents_resource__"
"""Attribute set on a resource function: its `ResourceType`."""

F = TypeVar("F")


def event_type_name(event_type: type[Event] | str) -> str:
    """The ``type`` string of an event class (or the string itself)."""
    if isinstance(event_type, str):
        if not event_type:
            raise ValueError("an event type name cannot be empty")
        return event_type
    if isinstance(event_type, type) and issubclass(event_type, Event):
        return event_type.EVENT_TYPE
    raise TypeError(f"{event_type!r} is neither an Event class nor an event type name")


def _function_of(target: Any) -> Callable[..., Any]:
    func = target.__func__ if isinstance(target, (staticmethod, classmethod)) else target
    if not callable(func):
        raise TypeError(f"{target!r} is not a function")
    return func


def action(*event_types: type[Event] | str) -> Callable[[F], F]:
    """Mark a static method ``(event, ctx) -> None`` (sync or async) as an action.

    It runs for every event whose type is one of ``event_types``.
    """
    if not event_types:
        raise ValueError("@action needs at least one event type")
    names = [event_type_name(t) for t in event_types]

    def mark(target: F) -> F:
        setattr(_function_of(target), ACTION_MARK, names)
        return target

    return mark


def _resource_marker(resource_type: ResourceType) -> Callable[[F], F]:
    def mark(target: F) -> F:
        setattr(_function_of(target), RESOURCE_MARK, resource_type)
        return target

    return mark


def tool(target: F) -> F:
    """Declare a function as a tool; its schema comes from its signature and docstring."""
    return _resource_marker(ResourceType.TOOL)(target)


def chat_model_connection(target: F) -> F:
    """A static method returning the `ResourceDescriptor` of a chat model connection."""
    return _resource_marker(ResourceType.CHAT_MODEL_CONNECTION)(target)


def chat_model_setup(target: F) -> F:
    """A static method returning the `ResourceDescriptor` of a chat model setup."""
    return _resource_marker(ResourceType.CHAT_MODEL)(target)


def prompt(target: F) -> F:
    """A static method returning a `Prompt` (or its `ResourceDescriptor`)."""
    return _resource_marker(ResourceType.PROMPT)(target)
