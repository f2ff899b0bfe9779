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

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from flink_agents.api.approvals import REQUIRES_APPROVAL_MARK
from flink_agents.api.events.event_type import (
    Trigger,
    classify_trigger,
    classify_triggers,
    event_type_name,
)
from flink_agents.api.function import Function, JavaFunction, PythonFunction
from flink_agents.api.resource import ResourceType
from flink_agents.api.tools.tool_parameter_injection import (
    INJECTED_ARGS_MARK,
    InjectedArg,
    normalize_injected_args,
    validate_injected_arg_names,
)

__all__ = [
    "ACTION_MARK",
    "RESOURCE_MARK",
    "action",
    "chat_model_connection",
    "chat_model_setup",
    "embedding_model_connection",
    "embedding_model_setup",
    "event_type_name",
    "mcp_server",
    "prompt",
    "skills",
    "tool",
    "vector_store",
]

ACTION_MARK = "__flink_agents_action__"
"""Attribute set on an action function: its triggers, as upstream's strings (see `action`)."""
RESOURCE_MARK = "__flink_agents_resource__"
"""Attribute set on a resource function: its `ResourceType`."""

F = TypeVar("F")


def _function_of(target: Any) -> Callable[..., Any]:
    func = target.__func__ if isinstance(target, (staticmethod, classmethod)) else target
    if not callable(func):
        raise TypeError(f"{target!r} is not a function")
    return func


def _check_target(target: Function, owner: str) -> None:
    """Upstream's checks of an action's ``target`` (its messages), naming ``owner``."""
    if isinstance(target, PythonFunction):
        if not target.module or not target.qualname:
            raise ValueError(
                f"PythonFunction target on '{owner}' must set both module and qualname"
            )
    elif isinstance(target, JavaFunction) and (not target.qualname or not target.method_name):
        raise ValueError(f"JavaFunction target on '{owner}' must set both qualname and method_name")


def _as_upstream_string(trigger: Trigger) -> Trigger:
    """A class as the string upstream would be given (its type, when that reads back as the
    same name); a string as it is."""
    if isinstance(trigger, str):
        return trigger
    name = trigger.EVENT_TYPE
    return name if classify_trigger(name) == name else trigger


def action(*trigger_conditions: Trigger, target: Any = None) -> Callable[[F], F]:
    """Mark a static method ``(event, ctx) -> None`` (sync or async) as an action.

    It runs for every event that one of ``trigger_conditions`` matches (OR across them):
    an `EventType` constant, an event class, an event type string, or a Boolean condition
    expression over the event's ``type`` and attributes (``"type == EventType.InputEvent
    && score > 5"``, checked when the plan is built). `classify_trigger` says which strings
    are names. Upstream's ``target=`` (a `Function` that is the action's body instead: a
    `PythonFunction`, or a `JavaFunction` that fails the plan, there being no Java here)
    is checked as upstream checks it and kept as ``_target``.
    """
    if target is not None and not isinstance(target, Function):
        raise TypeError(
            "action(target=...) must be an api-layer Function descriptor, "
            f"got {type(target).__name__}"
        )
    # What never can be a trigger is refused here; no trigger, or a blank one, when the
    # plan is built (naming the action), as upstream.
    given = [t for t in trigger_conditions if not (isinstance(t, str) and not t.strip())]
    if given:
        classify_triggers(given, owner="@action")
    triggers = tuple(_as_upstream_string(t) for t in trigger_conditions)

    def mark(decorated: F) -> F:
        func = _function_of(decorated)
        setattr(func, ACTION_MARK, list(triggers))
        setattr(func, "_trigger_conditions", triggers)  # upstream's attribute  # noqa: B010
        if target is not None:
            _check_target(target, func.__qualname__)
            setattr(func, "_target", target)  # upstream's attribute  # noqa: B010
        return decorated

    return mark


def _resource_marker(resource_type: ResourceType) -> Callable[[F], F]:
    def mark(target: F) -> F:
        setattr(_function_of(target), RESOURCE_MARK, resource_type)
        return target

    return mark


@overload
def tool(func: F, /) -> F: ...
@overload
def tool(
    *,
    injected_args: Mapping[str, InjectedArg | Mapping[str, Any]] | None = None,
    requires_approval: bool = False,
) -> Callable[[F], F]: ...
def tool(
    func: F | None = None,
    /,
    *,
    injected_args: Mapping[str, InjectedArg | Mapping[str, Any]] | None = None,
    requires_approval: bool = False,
) -> F | Callable[[F], F]:
    """Declare a function as a tool; its schema comes from its signature and docstring.

    ``@tool(injected_args={"tenant_id": InjectedArg.from_config("tenant_id")})`` hides
    those parameters from the model; the runtime fills them in (`InjectedArg`).
    ``@tool(requires_approval=True)``: a call waits for a person's `ToolApproval`
    before it runs (docs/approvals.md).
    """
    injected = normalize_injected_args(injected_args)

    def mark(target: F) -> F:
        function = _function_of(target)
        validate_injected_arg_names(function, injected)
        setattr(function, RESOURCE_MARK, ResourceType.TOOL)
        setattr(function, "_is_tool", True)  # upstream's attribute  # noqa: B010
        if injected:
            setattr(function, INJECTED_ARGS_MARK, injected)
        if requires_approval:
            setattr(function, REQUIRES_APPROVAL_MARK, True)
        return target

    return mark if func is None else mark(func)


def chat_model_connection(target: F) -> F:
    """A static method returning the `ResourceDescriptor` of a chat model connection."""
    return _resource_marker(ResourceType.CHAT_MODEL_CONNECTION)(target)


def chat_model_setup(target: F) -> F:
    """A static method returning the `ResourceDescriptor` of a chat model setup."""
    return _resource_marker(ResourceType.CHAT_MODEL)(target)


def prompt(target: F) -> F:
    """A static method returning a `Prompt` (or its `ResourceDescriptor`)."""
    return _resource_marker(ResourceType.PROMPT)(target)


def embedding_model_connection(target: F) -> F:
    """A static method returning the `ResourceDescriptor` of an embedding model connection
    (`flink_agents.api.embedding_models.embedding_model.BaseEmbeddingModelConnection`)."""
    return _resource_marker(ResourceType.EMBEDDING_MODEL_CONNECTION)(target)


def embedding_model_setup(target: F) -> F:
    """A static method returning the `ResourceDescriptor` of an embedding model setup
    (`flink_agents.api.embedding_models.embedding_model.BaseEmbeddingModelSetup`)."""
    return _resource_marker(ResourceType.EMBEDDING_MODEL)(target)


def vector_store(target: F) -> F:
    """A static method returning the `ResourceDescriptor` of a vector store
    (``ResourceName.VectorStore.CHROMA_VECTOR_STORE``, ``PGVECTOR_VECTOR_STORE``, or a
    `BaseVectorStore` class of your own)."""
    return _resource_marker(ResourceType.VECTOR_STORE)(target)


def mcp_server(target: F) -> F:
    """A static method returning the `ResourceDescriptor` of an MCP server
    (``flink_agents.integrations.mcp.MCPServer``): its tools and prompts join the agent's."""
    return _resource_marker(ResourceType.MCP_SERVER)(target)


def skills(target: F) -> F:
    """A static method returning a `flink_agents.api.skills.Skills`: where the agent's
    skills come from (docs/skills.md)."""
    return _resource_marker(ResourceType.SKILLS)(target)
