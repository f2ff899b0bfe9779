"""`EventType`: the built-in event types by name, and what an action may listen to.

``@action(EventType.InputEvent)``, ``@action(InputEvent)`` and ``@action("_input_event")``
are the same. `classify_trigger` sorts one trigger (an event class, an `EventType`
constant, a type string or a condition expression) into the event type it names or the
`TriggerExpression` it is; `classify_triggers` does it for a whole list. `Agent.add_action`,
`@action` and the plan all use them, so they accept the same triggers and refuse the same
mistakes.

A type string is a name as upstream spells them: dot-separated segments of ASCII letters,
digits, ``_`` and ``-``, each starting with a letter or ``_`` (``order.created``,
``order-created``). Any other name is written quoted, the quotes being part of the string:
``"'order:created'"`` listens to ``order:created``. Anything else is upstream's Boolean
condition expression (``"type == EventType.InputEvent && score > 5"``, CEL), checked when
the plan is built (`flink_agents.plan.trigger_condition`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.memory_event import (
    LongTermGetEvent,
    LongTermSearchEvent,
    LongTermUpdateEvent,
    SensoryReadEvent,
    SensoryWriteEvent,
    ShortTermReadEvent,
    ShortTermWriteEvent,
)
from flink_agents.api.events.run_event import AgentRunBeginEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent

__all__ = [
    "ClassifiedTriggers",
    "EventType",
    "Trigger",
    "TriggerExpression",
    "classify_trigger",
    "classify_triggers",
    "event_type_name",
    "trigger_event_types",
]


class EventType:
    """The built-in event types, by their class names (plain strings, as upstream).

    ``EventType.InputEvent == InputEvent.EVENT_TYPE == "_input_event"``.
    """

    InputEvent: str = InputEvent.EVENT_TYPE
    OutputEvent: str = OutputEvent.EVENT_TYPE
    ChatRequestEvent: str = ChatRequestEvent.EVENT_TYPE
    ChatResponseEvent: str = ChatResponseEvent.EVENT_TYPE
    ToolRequestEvent: str = ToolRequestEvent.EVENT_TYPE
    ToolResponseEvent: str = ToolResponseEvent.EVENT_TYPE
    ContextRetrievalRequestEvent: str = ContextRetrievalRequestEvent.EVENT_TYPE
    ContextRetrievalResponseEvent: str = ContextRetrievalResponseEvent.EVENT_TYPE
    ShortTermWriteEvent: str = ShortTermWriteEvent.EVENT_TYPE
    ShortTermReadEvent: str = ShortTermReadEvent.EVENT_TYPE
    SensoryWriteEvent: str = SensoryWriteEvent.EVENT_TYPE
    SensoryReadEvent: str = SensoryReadEvent.EVENT_TYPE
    LongTermUpdateEvent: str = LongTermUpdateEvent.EVENT_TYPE
    LongTermGetEvent: str = LongTermGetEvent.EVENT_TYPE
    LongTermSearchEvent: str = LongTermSearchEvent.EVENT_TYPE
    AgentRunBeginEvent: str = AgentRunBeginEvent.EVENT_TYPE


_SEGMENT = r"[A-Za-z_][A-Za-z0-9_-]*"
_BARE_NAME = re.compile(rf"{_SEGMENT}(?:\.{_SEGMENT})*")
_QUOTED = re.compile(
    r"""'([^'"\\ \t\n\x0b\f\r\x00-\x1f\x7f]+)'|"([^'"\\ \t\n\x0b\f\r\x00-\x1f\x7f]+)\""""
)
_EXPRESSION_WORDS = frozenset({"true", "false", "null"})
"""Bare names that are expressions (upstream's reserved literals); quoted, they are names."""
_TRIMMED = "".join(map(chr, range(33)))
"""What upstream trims from an entry (Java's ``String.trim``: controls and the space)."""


class TriggerExpression(NamedTuple):
    """A trigger that is no event type name: upstream's Boolean condition expression
    (``"type == EventType.InputEvent && score > 5"``), trimmed. It is checked and compiled
    when the plan is built (`flink_agents.plan.trigger_condition`)."""

    source: str


Trigger = type[Event] | str
"""What an action listens to: an event class, an `EventType` constant, a type string or a
condition expression."""


def classify_trigger(trigger: Trigger) -> str | TriggerExpression:
    """The event type ``trigger`` names, or the condition expression it is.

    ``trigger`` is an `Event` subclass (its ``EVENT_TYPE``) or a string, trimmed as upstream:
    a bare name (dot-separated segments of ASCII letters, digits, ``_`` and ``-``, each
    starting with a letter or ``_``) or a quoted one (``'order:created'``, no whitespace,
    quotes, backslashes or control characters inside) is an event type; anything else,
    and the bare ``true``, ``false``, ``null`` and ``EventType.*``, is an expression.
    `TypeError` (upstream's wording) for anything else, `ValueError` for a blank string.
    """
    if isinstance(trigger, type) and issubclass(trigger, Event):
        return trigger.EVENT_TYPE
    if not isinstance(trigger, str):
        # upstream's wording (an Event class is accepted here too)
        raise TypeError(f"action trigger condition must be a string, got {trigger!r}")
    text = trigger.strip(_TRIMMED)
    if not text:
        raise ValueError("a trigger condition cannot be empty")
    quoted = _QUOTED.fullmatch(text)
    if quoted:
        return quoted.group(1) or quoted.group(2)
    if (
        _BARE_NAME.fullmatch(text)
        and not text.startswith("EventType.")
        and text not in _EXPRESSION_WORDS
    ):
        return text
    return TriggerExpression(text)


def event_type_name(trigger: Trigger) -> str:
    """The ``type`` string an action listening to ``trigger`` is matched by (see
    `classify_trigger`); `ValueError` when ``trigger`` is a condition expression."""
    name = classify_trigger(trigger)
    if isinstance(name, TriggerExpression):
        hint = ""
        if name.source.startswith("EventType.") and hasattr(
            EventType, name.source.removeprefix("EventType.")
        ):
            hint = f"; pass the constant {name.source} (no quotes) to listen to that event type"
        raise ValueError(f"{name.source!r} is a condition expression, not an event type{hint}")
    return name


class ClassifiedTriggers(NamedTuple):
    """An action's triggers: the event types it listens to and its condition expressions
    (each in order, without repeats)."""

    event_types: tuple[str, ...]
    expressions: tuple[str, ...]


def classify_triggers(
    triggers: Iterable[Trigger] | Trigger, *, owner: str | None = None
) -> ClassifiedTriggers:
    """`classify_trigger` of each trigger; a single trigger may be given alone. ``owner``
    (``"action 'start'"``) prefixes error messages. `ValueError` when there is none."""
    items: list[Trigger] = [triggers] if isinstance(triggers, (str, type)) else list(triggers)
    prefix = f"{owner}: " if owner else ""
    if not items:
        raise ValueError(f"{prefix}an action needs at least one event type to listen to")
    names: list[str] = []
    expressions: list[str] = []
    for item in items:
        try:
            classified = classify_trigger(item)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{prefix}{exc}") from None
        if isinstance(classified, TriggerExpression):
            if classified.source not in expressions:
                expressions.append(classified.source)
        elif classified not in names:
            names.append(classified)
    return ClassifiedTriggers(tuple(names), tuple(expressions))


def trigger_event_types(
    triggers: Iterable[Trigger] | Trigger, *, owner: str | None = None
) -> list[str]:
    """The event types of ``triggers`` (`classify_triggers`); `ValueError` when one is a
    condition expression."""
    classified = classify_triggers(triggers, owner=owner)
    if classified.expressions:
        prefix = f"{owner}: " if owner else ""
        raise ValueError(
            f"{prefix}{classified.expressions[0]!r} is a condition expression, not an event type"
        )
    return list(classified.event_types)
