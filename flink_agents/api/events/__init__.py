"""Events: what actions consume and send."""

from flink_agents.api.events.chat_event import ChatError, ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import Event, InputEvent, OutputEvent, event_class_for
from flink_agents.api.events.event_type import EventType, event_type_name, trigger_event_types
from flink_agents.api.events.memory_event import (
    LongTermGetEvent,
    LongTermSearchEvent,
    LongTermUpdateEvent,
    MemoryEvent,
    SensoryReadEvent,
    SensoryWriteEvent,
    ShortTermReadEvent,
    ShortTermWriteEvent,
)
from flink_agents.api.events.run_event import AgentRunBeginEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent

__all__ = [
    "AgentRunBeginEvent",
    "ChatError",
    "ChatRequestEvent",
    "ChatResponseEvent",
    "ContextRetrievalRequestEvent",
    "ContextRetrievalResponseEvent",
    "Event",
    "EventType",
    "InputEvent",
    "LongTermGetEvent",
    "LongTermSearchEvent",
    "LongTermUpdateEvent",
    "MemoryEvent",
    "OutputEvent",
    "SensoryReadEvent",
    "SensoryWriteEvent",
    "ShortTermReadEvent",
    "ShortTermWriteEvent",
    "ToolRequestEvent",
    "ToolResponseEvent",
    "event_class_for",
    "event_type_name",
    "trigger_event_types",
]
