"""Records belong to one pipeline: scoped operations, refused and shared tables, the ids."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Final

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.runtime.durable import (
    CallOutcome,
    DurableCallLog,
    DurableStoreError,
    PostgresActionStateStore,
    SqliteActionStateStore,
)
from flink_agents.runtime.durable.pipeline import (
    DEFAULT_PIPELINE,
    check_pipeline_id,
    default_pipeline_id,
    pipeline_id_from,
)

from ._support import Counter, key
from .conftest import OpenStore, _drop_table

VALUE = CallOutcome(status="value", value_json='"done"')


class TriageAgent(Agent):
    """An agent class of its own (its name is the default pipeline id)."""


# ------------------------------------------------------------------ scoping


def test_pipelines_sharing_a_table_never_see_each_others_records(open_store: OpenStore) -> None:
    jobs = open_store(pipeline="jobs", shared=True)
    other = open_store(pipeline="other", shared=True)
    # The same call keys in both pipelines.
    for step in range(3):
        jobs.begin(key(step=step), f"jobs-{step}")
        jobs.record_outcome(key(step=step), f"jobs-{step}", VALUE)
    other.begin(key(step=0), "other-0")
    other.begin(key(step=1), "other-1")

    record = jobs.get(key(step=0))
    assert record is not None and record.digest == "jobs-0" and record.outcome == VALUE
    record = other.get(key(step=0))
    assert record is not None and record.digest == "other-0" and record.pending
    assert other.get(key(step=2)) is None
    assert [r.digest for r in jobs.load_run("user-1", 0)] == ["jobs-0", "jobs-1", "jobs-2"]
    assert [r.digest for r in other.load_run("user-1", 0)] == ["other-0", "other-1"]

    # A begin drops the later records of the run: of its own pipeline only.
    other.begin(key(step=0), "other-0b")
    assert [r.digest for r in other.load_run("user-1", 0)] == ["other-0b"]
    assert len(jobs.load_run("user-1", 0)) == 3
    # An outcome is recorded in its own pipeline.
    other.record_outcome(key(step=1), "other-1", VALUE)
    record = jobs.get(key(step=1))
    assert record is not None and record.digest == "jobs-1"
    # drop_from, prune and prune_many touch their own pipeline only.
    assert other.drop_from(key(step=0)) == 2
    assert len(jobs.load_run("user-1", 0)) == 3
    other.begin(key(step=0), "other-0c")
    assert other.prune("user-1", 0) == 1
    assert len(jobs.load_run("user-1", 0)) == 3
    other.begin(key(step=0), "other-0d")
    assert other.prune_many({"user-1": 5}) == 1
    assert len(jobs.load_run("user-1", 0)) == 3
    assert jobs.prune_many({"user-1": 0}) == 3


def test_a_call_of_one_pipeline_does_not_replay_another_pipelines_record(
    open_store: OpenStore,
) -> None:
    tool = Counter()
    first = DurableCallLog(open_store(pipeline="first", shared=True))
    second = DurableCallLog(open_store(pipeline="second", shared=True))
    assert first.execute_sync(key(), tool, ("a@example.com",), {})["call"] == 1
    assert second.execute_sync(key(), tool, ("a@example.com",), {})["call"] == 2
    assert first.execute_sync(key(), tool, ("a@example.com",), {})["call"] == 1  # replayed
    assert tool.count == 2


# ------------------------------------------------------------------ refusal and sharing


def test_a_table_holding_another_pipelines_records_is_refused(open_store: OpenStore) -> None:
    open_store(pipeline="orders-job").begin(key(), "d")
    refused = open_store(pipeline="support-job")
    with pytest.raises(DurableStoreError) as raised:
        refused.get(key())
    message = str(raised.value)
    assert "'orders-job'" in message and "'support-job'" in message
    own_option = "kafkaActionStateTopic" if "Kafka" in message else "durable-execution.store.table"
    assert own_option in message
    assert "durable-execution.store.shared: true" in message
    # Refused on every operation (nothing written), and below or above in sort order.
    with pytest.raises(DurableStoreError, match="'orders-job'"):
        refused.begin(key(), "d")
    with pytest.raises(DurableStoreError, match="'orders-job'"):
        open_store(pipeline="accounts-job").get(key())


def test_sharing_is_allowed_when_told_and_refused_to_a_pipeline_that_was_not(
    open_store: OpenStore,
) -> None:
    alone = open_store(pipeline="a")
    alone.begin(key(), "a")  # an empty table: any pipeline may start on it
    assert open_store(pipeline="a").get(key()) is not None  # its own records: fine
    shared = open_store(pipeline="b", shared=True)
    shared.begin(key(), "b")
    record = shared.get(key())
    assert record is not None and record.digest == "b"
    # Pipeline a did not say it shares: its next store refuses the table b now uses.
    with pytest.raises(DurableStoreError, match="'b'"):
        open_store(pipeline="a").get(key())


def test_an_emptied_table_may_be_taken_over(open_store: OpenStore) -> None:
    old = open_store(pipeline="old")
    old.begin(key(), "d")
    old.prune("user-1", 0)
    new = open_store(pipeline="new")
    assert new.get(key()) is None


# ------------------------------------------------------------------ tables without pipelines

_OLD_SCHEMA: Final = (
    "CREATE TABLE {table} (agent_key TEXT NOT NULL, seq BIGINT NOT NULL, step INTEGER NOT NULL,"
    " action TEXT NOT NULL, call_index INTEGER NOT NULL, digest TEXT NOT NULL,"
    " status TEXT NOT NULL, payload TEXT,"
    " PRIMARY KEY (agent_key, seq, step, action, call_index))"
)


def test_a_sqlite_table_of_an_older_version_is_refused_with_how_to_migrate(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(_OLD_SCHEMA.format(table="durable_calls"))
    tool = Counter()
    with pytest.raises(DurableStoreError) as raised:
        DurableCallLog(SqliteActionStateStore(path)).execute_sync(key(), tool, (), {})
    message = str(raised.value)
    assert "no pipeline column" in message and "DROP TABLE durable_calls" in message
    assert "durable-execution.store.table" in message
    assert tool.count == 0


def test_a_postgres_table_of_an_older_version_is_refused_with_how_to_migrate(
    postgres_url: str,
) -> None:
    import psycopg
    from psycopg import sql

    table = f"Durable_Old_{uuid.uuid4().hex[:8]}"  # mixed case: a quoted identifier
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL(_OLD_SCHEMA).format(table=sql.Identifier(table)))
    store = PostgresActionStateStore(postgres_url, table=table)
    try:
        with pytest.raises(DurableStoreError, match=f"no pipeline column.*DROP TABLE {table}"):
            store.get(key())
    finally:
        store.close()
        _drop_table(postgres_url, table)


# ------------------------------------------------------------------ the ids


def test_pipeline_ids() -> None:
    assert check_pipeline_id("orders") == "orders"
    for bad in ("", "  "):
        with pytest.raises(ValueError, match="non-blank"):
            check_pipeline_id(bad)
    with pytest.raises(ValueError, match="pipeline id is a non-blank string"):
        SqliteActionStateStore("x.sqlite", pipeline="")
    assert default_pipeline_id(TriageAgent()) == f"{__name__}:TriageAgent"
    assert default_pipeline_id(TriageAgent(), "triage") == f"{__name__}:TriageAgent/triage"


def test_the_option_names_the_pipeline_else_the_agent_class_else_default() -> None:
    named = AgentConfiguration({"durable-execution.pipeline-id": "orders"})
    assert pipeline_id_from(named, TriageAgent(), "op") == "orders"
    unnamed = AgentConfiguration()
    assert pipeline_id_from(unnamed, TriageAgent()) == f"{__name__}:TriageAgent"
    assert pipeline_id_from(unnamed, TriageAgent(), "op") == f"{__name__}:TriageAgent/op"
    assert pipeline_id_from(unnamed) == DEFAULT_PIPELINE
    with pytest.raises(ValueError, match="non-blank"):
        pipeline_id_from(AgentConfiguration({"durable-execution.pipeline-id": " "}))
