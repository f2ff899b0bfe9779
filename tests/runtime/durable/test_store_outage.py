"""A store that cannot be written for a while: no call runs unrecorded twice, no task fails."""

from __future__ import annotations

import pickle
import sqlite3
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.runtime.durable import (
    ActionStateStore,
    CallOutcome,
    DurableCallLog,
    DurableStoreError,
    DurableStoreUnavailableError,
    PostgresActionStateStore,
    SqliteActionStateStore,
    StoreRetry,
    call_digest,
)
from flink_agents.runtime.durable.store_url import open_durable_call_log

from ._support import Counter, FlakyStore, key
from .conftest import _drop_table


class FakeClock:
    """A clock that moves only when the code under test sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class OutageStore(FlakyStore):
    """Wraps a store; while ``read_only`` every write fails as a read-only SQLite file does."""

    def __init__(self, inner: ActionStateStore) -> None:
        super().__init__(inner)
        self.read_only = False

    def _check(self, operation: str) -> None:
        self.operations.append(operation)
        if self.read_only and operation not in ("get", "load_run"):
            raise DurableStoreUnavailableError(
                f"{operation} failed: OperationalError: attempt to write a readonly database"
            )


def no_retry(store: ActionStateStore) -> DurableCallLog:
    """A restarted worker's log over ``store`` that fails at the first store error."""
    return DurableCallLog(store, retry=StoreRetry(0))


# -- a call found begun runs again only once that is written ----------------------------------


def test_call_found_begun_does_not_run_again_while_the_store_cannot_be_written(
    sqlite_store: SqliteActionStateStore,
) -> None:
    tool = Counter()
    sqlite_store.begin(key(), call_digest(tool, ("a",), {}))  # the worker died in the call
    outage = OutageStore(sqlite_store)
    outage.read_only = True

    with pytest.raises(DurableStoreUnavailableError, match="readonly"):
        no_retry(outage).execute_sync(key(), tool, ("a",), {})
    assert tool.count == 0
    assert outage.operations == ["get", "begin_again"]


async def test_reconciler_of_a_call_found_begun_waits_for_the_write_too(
    sqlite_store: SqliteActionStateStore,
) -> None:
    tool = Counter()
    reconciled: list[str] = []
    sqlite_store.begin(key(), call_digest(tool, ("a",), {}))
    outage = OutageStore(sqlite_store)
    outage.read_only = True

    with pytest.raises(DurableStoreUnavailableError):
        await no_retry(outage).execute(
            key(), tool, ("a",), {}, reconciler=lambda name: reconciled.append(name)
        )
    assert reconciled == [] and tool.count == 0


def test_side_effect_runs_at_most_twice_through_an_outage_with_many_restarts(
    sqlite_store: SqliteActionStateStore,
) -> None:
    """The probe's case: the store goes read-only during a call, the task restarts 11 times
    during the outage (each restart replays the call), then the store comes back."""
    outage = OutageStore(sqlite_store)
    sent: list[str] = []

    def send(to: str) -> str:
        sent.append(to)
        outage.read_only = True  # the disk fills up while the call runs
        return f"sent to {to}"

    with pytest.raises(DurableStoreUnavailableError):  # its outcome cannot be recorded
        no_retry(outage).execute_sync(key(), send, ("ops",), {})
    for _restart in range(11):
        with pytest.raises(DurableStoreUnavailableError):
            no_retry(pickle.loads(pickle.dumps(outage))).execute_sync(key(), send, ("ops",), {})
    assert sent == ["ops"]

    outage.read_only = False
    restarted = OutageStore(sqlite_store)
    assert no_retry(restarted).execute_sync(key(), send, ("ops",), {}) == "sent to ops"
    assert sent == ["ops", "ops"]
    assert restarted.operations == ["get", "begin_again", "record_outcome"]


def test_begin_again_keeps_the_other_records_of_the_run(store: ActionStateStore) -> None:
    """Calls that ran beside the begun one (asyncio.gather) keep their outcomes."""
    beside = Counter()
    store.begin(key(0), "digest-0")
    store.begin(key(1), call_digest(beside, (), {}))
    store.record_outcome(key(1), call_digest(beside, (), {}), CallOutcome(status="value"))
    store.record_outcome(key(0, step=1), "d", CallOutcome(status="value", value_json="1"))

    store.begin_again(key(0), "digest-0")

    records = {(r.key.step, r.key.call_index): r for r in store.load_run("user-1", 0)}
    assert set(records) == {(0, 0), (0, 1), (1, 0)}
    assert records[(0, 0)].pending and records[(0, 0)].digest == "digest-0"
    assert not records[(0, 1)].pending and not records[(1, 0)].pending
    store.begin_again(key(2), "digest-2")  # a record that is gone is written anew
    again = store.get(key(2))
    assert again is not None and again.pending


# -- store errors are tried again with backoff --------------------------------------------------


class FailingFor(FlakyStore):
    """Fails every operation with DurableStoreUnavailableError until ``failures`` ran out."""

    def __init__(self, inner: ActionStateStore, failures: int) -> None:
        super().__init__(inner)
        self.failures = failures

    def _check(self, operation: str) -> None:
        self.operations.append(operation)
        if self.failures > 0:
            self.failures -= 1
            raise DurableStoreUnavailableError(f"{operation} failed: database is locked")


def test_outage_of_seconds_fails_no_call_and_runs_each_call_once(
    sqlite_store: SqliteActionStateStore,
) -> None:
    clock = FakeClock()
    flaky = FailingFor(sqlite_store, failures=9)
    log = DurableCallLog(flaky, retry=StoreRetry(60, clock=clock, sleep=clock.sleep))
    tool = Counter()

    assert log.execute_sync(key(), tool, (), {})["call"] == 1
    assert tool.count == 1
    # Doubling from 50 ms, capped at 5 s: 9 failed attempts wait 0.05 + ... + 5 + 5 s.
    assert clock.sleeps == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    record = sqlite_store.get(key())
    assert record is not None and record.outcome is not None


def test_outage_longer_than_the_retry_time_fails_before_the_call(
    sqlite_store: SqliteActionStateStore,
) -> None:
    clock = FakeClock()
    flaky = FailingFor(sqlite_store, failures=10**6)
    log = DurableCallLog(flaky, retry=StoreRetry(30, clock=clock, sleep=clock.sleep))
    tool = Counter()

    with pytest.raises(DurableStoreUnavailableError, match=r"still failing after \d+ attempts"):
        log.execute_sync(key(), tool, (), {})
    assert tool.count == 0
    assert clock.now == pytest.approx(30.0)
    assert max(clock.sleeps) == 5.0


async def test_outcome_is_recorded_after_an_outage_without_running_the_call_again(
    sqlite_store: SqliteActionStateStore,
) -> None:
    clock = FakeClock()
    outage = OutageStore(sqlite_store)

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if clock.now > 4.0:  # the disk is writable again after 4 s
            outage.read_only = False

    log = DurableCallLog(outage, retry=StoreRetry(60, clock=clock, sleep=sleep))
    sent: list[str] = []

    def send(to: str) -> str:
        sent.append(to)
        outage.read_only = True
        return f"sent to {to}"

    assert await log.execute(key(), send, ("ops",), {}) == "sent to ops"
    log.close()
    assert sent == ["ops"]
    record = sqlite_store.get(key())
    assert record is not None and record.outcome is not None


def test_other_store_errors_are_not_tried_again(sqlite_store: SqliteActionStateStore) -> None:
    clock = FakeClock()
    flaky = FlakyStore(sqlite_store, fail={"get"})  # a plain DurableStoreError
    log = DurableCallLog(flaky, retry=StoreRetry(60, clock=clock, sleep=clock.sleep))
    with pytest.raises(DurableStoreError, match="injected"):
        log.execute_sync(key(), Counter(), (), {})
    assert flaky.operations == ["get"] and clock.sleeps == []


def test_closing_the_log_ends_a_retry_wait(sqlite_store: SqliteActionStateStore) -> None:
    failing = threading.Event()

    class Down(FlakyStore):
        def _check(self, operation: str) -> None:
            failing.set()
            raise DurableStoreUnavailableError(f"{operation} failed: server closed the connection")

    log = DurableCallLog(Down(sqlite_store), retry=StoreRetry(3600))
    raised: list[BaseException] = []

    def call() -> None:
        try:
            log.execute_sync(key(), Counter(), (), {})
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    assert failing.wait(10)
    log.close()
    worker.join(10)
    assert not worker.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], DurableStoreUnavailableError)


def test_opening_waits_through_an_outage_and_the_option_sets_the_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[StoreRetry] = []
    real_call = StoreRetry.call

    def recording_call(self: StoreRetry, operation: str, fn: Any) -> Any:
        seen.append(self)
        return real_call(self, operation, fn)

    monkeypatch.setattr(StoreRetry, "call", recording_call)
    config = AgentConfiguration(
        {
            "durable-execution.store": f"sqlite:///{tmp_path}/d.db",
            "durable-execution.store.retry-timeout-s": "12.5",
        }
    )
    log = open_durable_call_log(config)
    assert log is not None
    assert [retry.timeout_s for retry in seen] == [12.5]  # the probe went through it
    assert log.retry is seen[0]
    log.close()


# -- the real stores say which errors may pass ------------------------------------------------


def test_locked_sqlite_file_is_unavailable_and_the_call_waits_for_it(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    store = SqliteActionStateStore(path, busy_timeout_s=0.01)
    store.get(key())  # creates the file
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the file
    with pytest.raises(DurableStoreUnavailableError, match="locked"):
        store.begin(key(), "d")

    clock = FakeClock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if holder.in_transaction:
            holder.execute("COMMIT")

    tool = Counter()
    log = DurableCallLog(store, retry=StoreRetry(60, clock=clock, sleep=sleep))
    assert log.execute_sync(key(), tool, (), {})["call"] == 1
    assert tool.count == 1 and len(clock.sleeps) >= 1
    holder.close()
    log.close()


def test_sqlite_file_deleted_is_not_tried_again(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    store = SqliteActionStateStore(path)
    store.get(key())
    path.unlink()
    with pytest.raises(DurableStoreError, match="deleted or replaced") as raised:
        store.get(key())
    assert not isinstance(raised.value, DurableStoreUnavailableError)
    store.close()


def test_postgres_refusing_writes_is_unavailable(
    postgres_store: PostgresActionStateStore,
) -> None:
    postgres_store.get(key())  # connects, creates the table
    # The session turned read-only (as on a standby, or with the database set read-only).
    session: Any = postgres_store._idle[0]  # pyright: ignore[reportPrivateUsage]
    session.execute("SET default_transaction_read_only = on")
    with pytest.raises(DurableStoreUnavailableError, match="read-only"):
        postgres_store.begin(key(), "d")
    postgres_store.begin(key(), "d")  # tried again: a new session, writable
    record = postgres_store.get(key())
    assert record is not None and record.pending


def test_postgres_refused_login_is_not_tried_again(postgres_url: str) -> None:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(postgres_url)
    params["password"] = "Wrong-Password-0815"
    store = PostgresActionStateStore(make_conninfo("", **params))
    with pytest.raises(DurableStoreError) as raised:
        store.get(key())
    assert not isinstance(raised.value, DurableStoreUnavailableError)


def test_postgres_restart_during_a_run_fails_nothing_and_the_store_reconnects(
    postgres_url: str,
) -> None:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from ._outage_proxy import OutageProxy

    params = conninfo_to_dict(postgres_url)
    proxy = OutageProxy(str(params.get("host") or "127.0.0.1"), int(params.get("port") or 5432))
    table = f"durable_test_{uuid.uuid4().hex[:12]}"
    store = PostgresActionStateStore(
        make_conninfo("", **{**params, "host": "127.0.0.1", "port": proxy.port}), table=table
    )
    clock = FakeClock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if clock.now > 3.0:  # the server is back after about 3 s
            proxy.restore()

    log = DurableCallLog(store, retry=StoreRetry(60, clock=clock, sleep=sleep))
    tool = Counter()
    try:
        log.execute_sync(key(0), tool, (), {})
        proxy.cut()  # the postmaster is killed: connections drop, new ones are refused
        log.execute_sync(key(1), tool, (), {})
        assert tool.count == 2  # each call once, no error
        assert clock.sleeps and clock.now > 3.0
        for index in (0, 1):
            record = store.get(key(index))
            assert record is not None and record.outcome is not None
    finally:
        log.close()
        proxy.close()
        _drop_table(postgres_url, table)
