"""Run lifecycle events: `AgentRunBeginEvent`, as upstream.

With ``agent-run.begin-event: true`` the runtime makes one at the start of every run,
before any action of the run runs: ``key`` is the key's text and ``value`` the key's
short-term memory as a flat map from dotted path to JSON value (values only; objects
are implied by the paths). Its ``upstream_event_id`` is the run's `InputEvent` and its
``upstream_action_name`` is ``agent_run_begin_action``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from flink_agents.api.events.event import Event
from flink_agents.api.events.memory_event import KeyValueAttributes, observation_attributes

__all__ = ["AGENT_RUN_BEGIN_ACTION", "AgentRunBeginEvent"]

AGENT_RUN_BEGIN_ACTION = "agent_run_begin_action"
"""The ``upstream_action_name`` of every `AgentRunBeginEvent` (no action of the agent
sends it)."""


class AgentRunBeginEvent(KeyValueAttributes, Event):
    """The start of a run, with a snapshot of the key's short-term memory values."""

    EVENT_TYPE: ClassVar[str] = "_agent_run_begin_event"

    def __init__(
        self, *, key: str | None = None, value: Mapping[str, Any] | None = None, **data: Any
    ) -> None:
        if "attributes" in data:
            super().__init__(**data)
            return
        super().__init__(attributes=observation_attributes(key, value or {}), **data)
