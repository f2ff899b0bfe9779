"""The state of agent runs, as JSON: what a checkpoint holds and a restore resumes.

`KeyState` is kept per key across runs; `RunState` is one run (one input), with the open
chat loops of the built-in chat action (`ChatLoopState`). Between
two `AgentEngine.step` calls a `RunState` is a consistent snapshot: serialize it
with `to_json`, restore it with `from_json` (in another process, after a failure)
and keep stepping.

In memory, pending events are `Event` objects and memory values may be pydantic
models; `to_json` writes events in their JSON form (``Event.to_dict``) and models
tagged with their class, so they come back as the same types. Memories are trees whose
nested objects are `MemoryNode`s (`flink_agents.runtime.memory`, ``MEMORY_FIELDS``).
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator

from flink_agents.api._trusted import trusted_instance
from flink_agents.api._values import AnyValue, ModelClassRef
from flink_agents.api.approvals import ApprovalRequest
from flink_agents.api.events.event import Event, EventId
from flink_agents.api.message import ChatMessage
from flink_agents.runtime.memory import MEMORY_FIELDS

__all__ = [
    "ApprovalDecision",
    "ApprovalWait",
    "ChatLoopState",
    "KeyState",
    "RunStart",
    "RunState",
    "trusted_model",
]

M = TypeVar("M", bound=BaseModel)


def trusted_model(cls: type[M], **fields: Any) -> M:
    """An instance of ``cls`` from values already known to be valid, with every field
    given (`model_construct` without its per-field default handling: this is on the
    path of every run step)."""
    return trusted_instance(cls, fields, set(fields))


def _event_from_any(value: Any) -> Event:
    if isinstance(value, Event):
        return value
    if isinstance(value, dict):
        return Event.from_dict(value)
    raise TypeError(f"a pending event is an Event or its dict form, got {type(value).__name__}")


def _event_to_dict(event: Event) -> dict[str, Any]:
    return event.to_dict()


PendingEvent = Annotated[
    Event,
    PlainValidator(_event_from_any),
    PlainSerializer(_event_to_dict, when_used="json"),
]


class KeyState(BaseModel):
    """What is kept for one key across its runs."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    short_term_memory: MEMORY_FIELDS = Field(default_factory=dict)
    """``ctx.short_term_memory`` (its root object's fields)."""
    next_seq: int = 0
    """Input sequence number the key's next run gets."""
    memory_touched_ms: dict[str, int] = Field(default_factory=dict)
    """With a short-term memory TTL: when each memory path was last touched (ms since the
    epoch); written only when there is one."""

    def to_json(self) -> str:
        """The key state as JSON."""
        if not self.short_term_memory and not self.memory_touched_ms:
            # A key whose runs keep no memory (written after every run): what the dump
            # below writes, without the serializer.
            return f'{{"short_term_memory":{{}},"next_seq":{int(self.next_seq)}}}'
        if self.memory_touched_ms:
            return self.model_dump_json()
        return self.model_dump_json(exclude=_NO_TIMES)

    def memory_json(self) -> str:
        """The key's short-term memory (with its TTL times) as JSON, for `restore_memory`."""
        return self.model_dump_json(include=_MEMORY)

    def restore_memory(self, memory_json: str) -> None:
        """Put the memory `memory_json` wrote back."""
        saved = KeyState.model_validate_json(memory_json)
        self.short_term_memory = saved.short_term_memory
        self.memory_touched_ms = saved.memory_touched_ms

    @classmethod
    def from_json(cls, text: str | bytes) -> KeyState:
        """A key state `to_json` wrote."""
        return cls.model_validate_json(text)


_NO_TIMES = {"memory_touched_ms"}
_MEMORY = {"short_term_memory", "memory_touched_ms"}


class RunStart(BaseModel):
    """What a run needs to be tried again from its start, or abandoned cleanly."""

    model_config = ConfigDict(extra="forbid")

    input: AnyValue
    """The run's input."""
    memory_json: str
    """The key's short-term memory when the run started (`KeyState.memory_json`)."""


class ApprovalDecision(BaseModel):
    """How one call that waited for approval was decided."""

    model_config = ConfigDict(extra="forbid")

    approved: bool
    reason: str | None = None
    decided_at_ms: int
    """When (ms since the epoch)."""
    timed_out: bool = False
    """Denied because ``tool-call.approval-timeout-s`` passed."""


class ApprovalWait(BaseModel):
    """A tool request whose calls wait for approval (`flink_agents.runtime.approvals`)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    event: PendingEvent
    """The `ToolRequestEvent`, processed again once every call is decided."""
    requests: list[ApprovalRequest]
    """What went out, one per call that needs approval, in call order."""
    decisions: dict[str, ApprovalDecision] = Field(default_factory=dict)
    """By call id, the calls decided so far."""
    requested_at_ms: int
    """When the run parked (ms since the epoch)."""
    deadline_ms: int | None = None
    """When undecided calls count as denied (``tool-call.approval-timeout-s``)."""


class ChatLoopState(BaseModel):
    """A chat request of the built-in chat action between two turns of its loop
    (`flink_agents.runtime.builtin_actions`): it waits for its tool responses."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    request_id: EventId
    """Id of the `ChatRequestEvent` (kept as the `UUID`, written as its text)."""
    model: str
    """Name of the chat model setup."""
    history: list[ChatMessage]
    """Request messages, assistant messages, tool messages (the setup's prompt is put
    before them at each call)."""
    prompt_args: dict[str, Any] = {}
    """The request's values for the prompt's placeholders."""
    output_schema: ModelClassRef = None
    """Where the final text is parsed into, if anywhere."""
    model_calls: int = 0
    """Model calls made for this request so far."""


class RunState(BaseModel):
    """One agent run: the events still to process, its memory and its outputs so far."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    key: AnyValue
    """The input's key."""
    seq: int
    """The input's sequence number within its key (0, 1, 2...)."""
    pending_events: list[PendingEvent] = Field(default_factory=list)
    """Events still to process, in order; the first is processed by the next step."""
    sensory_memory: MEMORY_FIELDS = Field(default_factory=dict)
    """``ctx.sensory_memory`` (its root object's fields): the agent's own, nothing of the
    runtime's."""
    chat_loops: dict[str, ChatLoopState] = Field(default_factory=dict)
    """By the id of its pending `ToolRequestEvent`, each chat request of the built-in chat
    action that waits for its tool responses."""
    outputs: list[AnyValue] = Field(default_factory=list)
    """Values of the `OutputEvent`s sent so far."""
    done: bool = False
    """True when no event is pending: the run is over."""
    action_steps: int = 0
    """Action executions completed so far (durable call keys use it)."""
    start: RunStart | None = None
    """Kept under `input-failure.policy: skip`: the input and the key's memory at the start."""
    restored_events: int = Field(default=0, exclude=True)
    """How many of the first pending events came from a snapshot and still need an action
    of the agent now running (set when a run is loaded; not written)."""
    path: list[str] = Field(default_factory=list, exclude=True)
    """The actions this run executed in this process, in order (not written)."""
    trace_parent: str | None = None
    """The W3C ``traceparent`` of the run's root span (``tracing.enabled``): a run resumed
    from this snapshot, or tried again, continues that trace (`flink_agents.runtime.tracing`)."""
    trace_span: Any = Field(default=None, exclude=True)
    """The run's open ``invoke_agent`` span in this process, if any (not written)."""
    approvals: dict[str, ApprovalWait] = Field(default_factory=dict)
    """By tool request id, the requests whose calls wait for a person's decision (the run
    is parked while one has an undecided call and no event is pending)."""

    def to_json(self) -> str:
        """The run as JSON."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        """A run `to_json` wrote."""
        run = cls.model_validate_json(text)
        if _LEGACY_CHAT_LOOPS in run.sensory_memory:
            _move_legacy_chat_loops(run)
        return run


_LEGACY_CHAT_LOOPS = "_flink_agents.chat_loops"
"""Where snapshots written before `RunState.chat_loops` keep the open chat loops: in the
run's sensory memory, under a key with a dot."""


def _move_legacy_chat_loops(run: RunState) -> None:
    """The chat loops of an older snapshot moved from its sensory memory to `chat_loops`,
    so a run checkpointed while a chat request waited for its tools still answers it."""
    loops = run.sensory_memory.pop(_LEGACY_CHAT_LOOPS)
    for request_id, loop in dict(loops or {}).items():
        state = loop if isinstance(loop, ChatLoopState) else ChatLoopState.model_validate(loop)
        run.chat_loops[request_id] = state
