"""The durable-execution errors moved to `flink_agents.runtime.errors` (users import them
from `flink_agents.runtime.durable`).

Only ``runtime/durable/outcome.py`` still imports them from here; delete this module once
it imports them from `flink_agents.runtime.errors`.
"""

from __future__ import annotations

from flink_agents.runtime.errors import DurableCallFailedError, DurableReplayError

__all__ = ["DurableCallFailedError", "DurableReplayError"]
