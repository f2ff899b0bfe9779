"""The default action-state store: an embedded SQLite file (local runs, one machine)."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from flink_agents.runtime.durable._rows import (
    COLUMNS,
    KEY_COLUMNS,
    STORED_COLUMNS,
    Row,
    check_table_name,
    key_params,
    later_params,
    outcome_to_columns,
    record_from_row,
)
from flink_agents.runtime.durable.cipher import PayloadCipher
from flink_agents.runtime.durable.pipeline import (
    DEFAULT_PIPELINE,
    check_pipeline_id,
    foreign_pipeline_error,
    unscoped_table_error,
)
from flink_agents.runtime.durable.records import CallOutcome, CallRecord, DurableCallKey
from flink_agents.runtime.durable.store import ActionStateStore
from flink_agents.runtime.errors import DurableStoreError, DurableStoreUnavailableError
from flink_agents.runtime.private_files import create_private_file, make_private_dirs

__all__ = ["SqliteActionStateStore"]

T = TypeVar("T")

_LOG = logging.getLogger(__name__)

Synchronous = Literal["FULL", "NORMAL", "OFF"]

_LATER_IN_RUN = (
    "pipeline = ? AND agent_key = ? AND seq = ? AND "
    "(step > ? OR (step = ? AND action = ? AND call_index >= ?))"
)


class SqliteActionStateStore(ActionStateStore):
    """Records in one SQLite file in WAL mode.

    One connection, guarded by a lock, serves every thread of the process; several processes
    may share the file (SQLite's own locking, waiting up to ``busy_timeout_s``). With the
    default ``synchronous="FULL"`` each write is fsynced before it returns, so a record
    survives a killed process and a crashed machine. ``"NORMAL"`` survives a killed process
    but may lose the last writes on power loss; ``"OFF"`` is for benchmarks of size only.

    Records are scoped to ``pipeline``: the store reads and writes that pipeline's records only.
    When it opens, it refuses (:class:`DurableStoreError`) a table that holds records of
    another pipeline, unless ``shared`` is true; and a table made before records had a
    pipeline (see :mod:`flink_agents.runtime.durable.pipeline`).

    The store remembers the identity of the file it opened (device and inode) and checks,
    with one ``stat`` before every operation, that the path still names that file. A file
    deleted or replaced while in use raises :class:`DurableStoreError` (from then on, until
    :meth:`close`): an open connection would otherwise keep writing into the unlinked file,
    whose records are lost, or a reconnect would start an empty one.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str = "durable_calls",
        synchronous: Synchronous = "FULL",
        busy_timeout_s: float = 30.0,
        pipeline: str = DEFAULT_PIPELINE,
        shared: bool = False,
        encryption_key_env: str | None = None,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL", "OFF"):
            raise ValueError(f"synchronous must be FULL, NORMAL or OFF, not {synchronous!r}")
        self.path = str(path)
        self.table = check_table_name(table)
        self.pipeline = check_pipeline_id(pipeline)
        self.shared = shared
        self.encryption_key_env = encryption_key_env
        self._cipher = PayloadCipher(encryption_key_env) if encryption_key_env else None
        self.synchronous: Synchronous = synchronous
        self.busy_timeout_s = busy_timeout_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._file: str | None = None
        """Absolute path of the file opened first (None until then, and for ``:memory:``)."""
        self._identity: tuple[int, int] | None = None
        """``(st_dev, st_ino)`` of that file."""

    # -- pickling: ship the configuration, never the connection -----------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_lock"] = None
        state["_conn"] = None
        state["_file"] = None  # the copy opens the file at its path wherever it lands
        state["_identity"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def __repr__(self) -> str:
        return (
            f"SqliteActionStateStore({self.path!r}, table={self.table!r}, "
            f"pipeline={self.pipeline!r})"
        )

    # -- connection ------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._cipher is not None:
            self._cipher.check()
        target = self.path
        if target != ":memory:":
            if self._identity is not None:
                # Reconnecting (after an error): only to the file opened first, never to a
                # new empty one at its path.
                self._check_file()
            target = self._file or os.path.abspath(target)
            if self._identity is None:
                # Created private; SQLite gives the -wal and -shm files the same mode.
                make_private_dirs(Path(target).parent)
                create_private_file(target)
        conn = sqlite3.connect(
            target,
            timeout=self.busy_timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            self._set_up(conn)
            if target != ":memory:":  # the file exists now: set-up wrote to it
                self._remember_file(target)
        except BaseException:
            conn.close()
            raise
        return conn

    def _remember_file(self, target: str) -> None:
        if self._identity is None:
            info = os.stat(target)
            self._file, self._identity = target, (info.st_dev, info.st_ino)
            if info.st_mode & 0o077:
                _LOG.warning(
                    "SQLite action-state store %s: the file is readable by other users "
                    "(mode %o), and it holds recorded tool results and answers; "
                    "chmod 600 it (and its -wal and -shm files)",
                    target,
                    info.st_mode & 0o777,
                )
        else:
            self._check_file()

    def _check_file(self) -> None:
        """Raise :class:`DurableStoreError` unless the path still names the file opened."""
        assert self._file is not None and self._identity is not None
        try:
            info = os.stat(self._file)
        except FileNotFoundError:
            raise self._file_lost("it no longer exists") from None
        except OSError as exc:
            error = DurableStoreUnavailableError if _transient(exc) else DurableStoreError
            raise error(
                f"SQLite action-state store {self._file}: cannot check the store file: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if (info.st_dev, info.st_ino) != self._identity:
            raise self._file_lost("another file is at its path now")

    def _file_lost(self, what: str) -> DurableStoreError:
        return DurableStoreError(
            f"SQLite action-state store {self._file}: the store file was deleted or replaced "
            f"while in use ({what}). Its records are not at that path any more, so no call is "
            "recorded or replayed through it: restore the file, or restart the job (calls "
            "since the last checkpoint then run again)"
        )

    def _set_up(self, conn: sqlite3.Connection) -> None:
        # Switching a new file to WAL needs an exclusive lock and does not wait on SQLite's
        # busy handler, so when several processes open the file at once, wait here.
        deadline = time.monotonic() + self.busy_timeout_s
        delay = 0.005
        while True:
            try:
                if self.path != ":memory:":
                    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                    if str(mode).lower() != "wal":
                        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                    if str(mode).lower() != "wal":
                        raise sqlite3.OperationalError(f"could not switch to WAL (got {mode})")
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.table} ("
                    "pipeline TEXT NOT NULL, "
                    "agent_key TEXT NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL, "
                    "action TEXT NOT NULL, call_index INTEGER NOT NULL, digest TEXT NOT NULL, "
                    "status TEXT NOT NULL CHECK (status IN ('pending', 'value', 'error')), "
                    f"payload TEXT, PRIMARY KEY ({KEY_COLUMNS})) WITHOUT ROWID"
                )
                self._check_pipelines(conn)
                return
            except sqlite3.OperationalError as exc:
                message = str(exc).lower()
                busy = "locked" in message or "busy" in message
                if not busy or time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def _check_pipelines(self, conn: sqlite3.Connection) -> None:
        """Refuse a table without pipeline ids, or holding another pipeline's records."""
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({self.table})")}
        where = f"SQLite action-state store {self.path}"
        if "pipeline" not in columns:
            raise unscoped_table_error(where, self.table)
        if self.shared:
            return
        # Two seeks on the primary key (pipeline first), whatever the table's size.
        below, above = conn.execute(
            f"SELECT (SELECT max(pipeline) FROM {self.table} WHERE pipeline < ?), "
            f"(SELECT min(pipeline) FROM {self.table} WHERE pipeline > ?)",
            (self.pipeline, self.pipeline),
        ).fetchone()
        other = below if below is not None else above
        if other is not None:
            raise foreign_pipeline_error(where, self.table, self.pipeline, str(other))

    def _run(self, operation: str, body: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent's connection is not ours
                self._conn = None
                self._pid = os.getpid()
            try:
                if self._conn is None:
                    self._conn = self._connect()
                elif self._identity is not None:
                    self._check_file()  # one stat: never read or write an unlinked file
                conn = self._conn
                return body(conn)
            except DurableStoreError:
                lost, self._conn = self._conn, None
                if lost is not None:
                    with contextlib.suppress(sqlite3.Error):
                        lost.close()
                raise
            except (sqlite3.Error, OSError) as exc:
                broken, self._conn = self._conn, None
                if broken is not None:
                    with contextlib.suppress(sqlite3.Error):
                        broken.close()
                error = DurableStoreUnavailableError if _transient(exc) else DurableStoreError
                raise error(
                    f"SQLite action-state store {self.path}: {operation} failed: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc

    @staticmethod
    def _transaction(
        conn: sqlite3.Connection, statements: list[tuple[str, tuple[Any, ...]]]
    ) -> int:
        changed = 0
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                changed += conn.execute(sql, params).rowcount
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return changed

    # -- ActionStateStore ------------------------------------------------------------------

    def get(self, key: DurableCallKey) -> CallRecord | None:
        sql = (
            f"SELECT {COLUMNS} FROM {self.table} WHERE pipeline = ? AND agent_key = ? "
            "AND seq = ? AND step = ? AND action = ? AND call_index = ?"
        )
        params = key_params(self.pipeline, key)

        def body(conn: sqlite3.Connection) -> Row | None:
            return conn.execute(sql, params).fetchone()

        row = self._run("get", body)
        return None if row is None else record_from_row(row, self._cipher)

    def begin(self, key: DurableCallKey, digest: str) -> None:
        statements: list[tuple[str, tuple[Any, ...]]] = [
            (f"DELETE FROM {self.table} WHERE {_LATER_IN_RUN}", later_params(self.pipeline, key)),
            (
                f"INSERT INTO {self.table} ({STORED_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', NULL)",
                (*key_params(self.pipeline, key), digest),
            ),
        ]
        self._run("begin", lambda conn: self._transaction(conn, statements))

    def begin_again(self, key: DurableCallKey, digest: str) -> None:
        sql = (
            f"INSERT INTO {self.table} ({STORED_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', NULL) "
            f"ON CONFLICT ({KEY_COLUMNS}) DO UPDATE SET "
            "digest = excluded.digest, status = 'pending', payload = NULL"
        )
        params = (*key_params(self.pipeline, key), digest)
        self._run("begin again", lambda conn: self._transaction(conn, [(sql, params)]))

    def record_outcome(self, key: DurableCallKey, digest: str, outcome: CallOutcome) -> None:
        status, payload = outcome_to_columns(outcome, self._cipher)
        sql = (
            f"INSERT INTO {self.table} ({STORED_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            f"ON CONFLICT ({KEY_COLUMNS}) DO UPDATE SET "
            "digest = excluded.digest, status = excluded.status, payload = excluded.payload"
        )
        params = (*key_params(self.pipeline, key), digest, status, payload)
        self._run("record outcome", lambda conn: self._transaction(conn, [(sql, params)]))

    def load_run(self, agent_key: str, seq: int) -> list[CallRecord]:
        sql = (
            f"SELECT {COLUMNS} FROM {self.table} WHERE pipeline = ? AND agent_key = ? "
            "AND seq = ? ORDER BY step, action, call_index"
        )

        def body(conn: sqlite3.Connection) -> list[Row]:
            return conn.execute(sql, (self.pipeline, agent_key, seq)).fetchall()

        return [record_from_row(row, self._cipher) for row in self._run("load run", body)]

    def drop_from(self, key: DurableCallKey) -> int:
        sql = f"DELETE FROM {self.table} WHERE {_LATER_IN_RUN}"
        return self._run(
            "drop records",
            lambda conn: self._transaction(conn, [(sql, later_params(self.pipeline, key))]),
        )

    def prune(self, agent_key: str, up_to_seq: int) -> int:
        return self.prune_many({agent_key: up_to_seq})

    def prune_many(self, up_to_seq_by_key: Mapping[str, int]) -> int:
        if not up_to_seq_by_key:
            return 0
        sql = f"DELETE FROM {self.table} WHERE pipeline = ? AND agent_key = ? AND seq <= ?"
        statements: list[tuple[str, tuple[Any, ...]]] = [
            (sql, (self.pipeline, agent_key, seq)) for agent_key, seq in up_to_seq_by_key.items()
        ]
        return self._run("prune", lambda conn: self._transaction(conn, statements))

    def close(self) -> None:
        """Close the connection and forget the file: the next use opens the file at the path."""
        with self._lock:
            conn, self._conn = self._conn, None
            self._file = self._identity = None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    # -- for benchmarks and operators ------------------------------------------------------

    def size_bytes(self) -> int:
        """Bytes on disk: the database file plus its WAL and shared-memory files."""
        if self.path == ":memory:":
            return 0
        return sum(
            os.path.getsize(self.path + suffix)
            for suffix in ("", "-wal", "-shm")
            if os.path.exists(self.path + suffix)
        )


_TRANSIENT_MESSAGES = (
    "readonly",
    "read-only",
    "locked",
    "busy",
    "disk i/o",
    "full",
    "unable to open",
)
"""What SQLite says when the file cannot be written or opened just now (the operation may
succeed later): a read-only file or mount, a lock held too long, an I/O error, a full disk."""


_TRANSIENT_ERRNOS = frozenset(
    {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EIO}
    | {errno.EAGAIN, errno.EBUSY, errno.EINTR}
)
"""OS errors of a file system made read-only or full, permissions taken away, I/O errors."""


def _transient(exc: BaseException) -> bool:
    """Whether a failed operation may succeed when tried again."""
    if isinstance(exc, OSError):
        return exc.errno in _TRANSIENT_ERRNOS
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    message = str(exc).lower()
    return any(part in message for part in _TRANSIENT_MESSAGES)
