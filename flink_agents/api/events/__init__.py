"""Events: what actions consume and send."""

from flink_agents.api.events.chat_event import ChatError, ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent, event_class_for
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent

__all__ = [
    "ChatError",
    "ChatRequestEvent",
    "ChatResponseEvent",
    "Event",
    "InputEvent",
    "OutputEvent",
    "ToolRequestEvent",
    "ToolResponseEvent",
    "event_class_for",
]
