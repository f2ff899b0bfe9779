"""Opening a store from a configuration string."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_agents.runtime.durable import (
    PostgresActionStateStore,
    SqliteActionStateStore,
    open_action_state_store,
)


def test_sqlite_urls_and_plain_paths(tmp_path: Path) -> None:
    absolute = open_action_state_store(f"sqlite:///{tmp_path}/a.db")
    assert isinstance(absolute, SqliteActionStateStore) and absolute.path == f"{tmp_path}/a.db"
    relative = open_action_state_store("sqlite:///state/a.db")
    assert isinstance(relative, SqliteActionStateStore) and relative.path == "state/a.db"
    plain = open_action_state_store(str(tmp_path / "b.db"), table="calls", synchronous="NORMAL")
    assert isinstance(plain, SqliteActionStateStore)
    assert (plain.table, plain.synchronous) == ("calls", "NORMAL")


def test_postgres_urls_open_nothing_until_used() -> None:
    store = open_action_state_store("postgres://u:p@db.invalid:5432/x", table="calls")
    assert isinstance(store, PostgresActionStateStore) and store.table == "calls"
    assert isinstance(
        open_action_state_store("postgresql://db.invalid/x"), PostgresActionStateStore
    )


def test_unknown_schemes_are_refused() -> None:
    with pytest.raises(ValueError, match="'redis'"):
        open_action_state_store("redis://localhost")
    with pytest.raises(ValueError, match="sqlite"):
        open_action_state_store("sqlite://a.db")
