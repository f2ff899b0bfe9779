"""Open an action-state store from one configuration string."""

from __future__ import annotations

from typing import Any

from flink_agents.api.core_options import AgentConfigOptions, AgentConfiguration
from flink_agents.runtime.durable.call_log import DurableCallLog
from flink_agents.runtime.durable.postgres_store import PostgresActionStateStore
from flink_agents.runtime.durable.records import DurableCallKey
from flink_agents.runtime.durable.sqlite_store import SqliteActionStateStore
from flink_agents.runtime.durable.store import ActionStateStore

__all__ = ["open_action_state_store", "open_durable_call_log"]

_PROBE_KEY = DurableCallKey(
    agent_key="__flink_agents_probe__", seq=0, step=0, action="", call_index=0
)


def open_action_state_store(url: str, **options: Any) -> ActionStateStore:
    """The store a URL names; nothing is connected until first use.

    - ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or a plain file path:
      :class:`SqliteActionStateStore`;
    - ``postgresql://...`` or ``postgres://...``: :class:`PostgresActionStateStore`.

    ``options`` go to the store's constructor (``table=...``, ``synchronous=...``, ...).
    """
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresActionStateStore(url, **options)
    if url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
        if not path.startswith("/") or path == "/":
            raise ValueError("a SQLite URL looks like sqlite:///relative.db or sqlite:////abs.db")
        return SqliteActionStateStore(path[1:], **options)
    if "://" in url:
        scheme = url.split("://", 1)[0]
        raise ValueError(f"unknown action-state store scheme {scheme!r} (sqlite or postgresql)")
    return SqliteActionStateStore(url, **options)


def open_durable_call_log(config: AgentConfiguration) -> DurableCallLog | None:
    """The durable call log the agent options name (``durable-execution.store``), or None.

    The store is reached once here, so an unreachable store fails now with
    `DurableStoreError` rather than letting runs make unrecorded calls.
    """
    url = config.get(AgentConfigOptions.DURABLE_EXECUTION_STORE)
    if not url:
        return None
    options: dict[str, Any] = {}
    table = config.get(AgentConfigOptions.DURABLE_EXECUTION_STORE_TABLE)
    if table:
        options["table"] = table
    store = open_action_state_store(url, **options)
    store.get(_PROBE_KEY)  # connects (and creates the table); raises DurableStoreError
    return DurableCallLog(store)
