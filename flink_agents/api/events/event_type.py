"""`EventType`: the built-in event types by name, and what an action may listen to.

``@action(EventType.InputEvent)``, ``@action(InputEvent)`` and ``@action("_input_event")``
are the same. `event_type_name` turns one trigger (an event class, an `EventType` constant
or a type string) into the type string actions are matched by; `trigger_event_types` does
it for a whole list. `Agent.add_action` and `@action` both use them, so both accept the same
triggers and refuse the same mistakes.

A type string is a name as upstream spells them: dot-separated segments of ASCII letters,
digits, ``_`` and ``-``, each starting with a letter or ``_`` (``order.created``,
``order-created``). Any other name is written quoted, the quotes being part of the string:
``"'order:created'"`` listens to ``order:created``. Upstream's condition expressions
(``"type == EventType.InputEvent && score > 5"``) are not supported: listen to the type and
test the attribute in the action.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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

__all__ = ["EventType", "event_type_name", "trigger_event_types"]


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


_NEVER_SENT: dict[str, str] = {}
"""Upstream event types nothing here sends: listening to one is refused, with the reason."""

_SEGMENT = r"[A-Za-z_][A-Za-z0-9_-]*"
_BARE_NAME = re.compile(rf"{_SEGMENT}(?:\.{_SEGMENT})*")
_QUOTED = re.compile(r"""'([^'"\\\s\x00-\x1f\x7f]+)'|"([^'"\\\s\x00-\x1f\x7f]+)\"""")
_EXPRESSION_HINT = (
    "upstream's condition expressions are not supported here: listen to the event type "
    "and test the attribute in the action (if event.get_attr('score') > 5: ...)"
)


def _from_string(text: str) -> str:
    text = text.strip()  # upstream trims an entry before classifying it
    if not text:
        raise ValueError("an event type cannot be empty")
    quoted = _QUOTED.fullmatch(text)
    if quoted:
        return quoted.group(1) or quoted.group(2)
    if text.startswith("EventType."):
        member = text.removeprefix("EventType.")
        if hasattr(EventType, member):
            raise ValueError(
                f"{text!r} is upstream's expression form; pass the constant "
                f"EventType.{member} (no quotes) to listen to that event type"
            )
        raise ValueError(f"EventType has no member {member!r}")
    if _BARE_NAME.fullmatch(text):
        return text
    if text[:1] in "'\"":
        raise ValueError(
            f"{text!r}: a quoted event type must be non-empty, without whitespace, "
            "quotes, backslashes or control characters"
        )
    raise ValueError(
        f"{text!r} is not an event type name (letters, digits, '_', '-' and dots; quote "
        f"any other name, e.g. \"'order:created'\"); {_EXPRESSION_HINT}"
    )


def event_type_name(trigger: type[Event] | str) -> str:
    """The ``type`` string an action listening to ``trigger`` is matched by.

    ``trigger`` is an `Event` subclass (its ``EVENT_TYPE``), an `EventType` constant or a
    type string (see the module doc for names and quoting; surrounding whitespace is
    trimmed, as upstream). Raises `TypeError` for anything
    else and `ValueError` for an empty or malformed name, an upstream condition expression,
    or a type nothing here ever sends (context retrieval, long-term memory), naming why.
    """
    if isinstance(trigger, str):
        name = _from_string(trigger)
    elif isinstance(trigger, type) and issubclass(trigger, Event):
        name = trigger.EVENT_TYPE
    else:
        # upstream's wording (an Event class is accepted here too)
        raise TypeError(f"action trigger condition must be a string, got {trigger!r}")
    reason = _NEVER_SENT.get(name)
    if reason is not None:
        raise ValueError(f"an action cannot listen to {name!r} events: {reason}")
    return name


def trigger_event_types(
    triggers: Iterable[type[Event] | str] | type[Event] | str, *, owner: str | None = None
) -> list[str]:
    """`event_type_name` of each trigger, in order and without repeats; a single trigger may
    be given alone. ``owner`` (``"action 'start'"``) prefixes error messages. `ValueError`
    when there is none."""
    items: list[type[Event] | str] = (
        [triggers] if isinstance(triggers, (str, type)) else list(triggers)
    )
    prefix = f"{owner}: " if owner else ""
    if not items:
        raise ValueError(f"{prefix}an action needs at least one event type to listen to")
    names: list[str] = []
    for item in items:
        try:
            name = event_type_name(item)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{prefix}{exc}") from None
        if name not in names:
            names.append(name)
    return names
