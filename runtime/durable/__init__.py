"""Durable execution: each model or tool call made once, across failures and restarts.

The run engine calls :meth:`DurableCallLog.execute` (or ``execute_sync``) with a
:class:`DurableCallKey`; the log records each call's outcome in an :class:`ActionStateStore`
(SQLite by default; PostgreSQL or a compacted Kafka topic for clusters) and replays it when
the run is replayed.
"""

from flink_agents.runtime.durable.call_log import DurableCallLog
from flink_agents.runtime.durable.digest import call_digest, function_identity
from flink_agents.runtime.durable.kafka_store import KafkaActionStateStore
from flink_agents.runtime.durable.postgres_store import PostgresActionStateStore
from flink_agents.runtime.durable.records import CallOutcome, CallRecord, DurableCallKey
from flink_agents.runtime.durable.retry import StoreRetry
from flink_agents.runtime.durable.sqlite_store import SqliteActionStateStore
from flink_agents.runtime.durable.store import ActionStateStore
from flink_agents.runtime.durable.store_url import open_action_state_store
from flink_agents.runtime.errors import (
    DurableCallFailedError,
    DurableError,
    DurableReplayError,
    DurableStoreError,
    DurableStoreUnavailableError,
)

__all__ = [
    "ActionStateStore",
    "CallOutcome",
    "CallRecord",
    "DurableCallFailedError",
    "DurableCallKey",
    "DurableCallLog",
    "DurableError",
    "DurableReplayError",
    "DurableStoreError",
    "DurableStoreUnavailableError",
    "KafkaActionStateStore",
    "PostgresActionStateStore",
    "SqliteActionStateStore",
    "StoreRetry",
    "call_digest",
    "function_identity",
    "open_action_state_store",
]
