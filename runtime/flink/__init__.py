"""Agents on Apache Flink: the keyed agent operator and its execution environment.

Importing this package does not start PyFlink; `create_stream_execution_environment` (or
`prepare_flink_environment` before creating one yourself) finds Java and sets up the Python
workers.
"""

from flink_agents.runtime.errors import (
    FlinkSetupError,
    IncompleteFlinkConfigError,
    JavaNotFoundError,
    KafkaUnreachableError,
    ProcessModeCheckpointingError,
    SessionClusterSetupError,
    ThreadModeUnavailableError,
)
from flink_agents.runtime.flink.environment import (
    AgentStream,
    FlinkAgentsExecutionEnvironment,
    create_stream_execution_environment,
    prepare_flink_environment,
)
from flink_agents.runtime.flink.java import JavaRuntime, ensure_java, find_java
from flink_agents.runtime.flink.kafka_brokers import check_kafka_brokers
from flink_agents.runtime.flink.operator import AgentOperatorOptions, KeyedAgentOperator

__all__ = [
    "AgentOperatorOptions",
    "AgentStream",
    "FlinkAgentsExecutionEnvironment",
    "FlinkSetupError",
    "IncompleteFlinkConfigError",
    "JavaNotFoundError",
    "JavaRuntime",
    "KafkaUnreachableError",
    "KeyedAgentOperator",
    "ProcessModeCheckpointingError",
    "SessionClusterSetupError",
    "ThreadModeUnavailableError",
    "check_kafka_brokers",
    "create_stream_execution_environment",
    "ensure_java",
    "find_java",
    "prepare_flink_environment",
]
