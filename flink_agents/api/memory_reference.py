"""`MemoryRef`: a reference to a field in sensory or short-term memory, as upstream.

``ref = ctx.sensory_memory.set("draft", text)`` returns one; send it in an event instead of
the value and read it back later with ``ctx.sensory_memory.get(ref)`` or
``ref.resolve(ctx)``. A reference is a small pydantic model, so it travels in events and
state as JSON.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from flink_agents.api.memory_object import MemoryType

if TYPE_CHECKING:
    from flink_agents.api.runner_context import RunnerContext

__all__ = ["MemoryRef"]


class MemoryRef(BaseModel):
    """Where a value is in memory: the memory and the absolute path."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_type: MemoryType = MemoryType.SHORT_TERM
    """The memory the value is in."""
    path: str
    """Its absolute dotted path."""

    def __hash__(self) -> int:
        return hash((self.memory_type, self.path))

    @staticmethod
    def create(memory_type: MemoryType, path: str) -> MemoryRef:
        """A reference to ``path`` in the memory of ``memory_type``."""
        return MemoryRef(memory_type=memory_type, path=path)

    def resolve(self, ctx: RunnerContext) -> Any:
        """What the reference points to in the running action's memory (None when there is
        nothing there)."""
        if self.memory_type is MemoryType.SENSORY:
            return ctx.sensory_memory.get(self)
        return ctx.short_term_memory.get(self)
