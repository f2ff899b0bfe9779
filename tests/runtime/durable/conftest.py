"""Stores for the durable tests: SQLite always, PostgreSQL when a server is given.

PostgreSQL tests read the server URL from FLINK_AGENTS_TEST_POSTGRES_URL (start one with
``tools/postgres/start.sh``). Without it they skip, except under CI (``CI=true``), where they
fail: CI must run them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from flink_agents.runtime.durable import (
    ActionStateStore,
    PostgresActionStateStore,
    SqliteActionStateStore,
)

POSTGRES_URL_ENV = "FLINK_AGENTS_TEST_POSTGRES_URL"


def postgres_url_from(environ: Mapping[str, str]) -> str:
    """The test server URL; skips without one, fails instead under CI=true."""
    url = environ.get(POSTGRES_URL_ENV, "").strip()
    if url:
        return url
    if environ.get("CI", "").strip().lower() == "true":
        pytest.fail(
            f"{POSTGRES_URL_ENV} is not set but CI=true: CI must run the PostgreSQL tests "
            "(start a server with tools/postgres/start.sh)",
            pytrace=False,
        )
    pytest.skip(f"PostgreSQL tests need {POSTGRES_URL_ENV} (tools/postgres/start.sh)")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    return postgres_url_from(os.environ)


def _drop_table(url: str, table: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


@pytest.fixture
def postgres_store(postgres_url: str) -> Iterator[PostgresActionStateStore]:
    table = f"durable_test_{uuid.uuid4().hex[:12]}"
    store = PostgresActionStateStore(postgres_url, table=table)
    yield store
    store.close()
    _drop_table(postgres_url, table)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteActionStateStore]:
    store = SqliteActionStateStore(tmp_path / "durable.sqlite")
    yield store
    store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> ActionStateStore:
    """Each test that takes ``store`` runs against both stores."""
    return request.getfixturevalue(f"{request.param}_store")


OpenStore = Callable[..., ActionStateStore]
"""``open_store(pipeline=..., shared=...)``: another store over the same table."""


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenStore]:
    """Opens stores over one table (of each store kind in turn); all closed at the end."""
    opened: list[ActionStateStore] = []
    table = f"durable_test_{uuid.uuid4().hex[:12]}"
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else ""

    def open_one(**options: Any) -> ActionStateStore:
        store: ActionStateStore
        if request.param == "postgres":
            store = PostgresActionStateStore(url, table=table, **options)
        else:
            store = SqliteActionStateStore(tmp_path / "shared.sqlite", table=table, **options)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()
    if url:
        _drop_table(url, table)
