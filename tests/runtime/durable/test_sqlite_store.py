"""The SQLite store: durable writes, WAL, threads, processes, a missing file system."""

from __future__ import annotations

import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from flink_agents.runtime.durable import (
    CallOutcome,
    DurableCallLog,
    DurableStoreError,
    SqliteActionStateStore,
)

from ._support import SENT, Counter, key, send_email

ROOT = Path(__file__).resolve().parents[3]


def _run_child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_file_is_in_wal_mode_with_full_sync(sqlite_store: SqliteActionStateStore) -> None:
    sqlite_store.begin(key(), "d")
    with sqlite3.connect(sqlite_store.path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    synchronous = sqlite_store._run("check", lambda c: c.execute("PRAGMA synchronous").fetchone())
    assert synchronous == (2,)  # FULL


def test_outcome_survives_a_killed_process(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    child = _run_child(
        f"""
        import os, signal
        from flink_agents.runtime.durable import DurableCallKey, DurableCallLog, SqliteActionStateStore
        log = DurableCallLog(SqliteActionStateStore({str(path)!r}))
        k = DurableCallKey(agent_key="user-1", seq=0, step=0, action="act", call_index=0)
        log.execute_sync(k, lambda: "sent", (), {{}})
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    record = SqliteActionStateStore(path).get(key())
    assert record is not None and record.outcome == CallOutcome(status="value", value_json='"sent"')


def test_call_killed_mid_flight_is_left_pending_and_reconciled(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    child = _run_child(
        f"""
        import os
        from flink_agents.runtime.durable import DurableCallKey, DurableCallLog, SqliteActionStateStore
        from tests.runtime.durable._support import send_email
        os.environ["DURABLE_TEST_DIE_IN_CALL"] = "1"
        log = DurableCallLog(SqliteActionStateStore({str(path)!r}))
        k = DurableCallKey(agent_key="user-1", seq=0, step=0, action="act", call_index=0)
        log.execute_sync(k, send_email, ("a@example.com",), {{}})
        """
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    store = SqliteActionStateStore(path)
    record = store.get(key())
    assert record is not None and record.pending

    checked: list[str] = []

    def was_sent(to: str) -> str:
        checked.append(to)
        return "already sent"

    log = DurableCallLog(store)
    result = log.execute_sync(key(), send_email, ("a@example.com",), {}, reconciler=was_sent)
    assert result == "already sent" and checked == ["a@example.com"]
    assert SENT == []


def test_two_processes_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    code = f"""
        import sys
        from flink_agents.runtime.durable import DurableCallKey, DurableCallLog, SqliteActionStateStore
        log = DurableCallLog(SqliteActionStateStore({str(path)!r}))
        for i in range(40):
            k = DurableCallKey(agent_key=sys.argv[1], seq=i, step=0, action="act", call_index=0)
            log.execute_sync(k, lambda i: i, (i,), {{}})
        """
    children = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code), name],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("worker-a", "worker-b")
    ]
    for child in children:
        _, stderr = child.communicate(timeout=60)
        assert child.returncode == 0, stderr
    store = SqliteActionStateStore(path)
    for name in ("worker-a", "worker-b"):
        assert sum(len(store.load_run(name, seq)) for seq in range(40)) == 40


def test_threads_share_one_store(sqlite_store: SqliteActionStateStore) -> None:
    errors: list[BaseException] = []

    def writer(thread: int) -> None:
        try:
            for seq in range(25):
                call_key = key(agent_key=f"t{thread}", seq=seq)
                sqlite_store.begin(call_key, "d")
                sqlite_store.record_outcome(
                    call_key, "d", CallOutcome(status="value", value_json=str(seq))
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(thread,)) for thread in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for thread in range(6):
        records = [sqlite_store.get(key(agent_key=f"t{thread}", seq=seq)) for seq in range(25)]
        assert [r.outcome.value_json for r in records if r and r.outcome] == [
            str(seq) for seq in range(25)
        ]


def test_unusable_path_raises_store_error_naming_path_and_operation(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where a directory should be")
    store = SqliteActionStateStore(blocker / "records.sqlite")
    called: list[int] = []
    with pytest.raises(DurableStoreError) as raised:
        DurableCallLog(store).execute_sync(key(), lambda: called.append(1), (), {})
    assert called == []
    assert str(blocker) in str(raised.value) and "get failed" in str(raised.value)


def test_store_recovers_after_the_file_becomes_usable(tmp_path: Path) -> None:
    blocker = tmp_path / "dir"
    blocker.write_text("x")
    store = SqliteActionStateStore(blocker / "records.sqlite")
    with pytest.raises(DurableStoreError):
        store.get(key())
    blocker.unlink()
    store.begin(key(), "d")
    record = store.get(key())
    assert record is not None and record.pending


def test_forked_child_opens_its_own_connection(sqlite_store: SqliteActionStateStore) -> None:
    sqlite_store.begin(key(), "parent")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            sqlite_store.begin(key(1), "child")
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    digests = [record.digest for record in sqlite_store.load_run("user-1", 0)]
    assert digests == ["parent", "child"]


def test_invalid_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="table name"):
        SqliteActionStateStore(tmp_path / "x.sqlite", table="calls; DROP TABLE x")
    with pytest.raises(ValueError, match="synchronous"):
        SqliteActionStateStore(tmp_path / "x.sqlite", synchronous="EXTRA")  # type: ignore[arg-type]


def test_size_counts_database_and_wal(sqlite_store: SqliteActionStateStore) -> None:
    assert sqlite_store.size_bytes() == 0
    sqlite_store.begin(key(), "d")
    assert sqlite_store.size_bytes() > 0


# ---------------------------------------------------------------- the file deleted or replaced


def test_a_file_deleted_while_in_use_fails_every_later_operation(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    store = SqliteActionStateStore(path)
    log = DurableCallLog(store)
    tool = Counter()
    log.execute_sync(key(0), tool, (), {})
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with pytest.raises(DurableStoreError) as raised:
        store.get(key(0))
    message = str(raised.value)
    assert str(path) in message and "deleted or replaced while in use" in message
    with pytest.raises(DurableStoreError, match="deleted or replaced"):
        store.begin(key(1), "d")
    with pytest.raises(DurableStoreError, match="deleted or replaced"):
        log.execute_sync(key(1), tool, (), {})
    assert tool.count == 1  # the call did not run unrecorded
    assert not path.exists()  # and no new, empty file was started at the path


def test_a_file_replaced_by_another_database_fails(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    store = SqliteActionStateStore(path)
    store.begin(key(0), "d")
    other = SqliteActionStateStore(tmp_path / "other.sqlite")
    other.begin(key(0), "other")
    other.close()  # checkpointed: the whole database is in other.sqlite
    os.replace(tmp_path / "other.sqlite", path)
    for suffix in ("-wal", "-shm"):  # the old file's WAL must go with it
        Path(f"{path}{suffix}").unlink()
    with pytest.raises(DurableStoreError, match="deleted or replaced while in use"):
        store.begin(key(1), "d")
    with pytest.raises(DurableStoreError, match="deleted or replaced while in use"):
        store.get(key(0))
    store.close()
    # Nothing was written into the replacement either.
    assert [r.digest for r in SqliteActionStateStore(path).load_run("user-1", 0)] == ["other"]


def test_close_forgets_the_file_and_a_copy_opens_the_file_at_its_path(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    store = SqliteActionStateStore(path)
    store.begin(key(0), "d")
    copy = pickle.loads(pickle.dumps(store))
    store.close()
    path.unlink()
    store.begin(key(0), "new")  # a new file, opened deliberately after close
    assert [r.digest for r in copy.load_run("user-1", 0)] == ["new"]
