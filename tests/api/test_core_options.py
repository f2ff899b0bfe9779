"""Options and the configuration that holds them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from flink_agents.api import (
    AgentConfigOptions,
    AgentConfiguration,
    AgentExecutionOptions,
    ConfigOption,
    ErrorHandlingStrategy,
    EventLogLevel,
)

UPSTREAM_DURATION_KEYS = {"retry-wait-interval"}
"""Duration options the upstream project has: they keep upstream's key."""


def _options() -> list[ConfigOption[Any]]:
    return [
        option
        for holder in (AgentExecutionOptions, AgentConfigOptions)
        for option in vars(holder).values()
        if isinstance(option, ConfigOption)
    ]


def test_defaults() -> None:
    config = AgentConfiguration()
    assert config.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY) is ErrorHandlingStrategy.RETRY
    assert config.get(AgentExecutionOptions.MAX_RETRIES) == 3
    assert config.get(AgentExecutionOptions.RETRY_WAIT_INTERVAL) == 1.0
    assert config.get(AgentExecutionOptions.CHAT_MAX_MODEL_CALLS) == 10
    assert config.get(AgentExecutionOptions.TOOL_CALL_PARALLEL) is True
    assert config.get(AgentConfigOptions.EVENT_LOG_LEVEL) is EventLogLevel.STANDARD
    assert config.get(AgentConfigOptions.BASE_LOG_DIR) is None


def test_upstream_keys_and_string_values_are_parsed() -> None:
    config = AgentConfiguration(
        {
            "error-handling-strategy": "IGNORE",
            "max-retries": "5",
            "retry-wait-interval": "0.25",
            "tool-call.parallel": "false",
            "agent.event-log.level": "verbose",
            "baseLogDir": "/tmp/logs",
            "my-action.threshold": 0.5,
        }
    )
    assert config.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY) is ErrorHandlingStrategy.IGNORE
    assert config.get(AgentExecutionOptions.MAX_RETRIES) == 5
    assert config.get(AgentExecutionOptions.RETRY_WAIT_INTERVAL) == 0.25
    assert config.get(AgentExecutionOptions.TOOL_CALL_PARALLEL) is False
    assert config.get(AgentConfigOptions.EVENT_LOG_LEVEL) is EventLogLevel.VERBOSE
    assert config.get(AgentConfigOptions.BASE_LOG_DIR) == "/tmp/logs"
    assert config.get("my-action.threshold") == 0.5
    assert config.to_dict()["error-handling-strategy"] == "ignore"
    assert config.copy() == config


def test_bad_values_fail_with_the_option_key() -> None:
    with pytest.raises(ValueError, match="error-handling-strategy"):
        AgentConfiguration({"error-handling-strategy": "sometimes"})
    with pytest.raises(ValueError, match="max-retries"):
        AgentConfiguration().set(AgentExecutionOptions.MAX_RETRIES, "many")
    with pytest.raises(ValueError, match=r"tool-call\.parallel"):
        AgentConfiguration({"tool-call.parallel": "maybe"})


def test_set_is_chainable() -> None:
    config = AgentConfiguration().set(AgentExecutionOptions.MAX_RETRIES, 1).set("x", "y")
    assert config.get(AgentExecutionOptions.MAX_RETRIES) == 1
    assert config.get("x") == "y"


def test_our_duration_keys_end_in_their_unit() -> None:
    durations = [o for o in _options() if re.search(r"\bseconds\b", o.description, re.I)]
    assert {o.key for o in durations} >= {
        "tool-call.timeout-s",
        "durable-execution.stop-grace-s",
        "retry-wait-interval",
    }
    for option in durations:
        assert option.config_type is float
        assert option.key.endswith("-s") or option.key in UPSTREAM_DURATION_KEYS, option.key
