"""The action-state store for clusters: a table in PostgreSQL (psycopg 3).

Install with the ``postgres`` extra (``pip install 'pyflink-agents[postgres]'``). psycopg is
imported when the store first connects, so this module imports without it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

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
from flink_agents.runtime.durable.store import ClientStore
from flink_agents.runtime.errors import DurableStoreError, DurableStoreUnavailableError

if TYPE_CHECKING:
    import psycopg  # pyright: ignore[reportMissingImports]
    from psycopg import sql  # pyright: ignore[reportMissingImports]

__all__ = ["PostgresActionStateStore"]

T = TypeVar("T")

# Statement templates; {table} becomes the quoted table identifier. Every statement on
# records is scoped to the store's pipeline (the first column of the primary key).
_LATER_IN_RUN: Final = (
    "pipeline = %s AND agent_key = %s AND seq = %s AND "
    "(step > %s OR (step = %s AND action = %s AND call_index >= %s))"
)
_CREATE: Final = (
    "CREATE TABLE IF NOT EXISTS {table} ("
    "pipeline TEXT NOT NULL, "
    "agent_key TEXT NOT NULL, seq BIGINT NOT NULL, step INTEGER NOT NULL, "
    "action TEXT NOT NULL, call_index INTEGER NOT NULL, digest TEXT NOT NULL, "
    "status TEXT NOT NULL CHECK (status IN ('pending', 'value', 'error')), "
    "payload TEXT, "
    "PRIMARY KEY (" + KEY_COLUMNS + "))"
)
_HAS_PIPELINE_COLUMN: Final = (
    "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) "
    "AND attname = 'pipeline' AND NOT attisdropped)"
)
# Two seeks on the primary key (pipeline first), whatever the table's size.
_OTHER_PIPELINES: Final = (
    "SELECT (SELECT max(pipeline) FROM {table} WHERE pipeline < %s), "
    "(SELECT min(pipeline) FROM {table} WHERE pipeline > %s)"
)
_GET: Final = (
    "SELECT " + COLUMNS + " FROM {table} WHERE pipeline = %s AND agent_key = %s AND seq = %s "
    "AND step = %s AND action = %s AND call_index = %s"
)
_DROP_LATER: Final = "DELETE FROM {table} WHERE " + _LATER_IN_RUN
# One statement, so one round trip and one commit. Its DELETE and its upsert touch disjoint
# rows (a data-modifying WITH sees one snapshot, so they must).
_BEGIN: Final = (
    "WITH dropped AS (DELETE FROM {table} WHERE pipeline = %s AND agent_key = %s AND "
    "seq = %s AND (step > %s OR (step = %s AND action = %s AND call_index > %s))) "
    "INSERT INTO {table} (" + STORED_COLUMNS + ") "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, 'pending', NULL) "
    "ON CONFLICT (" + KEY_COLUMNS + ") DO UPDATE SET "
    "digest = EXCLUDED.digest, status = 'pending', payload = NULL"
)
_BEGIN_AGAIN: Final = (
    "INSERT INTO {table} (" + STORED_COLUMNS + ") "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, 'pending', NULL) "
    "ON CONFLICT (" + KEY_COLUMNS + ") DO UPDATE SET "
    "digest = EXCLUDED.digest, status = 'pending', payload = NULL"
)
_UPSERT_OUTCOME: Final = (
    "INSERT INTO {table} (" + STORED_COLUMNS + ") VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (" + KEY_COLUMNS + ") DO UPDATE SET "
    "digest = EXCLUDED.digest, status = EXCLUDED.status, payload = EXCLUDED.payload"
)
_LOAD_RUN: Final = (
    "SELECT " + COLUMNS + " FROM {table} WHERE pipeline = %s AND agent_key = %s AND seq = %s "
    "ORDER BY step, action, call_index"
)
_PRUNE: Final = (
    "DELETE FROM {table} AS t USING unnest(%s::text[], %s::bigint[]) AS p(k, s) "
    "WHERE t.pipeline = %s AND t.agent_key = p.k AND t.seq <= p.s"
)
_SIZE: Final = "SELECT pg_total_relation_size(%s::regclass)"


def _import_psycopg() -> Any:
    try:
        import psycopg  # pyright: ignore[reportMissingImports]
    except ImportError:
        raise DurableStoreError(
            "the PostgreSQL action-state store needs psycopg 3: "
            "pip install 'pyflink-agents[postgres]' (or 'psycopg[binary]')"
        ) from None
    return psycopg


class PostgresActionStateStore(ClientStore):
    """Records in one PostgreSQL table whose primary key is the call key.

    ``conninfo`` is a libpq connection string, as a URL (``postgresql://user:pw@host:5432/db``)
    or as keywords (``host=... dbname=...``). The table is created if missing. Each write is
    its own committed transaction before it returns (durable under the server's default
    ``synchronous_commit=on``). Threads share up to ``max_connections`` connections, opened
    on demand; when one breaks, the operation reconnects and retries once (every write is
    idempotent), then raises :class:`DurableStoreUnavailableError` (the durable-call log tries
    again with backoff); a refused login or another error raises :class:`DurableStoreError`.

    Records are scoped to ``pipeline``: the store reads and writes that pipeline's records only.
    Each new connection refuses (:class:`DurableStoreError`) a table that holds records of
    another pipeline, unless ``shared`` is true; and a table made before records had a
    pipeline (see :mod:`flink_agents.runtime.durable.pipeline`).
    """

    def __init__(
        self,
        conninfo: str,
        *,
        table: str = "flink_agents_durable_calls",
        max_connections: int = 4,
        connect_timeout_s: int = 10,
        application_name: str = "flink-agents-durable",
        pipeline: str = DEFAULT_PIPELINE,
        shared: bool = False,
        encryption_key_env: str | None = None,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.conninfo = conninfo
        self.table = check_table_name(table)
        self.pipeline = check_pipeline_id(pipeline)
        self.shared = shared
        self.encryption_key_env = encryption_key_env
        self.max_connections = max_connections
        self.connect_timeout_s = connect_timeout_s
        self.application_name = application_name
        self._init_runtime_state()

    def _init_runtime_state(self) -> None:
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self._idle: list[psycopg.Connection[Any]] = []
        self._generation = 0
        self._pid = os.getpid()
        self._sql: dict[str, sql.Composed] = {}
        key_env = self.encryption_key_env
        self._cipher = PayloadCipher(key_env) if key_env else None

    # -- pickling: ship the configuration, never the connection -----------------------------

    _CONFIG = (
        "conninfo",
        "table",
        "max_connections",
        "connect_timeout_s",
        "application_name",
        "pipeline",
        "shared",
        "encryption_key_env",
    )

    def __repr__(self) -> str:
        return (
            f"PostgresActionStateStore({self.describe()!r}, table={self.table!r}, "
            f"pipeline={self.pipeline!r})"
        )

    def describe(self) -> str:
        """``user@host:port/dbname`` of the server, without the password."""
        try:
            from psycopg.conninfo import (  # pyright: ignore[reportMissingImports]
                conninfo_to_dict,
            )

            params = conninfo_to_dict(self.conninfo)
        except Exception:
            return "<unparsable connection string>"
        user = params.get("user") or "?"
        host = params.get("host") or params.get("hostaddr") or "localhost"
        port = params.get("port") or "5432"
        dbname = params.get("dbname") or user
        return f"{user}@{host}:{port}/{dbname}"

    def _password(self) -> str | None:
        try:
            from psycopg.conninfo import (  # pyright: ignore[reportMissingImports]
                conninfo_to_dict,
            )

            password = conninfo_to_dict(self.conninfo).get("password")
        except Exception:
            return None
        return str(password) if password else None

    def _error(self, operation: str, exc: BaseException) -> DurableStoreError:
        detail = f"{type(exc).__name__}: {exc}".strip()
        password = self._password()
        if password:
            detail = detail.replace(password, "***")
        error = DurableStoreUnavailableError if _transient(exc) else DurableStoreError
        return error(
            f"PostgreSQL action-state store {self.describe()} table {self.table}: "
            f"{operation} failed: {detail}"
        )

    # -- connection ------------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        if self._cipher is not None:
            self._cipher.check()
        psycopg = _import_psycopg()
        conn = psycopg.connect(
            self.conninfo,
            autocommit=True,
            connect_timeout=self.connect_timeout_s,
            application_name=self.application_name,
        )
        try:
            self._create_table(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _create_table(self, conn: psycopg.Connection[Any]) -> None:
        # Workers start together; CREATE TABLE IF NOT EXISTS alone races on the catalog.
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.table,))
            conn.execute(self._statement(_CREATE))
            self._check_pipelines(conn)

    def _check_pipelines(self, conn: psycopg.Connection[Any]) -> None:
        """Refuse a table without pipeline ids, or holding another pipeline's records."""
        where = f"PostgreSQL action-state store {self.describe()}"
        has_column = conn.execute(_HAS_PIPELINE_COLUMN, (f'"{self.table}"',)).fetchone()
        if not has_column or not has_column[0]:
            raise unscoped_table_error(where, self.table)
        if self.shared:
            return
        row = conn.execute(
            self._statement(_OTHER_PIPELINES), (self.pipeline, self.pipeline)
        ).fetchone()
        below, above = row if row is not None else (None, None)
        other = below if below is not None else above
        if other is not None:
            raise foreign_pipeline_error(where, self.table, self.pipeline, str(other))

    def _statement(self, template: str) -> sql.Composed:
        """The template with the table name quoted in, built once per template."""
        statement = self._sql.get(template)
        if statement is None:
            from psycopg import sql  # pyright: ignore[reportMissingImports]

            statement = sql.SQL(template).format(table=sql.Identifier(self.table))  # pyright: ignore[reportArgumentType]
            self._sql[template] = statement
        return statement

    def _take(self) -> tuple[psycopg.Connection[Any] | None, int]:
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent's connections are not ours
                self._idle = []
                self._pid = os.getpid()
            return (self._idle.pop() if self._idle else None), self._generation

    def _give_back(self, conn: psycopg.Connection[Any], generation: int) -> None:
        with self._lock:
            if generation == self._generation and not conn.closed:
                self._idle.append(conn)
                return
        self._discard(conn)

    @staticmethod
    def _discard(conn: psycopg.Connection[Any] | None) -> None:
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _run(self, operation: str, body: Callable[[psycopg.Connection[Any]], T]) -> T:
        psycopg = _import_psycopg()
        with self._slots:
            conn, generation = self._take()
            for attempt in (1, 2):
                had_connection = conn is not None
                try:
                    if conn is None:
                        conn = self._connect()
                    result = body(conn)
                except psycopg.OperationalError as exc:
                    lost = conn is None or conn.closed or conn.broken
                    self._discard(conn)
                    conn = None
                    # Retry once when a connection that worked before was lost (server
                    # restart, idle timeout); never when the server cannot be reached at all.
                    if attempt == 1 and lost and had_connection:
                        continue
                    raise self._error(operation, exc) from exc
                except psycopg.Error as exc:
                    self._discard(conn)
                    raise self._error(operation, exc) from exc
                except BaseException:
                    self._discard(conn)
                    raise
                self._give_back(conn, generation)
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    # -- ActionStateStore ------------------------------------------------------------------

    def get(self, key: DurableCallKey) -> CallRecord | None:
        statement = self._statement(_GET)

        params = key_params(self.pipeline, key)

        def body(conn: psycopg.Connection[Any]) -> Row | None:
            return conn.execute(statement, params).fetchone()

        row = self._run("get", body)
        return None if row is None else record_from_row(row, self._cipher)

    def begin(self, key: DurableCallKey, digest: str) -> None:
        statement = self._statement(_BEGIN)
        params = (*later_params(self.pipeline, key), *key_params(self.pipeline, key), digest)
        self._run("begin", lambda conn: conn.execute(statement, params))

    def begin_again(self, key: DurableCallKey, digest: str) -> None:
        statement = self._statement(_BEGIN_AGAIN)
        params = (*key_params(self.pipeline, key), digest)
        self._run("begin again", lambda conn: conn.execute(statement, params))

    def record_outcome(self, key: DurableCallKey, digest: str, outcome: CallOutcome) -> None:
        status, payload = outcome_to_columns(outcome, self._cipher)
        statement = self._statement(_UPSERT_OUTCOME)
        params = (*key_params(self.pipeline, key), digest, status, payload)
        self._run("record outcome", lambda conn: conn.execute(statement, params))

    def load_run(self, agent_key: str, seq: int) -> list[CallRecord]:
        statement = self._statement(_LOAD_RUN)

        def body(conn: psycopg.Connection[Any]) -> list[Row]:
            return conn.execute(statement, (self.pipeline, agent_key, seq)).fetchall()

        return [record_from_row(row, self._cipher) for row in self._run("load run", body)]

    def drop_from(self, key: DurableCallKey) -> int:
        statement = self._statement(_DROP_LATER)

        def body(conn: psycopg.Connection[Any]) -> int:
            return conn.execute(statement, later_params(self.pipeline, key)).rowcount

        return self._run("drop records", body)

    def prune(self, agent_key: str, up_to_seq: int) -> int:
        return self.prune_many({agent_key: up_to_seq})

    def prune_many(self, up_to_seq_by_key: Mapping[str, int]) -> int:
        if not up_to_seq_by_key:
            return 0
        keys = list(up_to_seq_by_key)
        seqs = [up_to_seq_by_key[key] for key in keys]
        statement = self._statement(_PRUNE)
        params = (keys, seqs, self.pipeline)
        return self._run("prune", lambda conn: conn.execute(statement, params).rowcount)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            self._generation += 1  # connections in use are closed when handed back
        for conn in idle:
            self._discard(conn)

    # -- for benchmarks and operators ------------------------------------------------------

    def size_bytes(self) -> int:
        """Bytes the table takes on the server, indexes and TOAST included."""
        statement = self._statement(_SIZE)
        row = self._run("size", lambda conn: conn.execute(statement, (self.table,)).fetchone())
        return int(row[0]) if row else 0


def _transient(exc: BaseException) -> bool:
    """Whether a failed operation may succeed when tried again.

    psycopg's ``OperationalError`` (the server down, restarting or refusing connections, a
    connection lost, a full disk, a serialization failure), but not a refused login or a
    database or role that does not exist; and a server or transaction that is read-only
    (``25006``).
    """
    psycopg = _import_psycopg()
    sqlstate = getattr(exc, "sqlstate", None) or ""
    if isinstance(exc, psycopg.OperationalError):
        # A refused connection carries no SQLSTATE: libpq's message says why.
        message = str(exc).lower()
        refused = sqlstate.startswith(("28", "3D")) or any(
            part in message for part in _REFUSED_LOGIN
        )
        return not refused
    return sqlstate == "25006"


_REFUSED_LOGIN = ("authentication failed", "pg_hba.conf", "does not exist")
"""libpq's words for a login the server will refuse again: a wrong password, a host or user
that is not allowed, a database or role that does not exist."""
