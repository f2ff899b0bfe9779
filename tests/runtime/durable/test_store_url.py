"""Opening a store from a configuration string."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.runtime.durable import (
    DurableStoreError,
    PostgresActionStateStore,
    SqliteActionStateStore,
    open_action_state_store,
)
from flink_agents.runtime.durable.store_url import open_durable_call_log

from ._support import key


class OrdersAgent(Agent):
    """An agent class whose name is its default pipeline id."""


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


def test_stores_are_opened_for_a_pipeline(tmp_path: Path) -> None:
    sqlite = open_action_state_store(str(tmp_path / "a.db"), pipeline="p", shared=True)
    assert isinstance(sqlite, SqliteActionStateStore)
    assert (sqlite.pipeline, sqlite.shared) == ("p", True)
    postgres = open_action_state_store("postgresql://db.invalid/x", pipeline="q")
    assert isinstance(postgres, PostgresActionStateStore)
    assert (postgres.pipeline, postgres.shared) == ("q", False)
    unnamed = open_action_state_store(str(tmp_path / "b.db"))
    assert isinstance(unnamed, SqliteActionStateStore) and unnamed.pipeline == "default"


def test_the_options_name_the_pipeline_and_allow_sharing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/calls.db"
    log = open_durable_call_log(
        AgentConfiguration(
            {
                "durable-execution.store": url,
                "durable-execution.pipeline-id": "orders",
                "durable-execution.store.shared": "true",
            }
        ),
        agent=OrdersAgent(),
    )
    assert log is not None and isinstance(log.store, SqliteActionStateStore)
    assert (log.store.pipeline, log.store.shared) == ("orders", True)
    log.close()
    log = open_durable_call_log(AgentConfiguration({"durable-execution.store": url}))
    assert log is not None and isinstance(log.store, SqliteActionStateStore)
    assert (log.store.pipeline, log.store.shared) == ("default", False)
    log.close()


def test_a_second_pipeline_on_the_table_is_refused_when_the_log_opens(tmp_path: Path) -> None:
    config = AgentConfiguration({"durable-execution.store": f"sqlite:///{tmp_path}/calls.db"})
    first = open_durable_call_log(config, agent=OrdersAgent())
    assert first is not None and isinstance(first.store, SqliteActionStateStore)
    assert first.store.pipeline == f"{__name__}:OrdersAgent"
    first.store.begin(key(), "d")
    first.close()
    with pytest.raises(DurableStoreError) as raised:
        open_durable_call_log(config, agent=Agent())
    assert f"'{__name__}:OrdersAgent'" in str(raised.value)
    assert "'flink_agents.api.agents.agent:Agent'" in str(raised.value)
    config.set("durable-execution.store.shared", True)
    shared = open_durable_call_log(config, agent=Agent())
    assert shared is not None
    shared.close()
