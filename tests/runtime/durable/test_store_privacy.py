"""What the store keeps is private: its files are 0600, and its outcomes can be encrypted."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.runtime.durable import (
    ActionStateStore,
    DurableCallLog,
    DurableStoreError,
    KafkaActionStateStore,
    PostgresActionStateStore,
    SqliteActionStateStore,
)
from flink_agents.runtime.durable.store_url import open_durable_call_log

from ._support import Ticket, key
from .conftest import OpenStore, topic_messages

SECRET = "sk-ant-api03-VERY-SECRET-KEY-0123456789"
"""A key a tool returned, as the probe found in stored results."""

KEY_ENV = "FLINK_AGENTS_TEST_STORE_KEY"


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, under which SQLite alone makes its files world-readable."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- file modes --------------------------------------------------------------------------------


def test_sqlite_store_files_and_directories_it_makes_are_private(
    tmp_path: Path, umask_022: None
) -> None:
    path = tmp_path / "state" / "jobs" / "durable.sqlite"
    store = SqliteActionStateStore(path)
    DurableCallLog(store).execute_sync(key(), lambda: SECRET, (), {})
    for suffix in ("", "-wal", "-shm"):
        file = Path(str(path) + suffix)
        assert file.exists(), file
        assert _mode(file) == 0o600, file
    assert _mode(tmp_path / "state" / "jobs") == 0o700
    assert _mode(tmp_path / "state") == 0o700
    store.close()


def test_existing_store_file_keeps_its_mode_and_a_readable_one_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "durable.sqlite"
    path.touch(mode=0o644)
    os.chmod(path, 0o644)
    store = SqliteActionStateStore(path)
    store.get(key())
    store.close()
    assert _mode(path) == 0o644
    assert "readable by other users" in caplog.text and "chmod 600" in caplog.text


# -- encryption at rest ------------------------------------------------------------------------


def _raw_payloads(store: ActionStateStore) -> list[str]:
    """Every payload as the database (or topic) holds it."""
    if isinstance(store, KafkaActionStateStore):
        values = [value for _, value in topic_messages(store.bootstrap_servers, store.topic)]
        return [payload for v in values if v and (payload := json.loads(v)["payload"])]
    if isinstance(store, SqliteActionStateStore):
        import sqlite3

        with contextlib.closing(sqlite3.connect(store.path)) as conn:
            rows = conn.execute(f"SELECT payload FROM {store.table}").fetchall()
    else:
        import psycopg
        from psycopg import sql

        assert isinstance(store, PostgresActionStateStore)
        query = sql.SQL("SELECT payload FROM {}").format(sql.Identifier(store.table))
        with psycopg.connect(store.conninfo) as conn:
            rows = conn.execute(query).fetchall()
    return [row[0] for row in rows if row[0] is not None]


def test_encrypted_store_keeps_no_result_or_error_in_the_clear(
    open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode())
    store = open_store(encryption_key_env=KEY_ENV)
    log = DurableCallLog(store)

    def leaky_tool() -> Ticket:
        return Ticket(id=1, title=f"key is {SECRET}")

    def failing_tool() -> None:
        raise ValueError(f"rejected {SECRET}")

    assert log.execute_sync(key(0), leaky_tool, (), {}).title.endswith(SECRET)
    with pytest.raises(ValueError, match=SECRET):
        log.execute_sync(key(1), failing_tool, (), {})

    payloads = _raw_payloads(store)
    assert len(payloads) == 2
    assert all(p.startswith("fernet:") and SECRET not in p for p in payloads)
    assert "sk-ant" not in pickle.dumps(store).decode("latin-1")
    # A restarted worker with the key in its environment replays both.
    again = DurableCallLog(pickle.loads(pickle.dumps(store)))
    assert again.execute_sync(key(0), leaky_tool, (), {}).title.endswith(SECRET)
    with pytest.raises(ValueError, match=SECRET):
        again.execute_sync(key(1), failing_tool, (), {})


def test_encrypted_records_need_the_key(
    open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Fernet.generate_key().decode()
    monkeypatch.setenv(KEY_ENV, first)
    DurableCallLog(open_store(encryption_key_env=KEY_ENV)).execute_sync(key(), lambda: 1, (), {})

    with pytest.raises(DurableStoreError, match="is encrypted") as raised:
        open_store().get(key())
    assert first not in str(raised.value)
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode())
    with pytest.raises(DurableStoreError, match="cannot be decrypted"):
        open_store(encryption_key_env=KEY_ENV).get(key())
    # Rotation: the new key first seals, the old one still opens the old records.
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode() + "," + first)
    record = open_store(encryption_key_env=KEY_ENV).get(key())
    assert record is not None and record.outcome is not None
    assert record.outcome.value_json == "1"


def test_plain_records_are_read_after_encryption_is_turned_on(
    open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    DurableCallLog(open_store()).execute_sync(key(), lambda: "plain", (), {})
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode())
    log = DurableCallLog(open_store(encryption_key_env=KEY_ENV))
    assert log.execute_sync(key(), lambda: "not called", (), {}) == "plain"


def test_missing_or_bad_key_fails_when_the_store_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = AgentConfiguration(
        {
            "durable-execution.store": f"sqlite:///{tmp_path}/d.db",
            "durable-execution.store.encryption-key-env": KEY_ENV,
        }
    )
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(DurableStoreError, match=f"{KEY_ENV} is not set"):
        open_durable_call_log(config)
    monkeypatch.setenv(KEY_ENV, "not-a-key-but-a-secret")
    with pytest.raises(DurableStoreError, match="does not hold Fernet keys") as raised:
        open_durable_call_log(config)
    assert "not-a-key-but-a-secret" not in str(raised.value)
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode())
    log = open_durable_call_log(config)
    assert log is not None
    assert log.execute_sync(key(), lambda: SECRET, (), {}) == SECRET
    for suffix in ("", "-wal"):
        assert SECRET.encode() not in (tmp_path / f"d.db{suffix}").read_bytes()
    log.close()
