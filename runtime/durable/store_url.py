"""Open an action-state store from one configuration string."""

from __future__ import annotations

import logging
from typing import Any

from flink_agents.api.core_options import AgentConfigOptions, AgentConfiguration
from flink_agents.runtime.durable.call_log import DurableCallLog
from flink_agents.runtime.durable.kafka_store import KafkaActionStateStore
from flink_agents.runtime.durable.pipeline import DEFAULT_PIPELINE, pipeline_id_from
from flink_agents.runtime.durable.postgres_store import PostgresActionStateStore
from flink_agents.runtime.durable.records import DurableCallKey
from flink_agents.runtime.durable.retry import StoreRetry
from flink_agents.runtime.durable.sqlite_store import SqliteActionStateStore
from flink_agents.runtime.durable.store import ActionStateStore

__all__ = ["open_action_state_store", "open_durable_call_log"]

_LOG = logging.getLogger(__name__)

# Not the text of any agent key (`encode_key` writes JSON), so it never meets a real run.
_PROBE_KEY = DurableCallKey(
    agent_key="__flink_agents_probe__", seq=0, step=0, action="", call_index=0
)


def open_action_state_store(
    url: str, *, pipeline: str = DEFAULT_PIPELINE, shared: bool = False, **options: Any
) -> ActionStateStore:
    """The store a URL names, scoped to ``pipeline``; nothing is connected until first use.

    - ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or a plain file path:
      :class:`SqliteActionStateStore`;
    - ``postgresql://...`` or ``postgres://...``: :class:`PostgresActionStateStore`.

    ``shared`` allows a table that holds records of other pipelines (otherwise refused when
    the store connects). ``options`` go to the store's constructor (``table=...``,
    ``synchronous=...``, ...).
    """
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresActionStateStore(url, pipeline=pipeline, shared=shared, **options)
    if url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
        if not path.startswith("/") or path == "/":
            raise ValueError("a SQLite URL looks like sqlite:///relative.db or sqlite:////abs.db")
        return SqliteActionStateStore(path[1:], pipeline=pipeline, shared=shared, **options)
    if "://" in url:
        scheme = url.split("://", 1)[0]
        raise ValueError(f"unknown action-state store scheme {scheme!r} (sqlite or postgresql)")
    return SqliteActionStateStore(url, pipeline=pipeline, shared=shared, **options)


def _kafka_store(
    config: AgentConfiguration, *, pipeline: str, shared: bool, options: dict[str, Any]
) -> KafkaActionStateStore:
    """The Kafka store upstream's options name (``actionStateStoreBackend: kafka``)."""
    backend = AgentConfigOptions.ACTION_STATE_STORE_BACKEND.key
    if config.get(AgentConfigOptions.DURABLE_EXECUTION_STORE):
        raise ValueError(
            f"both {backend} and durable-execution.store name an action-state store: set one"
        )
    if options.pop("table", None):
        raise ValueError(
            "durable-execution.store.table names a SQL table; the Kafka store's topic is "
            f"{AgentConfigOptions.KAFKA_ACTION_STATE_TOPIC.key}"
        )
    topic = config.get(AgentConfigOptions.KAFKA_ACTION_STATE_TOPIC)
    if not topic:
        raise ValueError(
            f"{backend}: kafka needs {AgentConfigOptions.KAFKA_ACTION_STATE_TOPIC.key} "
            "(the topic of the records; created compacted when missing)"
        )
    return KafkaActionStateStore(
        config.get(AgentConfigOptions.KAFKA_BOOTSTRAP_SERVERS),
        topic,
        num_partitions=config.get(AgentConfigOptions.KAFKA_ACTION_STATE_TOPIC_NUM_PARTITIONS),
        replication_factor=config.get(
            AgentConfigOptions.KAFKA_ACTION_STATE_TOPIC_REPLICATION_FACTOR
        ),
        pipeline=pipeline,
        shared=shared,
        **options,
    )


def open_durable_call_log(
    config: AgentConfiguration, *, agent: Any = None, operator_name: str | None = None
) -> DurableCallLog | None:
    """The durable call log the agent options name (``durable-execution.store``, or upstream's
    ``actionStateStoreBackend: kafka`` with its ``kafka*`` options), or None.

    Its records belong to the pipeline ``durable-execution.pipeline-id`` names; unset, to
    ``module:qualname`` of ``agent``'s class (plus ``/operator_name`` when given), or to
    ``default`` without an agent. ``durable-execution.store.shared`` allows a table that
    other pipelines use; ``durable-execution.store.encryption-key-env`` encrypts recorded
    outcomes; ``durable-execution.store.retry-timeout-s`` bounds how long store operations
    are tried again through an outage. The store is reached once here, so an unreachable
    store (after that retry time), or a table another pipeline holds, fails now with
    `DurableStoreError` rather than letting runs make unrecorded calls.
    """
    url = config.get(AgentConfigOptions.DURABLE_EXECUTION_STORE)
    kafka = config.get(AgentConfigOptions.ACTION_STATE_STORE_BACKEND) is not None
    if not url and not kafka:
        return None
    options: dict[str, Any] = {}
    table = config.get(AgentConfigOptions.DURABLE_EXECUTION_STORE_TABLE)
    if table:
        options["table"] = table
    key_env = config.get(AgentConfigOptions.DURABLE_EXECUTION_STORE_ENCRYPTION_KEY_ENV)
    if key_env:
        options["encryption_key_env"] = key_env
    pipeline = pipeline_id_from(config, agent, operator_name)
    shared = config.get(AgentConfigOptions.DURABLE_EXECUTION_STORE_SHARED)
    store = (
        _kafka_store(config, pipeline=pipeline, shared=shared, options=options)
        if kafka
        else open_action_state_store(url or "", pipeline=pipeline, shared=shared, **options)
    )
    retry = StoreRetry(config.get(AgentConfigOptions.DURABLE_EXECUTION_STORE_RETRY_TIMEOUT))
    # Connects (creates and checks the table, and the encryption keys); raises
    # DurableStoreError, after retrying through an outage like every store operation.
    retry.call("open", lambda: store.get(_PROBE_KEY))
    if config.get(AgentConfigOptions.DURABLE_EXECUTION_PIPELINE_ID):
        _LOG.info("durable execution: %r", store)
    else:
        _LOG.info(
            "durable execution: %r; durable-execution.pipeline-id is not set, so the records "
            "belong to the default pipeline id %r (set the option in production)",
            store,
            pipeline,
        )
    return DurableCallLog(store, retry=retry)
