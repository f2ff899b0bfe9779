"""The public API: everything a user imports is also importable from here."""

from flink_agents.api.agents.agent import Agent
from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.agents.types import OutputSchema
from flink_agents.api.approvals import ApprovalRequest, ToolApproval
from flink_agents.api.chat_message import (
    CANONICAL_FINISH_REASONS,
    AudioBlock,
    ChatMessage,
    ChatResult,
    ContentBlock,
    DocumentBlock,
    FinishReason,
    ImageBlock,
    MediaBlock,
    MessageRole,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResponse,
    ToolResultBlock,
    ToolResultContent,
    UnsupportedContentBlockError,
    Usage,
    VideoBlock,
    find_first_system_message,
    normalize_tool_output,
)
from flink_agents.api.chat_models.chat_model import (
    BaseChatModelConnection,
    BaseChatModelSetup,
    StructuredOutputStrategy,
    ToolSpec,
)
from flink_agents.api.chat_models.function_model import (
    FunctionChatModelConnection,
    RecordedChatCall,
    ScriptedChatModelConnection,
)
from flink_agents.api.core_options import (
    AgentConfigOptions,
    AgentConfiguration,
    AgentExecutionOptions,
    ConfigOption,
    ErrorHandlingStrategy,
    EventLogLevel,
    InputFailurePolicy,
    MemoryEventOptions,
    ShortTermMemoryTtlUpdate,
    ShortTermMemoryTtlVisibility,
)
from flink_agents.api.decorators import (
    action,
    chat_model_connection,
    chat_model_setup,
    mcp_server,
    prompt,
    tool,
)
from flink_agents.api.errors import (
    ChatModelError,
    ResourceUnavailableError,
    StoredClassRefusedError,
    UnknownOptionError,
    YamlDefinitionError,
)
from flink_agents.api.events.chat_event import ChatError, ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.api.events.memory_event import (
    MemoryEvent,
    SensoryReadEvent,
    SensoryWriteEvent,
    ShortTermReadEvent,
    ShortTermWriteEvent,
)
from flink_agents.api.events.run_event import AgentRunBeginEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.execution_environment import AgentBuilder, AgentsExecutionEnvironment
from flink_agents.api.function import JavaFunction, PythonFunction
from flink_agents.api.memory_object import MemoryObject, MemoryType
from flink_agents.api.memory_reference import MemoryRef
from flink_agents.api.metric_group import Counter, Gauge, Histogram, Meter, MetricGroup
from flink_agents.api.prompts.prompt import LocalPrompt, Prompt
from flink_agents.api.resource import (
    Resource,
    ResourceDescriptor,
    ResourceName,
    ResourceType,
    SerializableResource,
)
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.tools.tool import BaseTool, Tool, ToolMetadata, ToolType, as_tool_metadata
from flink_agents.api.tools.tool_parameter_injection import InjectedArg, ToolParameterSource

__all__ = [
    "CANONICAL_FINISH_REASONS",
    "Agent",
    "AgentBuilder",
    "AgentConfigOptions",
    "AgentConfiguration",
    "AgentExecutionOptions",
    "AgentRunBeginEvent",
    "AgentsExecutionEnvironment",
    "ApprovalRequest",
    "AudioBlock",
    "BaseChatModelConnection",
    "BaseChatModelSetup",
    "BaseTool",
    "ChatError",
    "ChatMessage",
    "ChatModelError",
    "ChatRequestEvent",
    "ChatResponseEvent",
    "ChatResult",
    "ConfigOption",
    "ContentBlock",
    "Counter",
    "DocumentBlock",
    "ErrorHandlingStrategy",
    "Event",
    "EventLogLevel",
    "EventType",
    "FinishReason",
    "FunctionChatModelConnection",
    "FunctionTool",
    "Gauge",
    "Histogram",
    "ImageBlock",
    "InjectedArg",
    "InputEvent",
    "InputFailurePolicy",
    "JavaFunction",
    "LocalPrompt",
    "MediaBlock",
    "MemoryEvent",
    "MemoryEventOptions",
    "MemoryObject",
    "MemoryRef",
    "MemoryType",
    "MessageRole",
    "Meter",
    "MetricGroup",
    "OutputEvent",
    "OutputSchema",
    "Prompt",
    "PythonFunction",
    "ReActAgent",
    "ReasoningBlock",
    "RecordedChatCall",
    "Resource",
    "ResourceDescriptor",
    "ResourceName",
    "ResourceType",
    "ResourceUnavailableError",
    "RunnerContext",
    "ScriptedChatModelConnection",
    "SensoryReadEvent",
    "SensoryWriteEvent",
    "SerializableResource",
    "ShortTermMemoryTtlUpdate",
    "ShortTermMemoryTtlVisibility",
    "ShortTermReadEvent",
    "ShortTermWriteEvent",
    "StoredClassRefusedError",
    "StructuredOutputStrategy",
    "TextBlock",
    "Tool",
    "ToolApproval",
    "ToolCallBlock",
    "ToolMetadata",
    "ToolParameterSource",
    "ToolRequestEvent",
    "ToolResponse",
    "ToolResponseEvent",
    "ToolResultBlock",
    "ToolResultContent",
    "ToolSpec",
    "ToolType",
    "UnknownOptionError",
    "UnsupportedContentBlockError",
    "Usage",
    "VideoBlock",
    "YamlDefinitionError",
    "action",
    "as_tool_metadata",
    "chat_model_connection",
    "chat_model_setup",
    "find_first_system_message",
    "mcp_server",
    "normalize_tool_output",
    "prompt",
    "tool",
]
