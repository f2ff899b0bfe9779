"""Open an action-state store from one configuration string."""

from __future__ import annotations

from typing import Any

from flink_agents.runtime.durable.postgres_store import PostgresActionStateStore
from flink_agents.runtime.durable.sqlite_store import SqliteActionStateStore
from flink_agents.runtime.durable.store import ActionStateStore

__all__ = ["open_action_state_store"]


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
