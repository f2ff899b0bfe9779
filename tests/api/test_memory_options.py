"""Upstream's memory options: short-term memory TTL, run-begin and memory event switches."""

from __future__ import annotations

import pytest

from flink_agents.api.core_options import (
    AgentConfiguration,
    AgentExecutionOptions,
    MemoryEventOptions,
    ShortTermMemoryTtlUpdate,
    ShortTermMemoryTtlVisibility,
)


def test_ttl_options_have_upstreams_keys_and_defaults() -> None:
    config = AgentConfiguration()
    assert AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_MS.key == (
        "short-term-memory.state-ttl.ms"
    )
    assert config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_MS) == 0
    assert (
        config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE)
        is ShortTermMemoryTtlUpdate.ON_READ_AND_WRITE
    )
    assert (
        config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_VISIBILITY)
        is ShortTermMemoryTtlVisibility.NEVER_RETURN_EXPIRED
    )
    assert config.get(AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT) is False


def test_ttl_options_read_from_strings_as_in_a_flink_config_file() -> None:
    config = AgentConfiguration(
        {
            "agent.short-term-memory.state-ttl.ms": "60000",
            "short-term-memory.state-ttl.update-type": "ON_CREATE_AND_WRITE",
            "short-term-memory.state-ttl.visibility": "return_expired_if_not_cleaned_up",
            "agent-run.begin-event": "true",
        }
    )
    assert config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_MS) == 60000
    assert (
        config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE)
        is ShortTermMemoryTtlUpdate.ON_CREATE_AND_WRITE
    )
    assert (
        config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_VISIBILITY)
        is ShortTermMemoryTtlVisibility.RETURN_EXPIRED_IF_NOT_CLEANED_UP
    )
    assert config.get(AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT) is True
    with pytest.raises(ValueError, match="is not one of"):
        config.set(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE, "ON_READ")


def test_memory_event_switches_resolve_key_then_master_then_default() -> None:
    enabled = MemoryEventOptions.enabled
    defaults = AgentConfiguration()
    assert enabled(defaults, MemoryEventOptions.SHORT_TERM_WRITE)
    assert enabled(defaults, MemoryEventOptions.SENSORY_WRITE)
    assert not enabled(defaults, MemoryEventOptions.SHORT_TERM_READ)
    assert not enabled(defaults, MemoryEventOptions.SENSORY_READ)

    master_off = AgentConfiguration().set(MemoryEventOptions.MEMORY_GENERATE_EVENT, False)
    master_off.set(MemoryEventOptions.SHORT_TERM_WRITE, True)
    assert enabled(master_off, MemoryEventOptions.SHORT_TERM_WRITE)
    assert not enabled(master_off, MemoryEventOptions.SENSORY_WRITE)

    master_on = AgentConfiguration({"memory.generate-event": "true"})
    assert enabled(master_on, MemoryEventOptions.SENSORY_READ)
    master_on.set_str("memory.generate-event.sensory-read", "false")
    assert not enabled(master_on, MemoryEventOptions.SENSORY_READ)


def test_a_misspelled_memory_key_is_refused() -> None:
    with pytest.raises(ValueError, match=r"memory\.generate-event"):
        AgentConfiguration({"memory.generate-events": True})
