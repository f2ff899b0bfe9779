"""Decorators that declare an agent's actions and resources on its static methods.

>>> class TriageAgent(Agent):
...     @action(EventType.InputEvent)  # or InputEvent, or "_input_event"
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
from flink_agents.api.events.event_type import event_type_name, trigger_event_types
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


def _function_of(target: Any) -> Callable[..., Any]:
    func = target.__func__ if isinstance(target, (staticmethod, classmethod)) else target
    if not callable(func):
        raise TypeError(f"{target!r} is not a function")
    return func


def action(*event_types: type[Event] | str, target: Any = None) -> Callable[[F], F]:
    """Mark a static method ``(event, ctx) -> None`` (sync or async) as an action.

    It runs for every event whose type is one of ``event_types``: `EventType` constants,
    event classes or type strings (`flink_agents.api.events.event_type.event_type_name`
    says which strings, and why upstream's condition expressions are refused).
    Upstream's ``target=`` (an action body in another language) is not available here.
    """
    if target is not None:
        raise ValueError(
            "@action(target=...) runs an action body in another language (upstream's "
            "cross-language actions); only Python actions are available here"
        )
    names = trigger_event_types(event_types, owner="@action")

    def mark(target: F) -> F:
        func = _function_of(target)
        setattr(func, ACTION_MARK, names)
        setattr(func, "_trigger_conditions", tuple(names))  # upstream's attribute  # noqa: B010
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
