"""The PostgreSQL store against a real server (FLINK_AGENTS_TEST_POSTGRES_URL)."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from flink_agents.runtime.durable import (
    DurableCallLog,
    DurableStoreError,
    DurableStoreUnavailableError,
    PostgresActionStateStore,
    StoreRetry,
)

from ._support import Counter, key
from .conftest import POSTGRES_URL_ENV, _drop_table, postgres_url_from


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_ci_fails_instead_of_skipping_without_a_server() -> None:
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        postgres_url_from({"CI": "true"})
    with pytest.raises(pytest.skip.Exception):
        postgres_url_from({})
    with pytest.raises(pytest.skip.Exception):
        postgres_url_from({"CI": "false", POSTGRES_URL_ENV: "  "})
    assert postgres_url_from({"CI": "true", POSTGRES_URL_ENV: "postgresql://h/db"}) == (
        "postgresql://h/db"
    )


def test_unreachable_server_raises_store_error_without_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import psycopg

    port = _closed_port()
    store = PostgresActionStateStore(
        f"postgresql://agent:pw-Secret-4711@127.0.0.1:{port}/records", connect_timeout_s=5
    )
    attempts: list[str] = []
    connect = psycopg.connect

    def counting_connect(conninfo: str, *args: Any, **kwargs: Any) -> Any:
        attempts.append(conninfo)
        return connect(conninfo, *args, **kwargs)

    monkeypatch.setattr(psycopg, "connect", counting_connect)
    tool = Counter()
    with pytest.raises(DurableStoreUnavailableError) as raised:
        DurableCallLog(store, retry=StoreRetry(0)).execute_sync(key(), tool, (), {})
    assert len(attempts) == 1  # the store itself does not try again (the log's retry does)
    assert tool.count == 0
    message = str(raised.value)
    assert f"agent@127.0.0.1:{port}/records" in message and "get failed" in message
    assert "pw-Secret-4711" not in message
    assert "pw-Secret-4711" not in repr(store)


def test_wrong_password_raises_store_error_without_it(postgres_url: str) -> None:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(postgres_url)
    params["password"] = "Wrong-Password-0815"
    store = PostgresActionStateStore(make_conninfo("", **params))
    with pytest.raises(DurableStoreError) as raised:
        store.get(key())
    assert "Wrong-Password-0815" not in str(raised.value)
    assert "authentication" in str(raised.value)


@pytest.fixture
def keyword_store(postgres_url: str) -> Iterator[PostgresActionStateStore]:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    table = f"durable_test_{uuid.uuid4().hex[:12]}"
    store = PostgresActionStateStore(
        make_conninfo("", **conninfo_to_dict(postgres_url)), table=table
    )
    yield store
    store.close()
    _drop_table(postgres_url, table)


def test_keyword_conninfo_works_and_is_described_without_password(
    keyword_store: PostgresActionStateStore, postgres_url: str
) -> None:
    from psycopg.conninfo import conninfo_to_dict

    assert keyword_store.conninfo.startswith(("host=", "user=", "dbname=", "password=", "port="))
    keyword_store.begin(key(), "d")
    record = keyword_store.get(key())
    assert record is not None and record.pending
    password = conninfo_to_dict(postgres_url).get("password")
    assert password and str(password) not in keyword_store.describe()


def test_lost_connection_is_reopened_and_the_write_retried(
    postgres_store: PostgresActionStateStore, postgres_url: str
) -> None:
    import psycopg

    postgres_store.application_name = f"durable-test-{uuid.uuid4().hex[:8]}"
    postgres_store.begin(key(0), "d0")
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = %s",
            (postgres_store.application_name,),
        ).fetchone()
    assert killed == (1,)
    postgres_store.begin(key(1), "d1")
    assert [record.digest for record in postgres_store.load_run("user-1", 0)] == ["d0", "d1"]


def test_workers_creating_the_table_at_once_do_not_fail(postgres_url: str) -> None:
    table = f"durable_test_{uuid.uuid4().hex[:12]}"
    errors: list[BaseException] = []
    stores = [PostgresActionStateStore(postgres_url, table=table) for _ in range(4)]
    barrier = threading.Barrier(len(stores))

    def open_store(store: PostgresActionStateStore) -> None:
        barrier.wait()
        try:
            store.get(key())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_store, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    _drop_table(postgres_url, table)
    assert errors == []


def test_table_name_must_be_an_identifier() -> None:
    with pytest.raises(ValueError, match="table name"):
        PostgresActionStateStore("postgresql://h/db", table='calls"; DROP TABLE x; --')


def test_size_is_reported(postgres_store: PostgresActionStateStore) -> None:
    postgres_store.begin(key(), "d")
    assert postgres_store.size_bytes() > 0


def test_threads_share_at_most_max_connections(postgres_url: str) -> None:
    import psycopg

    table = f"durable_test_{uuid.uuid4().hex[:12]}"
    name = f"durable-pool-{uuid.uuid4().hex[:8]}"
    store = PostgresActionStateStore(
        postgres_url, table=table, max_connections=2, application_name=name
    )
    barrier = threading.Barrier(6)

    def writer(thread: int) -> None:
        barrier.wait()
        for seq in range(10):
            store.begin(key(agent_key=f"t{thread}", seq=seq), "d")

    threads = [threading.Thread(target=writer, args=(thread,)) for thread in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        opened = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
        ).fetchone()
    assert opened is not None and 1 <= opened[0] <= 2
    assert (
        sum(len(store.load_run(f"t{thread}", seq)) for thread in range(6) for seq in range(10))
        == 60
    )
    store.close()
    _drop_table(postgres_url, table)
