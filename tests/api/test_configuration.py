"""Upstream's configuration API: ConfigOption, every core option's key and default, the
typed accessors, options the runtime cannot honour, and YAML files (get_config(path))."""

from __future__ import annotations

import logging
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api import AgentsExecutionEnvironment, core_options
from flink_agents.api.configuration import (
    ConfigOption,
    Configuration,
    agent_options_in,
    agent_section,
    flatten_dict,
    read_yaml_settings,
)
from flink_agents.api.core_options import (
    UNSUPPORTED_OPTIONS,
    UPSTREAM_OPTION_KEYS,
    AgentConfigOptions,
    AgentConfiguration,
    AgentExecutionOptions,
    ConditionEvaluationFailureStrategy,
    ErrorHandlingStrategy,
    EventLogLevel,
    LoggerType,
    LongTermMemoryOptions,
    MemoryEventOptions,
    ShortTermMemoryTtlUpdate,
    ShortTermMemoryTtlVisibility,
)

# Upstream's core_options (apache/flink-agents 8ad3a32): attribute -> (key, default). Our
# documented differences: error-handling-strategy defaults to retry here, num-async-threads
# has a floor of 4 (see docs/migrating-from-flink-agents.md).
UPSTREAM_EXECUTION_OPTIONS: dict[str, tuple[str, Any]] = {
    "ERROR_HANDLING_STRATEGY": ("error-handling-strategy", ErrorHandlingStrategy.RETRY),
    "MAX_RETRIES": ("max-retries", 3),
    "RETRY_WAIT_INTERVAL": ("retry-wait-interval", 1),
    "NUM_ASYNC_THREADS": ("num-async-threads", None),
    "CHAT_ASYNC": ("chat.async", True),
    "AGENT_RUN_BEGIN_EVENT": ("agent-run.begin-event", False),
    "TOOL_CALL_ASYNC": ("tool-call.async", True),
    "RAG_ASYNC": ("rag.async", True),
    "SHORT_TERM_MEMORY_STATE_TTL_MS": ("short-term-memory.state-ttl.ms", 0),
    "SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE": (
        "short-term-memory.state-ttl.update-type",
        ShortTermMemoryTtlUpdate.ON_READ_AND_WRITE,
    ),
    "SHORT_TERM_MEMORY_STATE_TTL_VISIBILITY": (
        "short-term-memory.state-ttl.visibility",
        ShortTermMemoryTtlVisibility.NEVER_RETURN_EXPIRED,
    ),
}
UPSTREAM_CONFIG_OPTIONS: dict[str, tuple[str, Any]] = {
    "EVENT_LOGGER_TYPE": ("eventLoggerType", LoggerType.SLF4J),
    "CONDITION_EVALUATION_FAILURE_STRATEGY": (
        "action.trigger-condition.evaluate-failure-strategy",
        ConditionEvaluationFailureStrategy.WARN_AND_SKIP,
    ),
    "BASE_LOG_DIR": ("baseLogDir", None),
    "PRETTY_PRINT": ("prettyPrint", False),
    "ACTION_STATE_STORE_BACKEND": ("actionStateStoreBackend", None),
    "KAFKA_BOOTSTRAP_SERVERS": ("kafkaBootstrapServers", "localhost:9092"),
    "KAFKA_ACTION_STATE_TOPIC": ("kafkaActionStateTopic", None),
    "KAFKA_ACTION_STATE_TOPIC_NUM_PARTITIONS": ("kafkaActionStateTopicNumPartitions", 64),
    "KAFKA_ACTION_STATE_TOPIC_REPLICATION_FACTOR": ("kafkaActionStateTopicReplicationFactor", 1),
    "FLUSS_BOOTSTRAP_SERVERS": ("flussBootstrapServers", "localhost:9123"),
    "FLUSS_ACTION_STATE_DATABASE": ("flussActionStateDatabase", "flink_agents"),
    "FLUSS_ACTION_STATE_TABLE": ("flussActionStateTable", None),
    "FLUSS_ACTION_STATE_TABLE_BUCKETS": ("flussActionStateTableBuckets", 64),
    "FLUSS_SECURITY_PROTOCOL": ("flussSecurityProtocol", "PLAINTEXT"),
    "FLUSS_SASL_MECHANISM": ("flussSaslMechanism", "PLAIN"),
    "FLUSS_SASL_JAAS_CONFIG": ("flussSaslJaasConfig", None),
    "FLUSS_SASL_USERNAME": ("flussSaslUsername", None),
    "FLUSS_SASL_PASSWORD": ("flussSaslPassword", None),
    "JOB_IDENTIFIER": ("job-identifier", None),
    "EVENT_LOG_LEVEL": ("event-log.level", EventLogLevel.STANDARD),
    "EVENT_LOG_TRACE_ENABLED": ("event-log.trace.enabled", False),
    "EVENT_LOG_MAX_STRING_LENGTH": ("event-log.standard.max-string-length", 2000),
    "EVENT_LOG_MAX_ARRAY_ELEMENTS": ("event-log.standard.max-array-elements", 20),
    "EVENT_LOG_MAX_DEPTH": ("event-log.standard.max-depth", 5),
    "EVENT_LISTENERS": ("event-listeners", None),
}
UPSTREAM_MEMORY_EVENT_OPTIONS = {
    "MEMORY_GENERATE_EVENT": "memory.generate-event",
    "SHORT_TERM_WRITE": "memory.generate-event.short-term-write",
    "SHORT_TERM_READ": "memory.generate-event.short-term-read",
    "SENSORY_WRITE": "memory.generate-event.sensory-write",
    "SENSORY_READ": "memory.generate-event.sensory-read",
    "LONG_TERM_UPDATE": "memory.generate-event.long-term-update",
    "LONG_TERM_GET": "memory.generate-event.long-term-get",
    "LONG_TERM_SEARCH": "memory.generate-event.long-term-search",
}
UPSTREAM_LONG_TERM_MEMORY_OPTIONS = {
    "CHAT_MODEL_SETUP": "long-term-memory.mem0.chat-model-setup",
    "EMBEDDING_MODEL_SETUP": "long-term-memory.mem0.embedding-model-setup",
    "VECTOR_STORE": "long-term-memory.mem0.vector-store",
}


@pytest.mark.parametrize(
    ("holder", "table"),
    [
        (AgentExecutionOptions, UPSTREAM_EXECUTION_OPTIONS),
        (AgentConfigOptions, UPSTREAM_CONFIG_OPTIONS),
    ],
)
def test_every_upstream_option_has_its_key_and_default(
    holder: type, table: dict[str, tuple[str, Any]]
) -> None:
    for name, (key, default) in table.items():
        option = getattr(holder, name)
        assert option.get_key() == key, name
        if name != "NUM_ASYNC_THREADS":  # upstream: 2 x CPUs; here at least 4 too
            assert option.get_default_value() == default, name
        # Every key reads through the configuration, typed.
        assert AgentConfiguration().get(option) == option.get_default_value()
    for name, key in UPSTREAM_MEMORY_EVENT_OPTIONS.items():
        assert getattr(MemoryEventOptions, name).get_key() == key
    for name, key in UPSTREAM_LONG_TERM_MEMORY_OPTIONS.items():
        option = getattr(LongTermMemoryOptions.Mem0, name)
        assert option.get_key() == key and option.get_default_value() is None


def test_upstream_option_keys_are_upstreams_options() -> None:
    assert {
        *(key for key, _ in UPSTREAM_EXECUTION_OPTIONS.values()),
        *(key for key, _ in UPSTREAM_CONFIG_OPTIONS.values()),
        *UPSTREAM_MEMORY_EVENT_OPTIONS.values(),
        *UPSTREAM_LONG_TERM_MEMORY_OPTIONS.values(),
    } == UPSTREAM_OPTION_KEYS


def test_upstream_enum_values_are_accepted_by_value_or_name() -> None:
    config = AgentConfiguration(
        {"eventLoggerType": "FILE", "event-log.level": "VERBOSE", "error-handling-strategy": "FAIL"}
    )
    assert config.get(AgentConfigOptions.EVENT_LOGGER_TYPE) is LoggerType.FILE
    assert config.get(AgentConfigOptions.EVENT_LOG_LEVEL) is EventLogLevel.VERBOSE
    assert config.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY) is ErrorHandlingStrategy.FAIL


def test_config_option_as_upstream_builds_it() -> None:
    option = ConfigOption(key="myapp.threshold", config_type=float, default=0.5)
    assert (option.get_key(), option.get_type(), option.get_default_value()) == (
        "myapp.threshold",
        float,
        0.5,
    )
    assert ConfigOption("myapp.flag", bool).get_default_value() is None
    config = AgentConfiguration()
    assert config.get(option) == 0.5
    config.set(option, "0.75")
    assert config.get(option) == 0.75


def test_the_typed_accessors_by_key() -> None:
    config = AgentConfiguration()
    assert isinstance(config, Configuration)
    config.set_int("myapp.limit", 3).set_float("myapp.ratio", 0.5).set_bool("myapp.on", False)
    config.set_str("myapp.name", "x")
    config.set_str("max-retries", "7")
    assert config.get_int("myapp.limit") == 3
    assert config.get_float("myapp.ratio") == 0.5
    assert config.get_bool("myapp.on") is False
    assert config.get_str("myapp.name") == "x"
    assert config.get_int("max-retries") == 7
    assert config.get_int("myapp.missing", 9) == 9
    config.set_str("myapp.text_flag", "false")
    assert config.get_bool("myapp.text_flag") is False  # not bool("false")
    config.set(AgentExecutionOptions.ERROR_HANDLING_STRATEGY, "ignore")
    assert config.get_str("error-handling-strategy") == "ignore"
    assert config.get_conf_data()["myapp.limit"] == 3
    assert config.get_config_data_by_prefix("myapp") == {
        "limit": 3,
        "ratio": 0.5,
        "on": False,
        "name": "x",
        "text_flag": "false",
    }


def test_an_option_the_runtime_cannot_honour_warns_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core_options, "_warned", set())
    caplog.set_level(logging.WARNING, logger="flink_agents.api.core_options")
    AgentConfiguration({"chat.async": True})  # the default: nothing to say
    assert not caplog.records
    config = AgentConfiguration({"chat.async": "false"})
    config.set(AgentExecutionOptions.CHAT_ASYNC, False)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "'chat.async'" in warnings[0] and "always run asynchronously" in warnings[0]
    # The value is kept (an action may read it), it changes nothing.
    assert config.get(AgentExecutionOptions.CHAT_ASYNC) is False


def test_every_unsupported_option_is_one_of_ours_and_says_what_to_do() -> None:
    known = {
        option.key
        for holder in (AgentExecutionOptions, AgentConfigOptions, MemoryEventOptions)
        for option in vars(holder).values()
        if isinstance(option, ConfigOption)
    }
    assert set(UNSUPPORTED_OPTIONS) <= known & UPSTREAM_OPTION_KEYS
    assert all(len(instead) > 20 for instead in UNSUPPORTED_OPTIONS.values())


def test_the_kafka_action_state_store_is_accepted_and_another_backend_refused() -> None:
    config = AgentConfiguration({"actionStateStoreBackend": "kafka"})
    assert config.get(AgentConfigOptions.ACTION_STATE_STORE_BACKEND) == "kafka"
    with pytest.raises(ValueError, match=r"actionStateStoreBackend.*durable-execution\.store"):
        AgentConfiguration({"actionStateStoreBackend": "fluss"})
    with pytest.raises(ValueError, match=r"kafka is"):
        AgentConfiguration().set(AgentConfigOptions.ACTION_STATE_STORE_BACKEND, "fluss")


CONFIG_YAML = """
taskmanager.numberOfTaskSlots: 2
agent:
  max-retries: 5
  event-log:
    level: VERBOSE
  myapp:
    threshold: 0.5
agent.baseLogDir: /tmp/agent-logs
"""


def test_agent_section_reads_nested_and_dotted_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG_YAML)
    assert agent_section(path) == {
        "max-retries": 5,
        "event-log.level": "VERBOSE",
        "myapp.threshold": 0.5,
        "baseLogDir": "/tmp/agent-logs",
    }
    assert flatten_dict({"a": {"b": {"c": 1}}, "d": 2}) == {"a.b.c": 1, "d": 2}
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(ValueError, match="not a YAML mapping"):
        agent_section(tmp_path / "list.yaml")


def test_every_setting_of_a_yaml_file_and_the_agent_options_among_them(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("taskmanager:\n  numberOfTaskSlots: 2\n" + CONFIG_YAML)
    settings = read_yaml_settings(path)
    assert settings["taskmanager.numberOfTaskSlots"] == 2  # Flink's own settings too
    assert settings["agent.event-log.level"] == "VERBOSE"
    assert agent_options_in(settings) == agent_section(path)
    assert agent_options_in({"agentx.y": 1, "agent.z": 2}) == {"z": 2}  # the prefix, dot and all
    (tmp_path / "empty.yaml").write_text("")
    assert read_yaml_settings(tmp_path / "empty.yaml") == {}
    with pytest.raises(FileNotFoundError):
        read_yaml_settings(tmp_path / "missing.yaml")


def test_get_config_with_a_path_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(CONFIG_YAML)
    env = AgentsExecutionEnvironment.get_execution_environment()
    config = env.get_config(str(path))
    assert config is env.get_config()
    assert config.get(AgentExecutionOptions.MAX_RETRIES) == 5
    assert config.get(AgentConfigOptions.EVENT_LOG_LEVEL) is EventLogLevel.VERBOSE
    assert config.get_float("myapp.threshold") == 0.5
    # Code set after the file wins, as upstream's.
    config.set(AgentExecutionOptions.MAX_RETRIES, 1)
    assert config.get(AgentExecutionOptions.MAX_RETRIES) == 1
    assert AgentConfiguration().load_from_file(path).get_int("max-retries") == 5


def test_a_bad_value_in_the_file_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("agent:\n  max-retries: many\n")
    env = AgentsExecutionEnvironment.get_execution_environment()
    with pytest.raises(ValueError, match=r"'max-retries' in .*agent\.yaml"):
        env.get_config(str(path))
    with pytest.raises(FileNotFoundError):
        env.get_config(str(tmp_path / "missing.yaml"))


def test_enum_options_stay_str_enums() -> None:
    for enum in (LoggerType, ConditionEvaluationFailureStrategy):
        assert issubclass(enum, str) and issubclass(enum, Enum)
