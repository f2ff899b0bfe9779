"""The matching rules of DurableCallLog, against SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import pickle
import threading
from typing import Any

import pytest

from flink_agents.api import ChatMessage, ChatResult, Usage
from flink_agents.runtime.durable import (
    ActionStateStore,
    DurableCallFailedError,
    DurableCallLog,
    DurableStoreError,
    call_digest,
)

from ._support import Counter, FlakyStore, NeedsTwoArgs, Ticket, key


def restarted(store: ActionStateStore) -> DurableCallLog:
    """A log over a fresh connection to the same records, as a restarted worker has."""
    return DurableCallLog(pickle.loads(pickle.dumps(store)))


def file_ticket(title: str, *, priority: int = 1) -> Ticket:
    return Ticket(id=priority * 100 + len(title), title=title, tags=["p" + str(priority)])


# -- a live call ---------------------------------------------------------------------------


def test_live_call_is_begun_before_it_runs_and_recorded_before_execute_returns(
    store: ActionStateStore,
) -> None:
    seen_during_call: list[Any] = []

    def tool(x: int) -> int:
        record = store.get(key())
        seen_during_call.append(record)
        return x * 2

    log = DurableCallLog(store)
    assert log.execute_sync(key(), tool, (21,), {}) == 42

    (during,) = seen_during_call
    assert during is not None and during.pending
    assert during.digest == call_digest(tool, (21,), {})
    after = store.get(key())
    assert after is not None and after.outcome is not None
    assert after.outcome.status == "value" and after.outcome.value_json == "42"


async def test_async_execute_records_before_returning(store: ActionStateStore) -> None:
    async def model_call(prompt: str) -> str:
        await asyncio.sleep(0)
        return prompt.upper()

    log = DurableCallLog(store)
    assert await log.execute(key(), model_call, ("hi",), {}) == "HI"
    record = store.get(key())
    assert record is not None and record.outcome is not None
    assert record.outcome.value_json == '"HI"'
    log.close()


# -- hit --------------------------------------------------------------------------------------


def test_hit_returns_recorded_result_without_calling(store: ActionStateStore) -> None:
    tool = Counter()
    first = DurableCallLog(store).execute_sync(key(), tool, (1, "a"), {"flag": True})
    assert tool.count == 1

    replayed = restarted(store).execute_sync(key(), tool, (1, "a"), {"flag": True})
    assert tool.count == 1
    assert replayed == first == {"call": 1, "args": [1, "a"], "kwargs": {"flag": True}}


async def test_hit_async_returns_recorded_result_without_calling(store: ActionStateStore) -> None:
    calls = 0

    async def model_call(prompt: str, temperature: float = 0.0) -> ChatResult:
        nonlocal calls
        calls += 1
        return ChatResult(
            message=ChatMessage.assistant(f"answer {calls} to {prompt}"),
            model="m-1",
            usage=Usage(input_tokens=3, output_tokens=0),
        )

    first = await DurableCallLog(store).execute(key(), model_call, ("q",), {"temperature": 0.5})
    log = restarted(store)
    replayed = await log.execute(key(), model_call, ("q",), {"temperature": 0.5})
    log.close()

    assert calls == 1
    assert isinstance(replayed, ChatResult)
    assert replayed == first
    assert replayed.message.text == "answer 1 to q"
    assert replayed.usage is not None and replayed.usage.output_tokens == 0


def test_hit_rebuilds_pydantic_models_nested_in_the_result(store: ActionStateStore) -> None:
    calls = Counter()

    def tool(title: str) -> dict[str, Any]:
        calls()
        return {"tickets": [file_ticket(title), file_ticket(title, priority=2)], "n": (1, 2)}

    live = DurableCallLog(store).execute_sync(key(), tool, ("disk full",), {})
    replayed = restarted(store).execute_sync(key(), tool, ("disk full",), {})
    assert calls.count == 1
    assert replayed == live
    assert all(isinstance(ticket, Ticket) for ticket in replayed["tickets"])
    assert replayed["n"] == (1, 2)


def test_nth_call_of_an_action_gets_the_nth_record(store: ActionStateStore) -> None:
    tool = Counter()
    log = DurableCallLog(store)
    live = [log.execute_sync(key(index), tool, ("same",), {}) for index in range(3)]
    assert [result["call"] for result in live] == [1, 2, 3]

    replay_log = restarted(store)
    replayed = [replay_log.execute_sync(key(index), tool, ("same",), {}) for index in range(3)]
    assert replayed == live
    assert tool.count == 3


def test_records_are_separate_per_key_seq_step_and_action(store: ActionStateStore) -> None:
    tool = Counter()
    log = DurableCallLog(store)
    keys = [
        key(),
        key(agent_key="user-2"),
        key(seq=1),
        key(action="other"),
        key(step=1),  # last: beginning a call drops the later steps of its run
    ]
    for call_key in keys:
        log.execute_sync(call_key, tool, ("x",), {})
    assert tool.count == len(keys)
    replay_log = restarted(store)
    results = [replay_log.execute_sync(call_key, tool, ("x",), {}) for call_key in keys]
    assert [result["call"] for result in results] == [1, 2, 3, 4, 5]
    assert tool.count == len(keys)


# -- recorded exceptions ------------------------------------------------------------------------


def test_exception_is_recorded_and_replayed_as_its_type(store: ActionStateStore) -> None:
    calls = 0

    def tool(order_id: str) -> None:
        nonlocal calls
        calls += 1
        raise LookupError(f"no order {order_id}")

    with pytest.raises(LookupError, match="no order 17"):
        DurableCallLog(store).execute_sync(key(), tool, ("17",), {})
    record = store.get(key())
    assert record is not None and record.outcome is not None
    assert record.outcome.status == "error"
    assert record.outcome.error_type == "builtins:LookupError"
    assert record.outcome.error_message == "no order 17"

    with pytest.raises(LookupError) as replayed:
        restarted(store).execute_sync(key(), tool, ("17",), {})
    assert type(replayed.value) is LookupError
    assert str(replayed.value) == "no order 17"
    assert calls == 1


async def test_unconstructible_exception_replays_as_durable_call_failed(
    store: ActionStateStore,
) -> None:
    calls = 0

    async def tool() -> None:
        nonlocal calls
        calls += 1
        raise NeedsTwoArgs(503, "service unavailable")

    with pytest.raises(NeedsTwoArgs):
        await DurableCallLog(store).execute(key(), tool, (), {})

    with pytest.raises(DurableCallFailedError) as replayed:
        await restarted(store).execute(key(), tool, (), {})
    assert calls == 1
    assert replayed.value.error_type == "tests.runtime.durable._support:NeedsTwoArgs"
    assert replayed.value.error_message == "503: service unavailable"
    assert "NeedsTwoArgs" in str(replayed.value)


def test_exception_of_a_local_class_replays_as_durable_call_failed(
    store: ActionStateStore,
) -> None:
    class LocalError(Exception):
        pass

    def tool() -> None:
        raise LocalError("boom")

    with pytest.raises(LocalError):
        DurableCallLog(store).execute_sync(key(), tool, (), {})
    with pytest.raises(DurableCallFailedError, match="LocalError: boom"):
        restarted(store).execute_sync(key(), tool, (), {})


# -- digest mismatch ------------------------------------------------------------------------------


def test_digest_mismatch_drops_that_record_and_later_ones_and_runs_live(
    store: ActionStateStore,
) -> None:
    tool = Counter()
    log = DurableCallLog(store)
    # The first execution of run (user-1, seq 0): action "act" at step 0 makes three calls,
    # action "side" at step 0 one, action "next" at step 1 one; run seq 1 has one call.
    for index in range(3):
        log.execute_sync(key(index), tool, ("v1",), {})
    log.execute_sync(key(action="side"), tool, ("v1",), {})
    log.execute_sync(key(step=1, action="next"), tool, ("v1",), {})
    log.execute_sync(key(seq=1), tool, ("v1",), {})
    assert tool.count == 6

    # Replay with changed code: call 0 matches, call 1 has other arguments.
    replay = restarted(store)
    assert replay.execute_sync(key(0), tool, ("v1",), {})["call"] == 1
    changed = replay.execute_sync(key(1), tool, ("v2",), {})
    assert tool.count == 7 and changed["call"] == 7

    remaining = {(r.key.step, r.key.action, r.key.call_index) for r in store.load_run("user-1", 0)}
    assert remaining == {(0, "act", 0), (0, "act", 1), (0, "side", 0)}
    record = store.get(key(1))
    assert record is not None and record.digest == call_digest(tool, ("v2",), {})
    assert store.load_run("user-1", 1) != []  # another run is untouched

    # Call 2 had a record with the very same digest, but it was dropped: it runs live.
    assert replay.execute_sync(key(2), tool, ("v1",), {})["call"] == 8
    # The other action of the same step still replays.
    assert replay.execute_sync(key(action="side"), tool, ("v1",), {})["call"] == 4
    assert tool.count == 8


def test_changed_function_is_a_digest_mismatch(store: ActionStateStore) -> None:
    log = DurableCallLog(store)
    assert log.execute_sync(key(), lambda: "old", (), {}) == "old"

    def new_tool() -> str:
        return "new"

    assert restarted(store).execute_sync(key(), new_tool, (), {}) == "new"


def test_missing_record_before_later_records_drops_the_later_ones(
    store: ActionStateStore,
) -> None:
    tool = Counter()
    log = DurableCallLog(store)
    log.execute_sync(key(step=3, action="later"), tool, ("a",), {})
    log.execute_sync(key(step=0, action="other"), tool, ("a",), {})

    # A call at step 1 that never happened before: the code path changed there.
    restarted(store).execute_sync(key(step=1, action="new"), tool, ("a",), {})
    remaining = {(r.key.step, r.key.action) for r in store.load_run("user-1", 0)}
    assert remaining == {(0, "other"), (1, "new")}


# -- begun, no outcome --------------------------------------------------------------------------


HANG_STARTED: list[tuple[Any, ...]] = []


async def _leave_pending(
    store: ActionStateStore, fn: Any, *args: Any, started: Any = None, **kwargs: Any
) -> None:
    """Begin a call and cancel it once it runs, as a worker killed mid-call leaves it."""
    is_running = started or (lambda: bool(HANG_STARTED))
    HANG_STARTED.clear()
    log = DurableCallLog(store)
    task = asyncio.ensure_future(log.execute(key(), fn, args, kwargs))
    for _ in range(500):
        await asyncio.sleep(0.01)
        if is_running():
            break
    assert is_running(), "the call never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    log.close()


async def _hang(*args: Any, **kwargs: Any) -> str:
    HANG_STARTED.append(args)
    await asyncio.sleep(60)
    return "never"


async def test_cancelled_call_stays_pending(store: ActionStateStore) -> None:
    await _leave_pending(store, _hang, "order-9")
    record = store.get(key())
    assert record is not None and record.pending


async def test_pending_with_reconciler_records_what_the_reconciler_returns(
    store: ActionStateStore,
) -> None:
    await _leave_pending(store, _hang, "order-9", qty=2)
    reconciled: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    async def find_order(*args: Any, **kwargs: Any) -> dict[str, Any]:
        reconciled.append((args, kwargs))
        return {"found": True, "id": "order-9"}

    log = restarted(store)
    result = await log.execute(key(), _hang, ("order-9",), {"qty": 2}, reconciler=find_order)
    assert result == {"found": True, "id": "order-9"}
    assert reconciled == [(("order-9",), {"qty": 2})]
    record = store.get(key())
    assert record is not None and record.outcome is not None and record.outcome.status == "value"

    # Recorded now: a later replay neither calls nor reconciles.
    again = await restarted(store).execute(
        key(), _hang, ("order-9",), {"qty": 2}, reconciler=find_order
    )
    assert again == result
    assert len(reconciled) == 1
    log.close()


def test_pending_with_sync_reconciler_in_execute_sync(store: ActionStateStore) -> None:
    tool = Counter()
    store.begin(key(), call_digest(tool, ("a",), {}))

    def reconcile(name: str) -> str:
        return f"reconciled {name}"

    result = restarted(store).execute_sync(key(), tool, ("a",), {}, reconciler=reconcile)
    assert result == "reconciled a"
    assert tool.count == 0


async def test_reconciler_error_propagates_and_leaves_the_call_pending(
    store: ActionStateStore,
) -> None:
    await _leave_pending(store, _hang, "x")

    def reconcile(*args: Any) -> Any:
        raise ConnectionError("cannot tell whether it happened")

    with pytest.raises(ConnectionError, match="cannot tell"):
        await restarted(store).execute(key(), _hang, ("x",), {}, reconciler=reconcile)
    record = store.get(key())
    assert record is not None and record.pending


async def test_pending_without_reconciler_runs_again(store: ActionStateStore) -> None:
    attempts = 0

    async def charge(amount: int) -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await asyncio.sleep(60)  # the first attempt is in flight when the worker dies
        return f"charged {amount}"

    await _leave_pending(store, charge, 5, started=lambda: attempts == 1)
    assert await restarted(store).execute(key(), charge, (5,), {}) == "charged 5"
    assert attempts == 2
    record = store.get(key())
    assert record is not None and record.outcome is not None
    assert record.outcome.value_json == '"charged 5"'


# -- what cannot be recorded ----------------------------------------------------------------


def test_result_that_is_not_json_raises_type_error_and_is_not_recorded_done(
    store: ActionStateStore,
) -> None:
    def tool() -> Any:
        return {"payload": b"\x00secret-bytes"}

    with pytest.raises(TypeError, match="cannot be recorded") as raised:
        DurableCallLog(store).execute_sync(key(), tool, (), {})
    assert "bytes" in str(raised.value)
    assert "secret-bytes" not in str(raised.value)
    record = store.get(key())
    assert record is not None and record.pending


def test_argument_that_is_not_json_raises_before_anything_runs(store: ActionStateStore) -> None:
    tool = Counter()
    with pytest.raises(TypeError, match="argument 1"):
        DurableCallLog(store).execute_sync(key(), tool, ("ok", {1, 2}), {})
    assert tool.count == 0
    assert store.load_run("user-1", 0) == []


def test_async_function_in_execute_sync_is_refused_before_anything_runs(
    store: ActionStateStore,
) -> None:
    with pytest.raises(TypeError, match="async"):
        DurableCallLog(store).execute_sync(key(), _hang, (), {})
    assert store.load_run("user-1", 0) == []


async def test_sync_function_in_execute_runs_off_the_event_loop_thread(
    store: ActionStateStore,
) -> None:
    loop_thread = threading.get_ident()

    def tool() -> bool:
        return threading.get_ident() != loop_thread

    log = DurableCallLog(store)
    assert await log.execute(key(), tool, (), {}) is True
    log.close()


# -- the store fails --------------------------------------------------------------------------


def test_unreachable_store_raises_before_the_call_runs(store: ActionStateStore) -> None:
    tool = Counter()
    for failing in ("get", "begin"):
        flaky = FlakyStore(store, fail={failing})
        with pytest.raises(DurableStoreError, match=failing):
            DurableCallLog(flaky).execute_sync(key(), tool, (), {})
    assert tool.count == 0


async def test_outcome_not_recorded_raises_store_error_after_one_call(
    store: ActionStateStore,
) -> None:
    tool = Counter()
    flaky = FlakyStore(store, fail={"record_outcome"})
    with pytest.raises(DurableStoreError):
        await DurableCallLog(flaky).execute(key(), tool, (), {})
    assert tool.count == 1
    record = store.get(key())
    assert record is not None and record.pending  # replay reconciles or re-runs it


def test_exception_outcome_not_recorded_raises_store_error(store: ActionStateStore) -> None:
    def tool() -> None:
        raise ValueError("tool failed")

    flaky = FlakyStore(store, fail={"record_outcome"})
    with pytest.raises(DurableStoreError) as raised:
        DurableCallLog(flaky).execute_sync(key(), tool, (), {})
    assert isinstance(raised.value.__context__, ValueError)


# -- pruning ----------------------------------------------------------------------------------


def test_prune_removes_runs_up_to_seq_of_that_key_only(store: ActionStateStore) -> None:
    tool = Counter()
    log = DurableCallLog(store)
    for seq in range(4):
        for index in range(2):
            log.execute_sync(key(index, seq=seq), tool, (), {})
    log.execute_sync(key(agent_key="user-2", seq=0), tool, (), {})

    assert log.prune("user-1", 2) == 6
    assert [len(store.load_run("user-1", seq)) for seq in range(4)] == [0, 0, 0, 2]
    assert len(store.load_run("user-2", 0)) == 1
    assert log.prune("user-1", 2) == 0

    assert log.prune_many({"user-1": 3, "user-2": 0}) == 3
    assert store.load_run("user-1", 3) == [] and store.load_run("user-2", 0) == []


# -- concurrency and shipping ----------------------------------------------------------------


async def test_concurrent_calls_of_many_runs_are_each_recorded_once(
    store: ActionStateStore,
) -> None:
    calls = 0

    async def model_call(run: int) -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.001)
        return run * 10

    log = DurableCallLog(store)
    results = await asyncio.gather(
        *(log.execute(key(agent_key=f"k{run}"), model_call, (run,), {}) for run in range(40))
    )
    assert results == [run * 10 for run in range(40)]

    replayed = await asyncio.gather(
        *(log.execute(key(agent_key=f"k{run}"), model_call, (run,), {}) for run in range(40))
    )
    assert list(replayed) == results
    assert calls == 40
    log.close()


def test_calls_from_many_threads_are_each_recorded_once(store: ActionStateStore) -> None:
    tool = Counter()
    log = DurableCallLog(store)

    def run_calls(thread: int) -> list[int]:
        return [
            log.execute_sync(key(index, agent_key=f"t{thread}"), tool, (thread,), {})["call"]
            for index in range(10)
        ]

    def in_threads() -> list[list[int]]:
        results: list[list[int]] = [[] for _ in range(8)]

        def target(thread: int) -> None:
            results[thread] = run_calls(thread)

        threads = [threading.Thread(target=target, args=(thread,)) for thread in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    live = in_threads()
    assert sorted(call for calls in live for call in calls) == list(range(1, 81))
    assert in_threads() == live
    assert tool.count == 80


def test_log_pickles_before_and_after_use(store: ActionStateStore) -> None:
    tool = Counter()
    log = DurableCallLog(store)
    shipped_unused = pickle.loads(pickle.dumps(log))
    shipped_unused.execute_sync(key(), tool, (), {})
    shipped_used = pickle.loads(pickle.dumps(shipped_unused))
    assert shipped_used.execute_sync(key(), tool, (), {})["call"] == 1
    assert tool.count == 1


# -- stopping ---------------------------------------------------------------------------------


async def test_finish_calls_lets_calls_in_flight_record_and_starts_no_new_one(
    store: ActionStateStore,
) -> None:
    release = asyncio.Event()
    started: list[str] = []

    async def model_call(prompt: str) -> str:
        started.append(prompt)
        await release.wait()
        return prompt.upper()

    log = DurableCallLog(store)
    first = asyncio.create_task(log.execute(key(call_index=0), model_call, ("a",), {}))
    while not started:
        await asyncio.sleep(0.001)
    assert log.in_flight == 1
    # The operator thread waits (here: another thread) while the loop finishes the call.
    waiting = asyncio.get_running_loop().run_in_executor(None, log.finish_calls, 5.0)

    async def finishing_began() -> None:
        while not log._stopping:  # set by finish_calls before it waits
            await asyncio.sleep(0.001)

    await asyncio.wait_for(finishing_began(), 10)
    later = asyncio.create_task(log.execute(key(call_index=1), model_call, ("b",), {}))
    await asyncio.sleep(0)  # the new call's first step: refused, it waits to be cancelled
    assert log.in_flight == 1 and not later.done()
    assert not waiting.done()  # finish_calls waits for the call in flight
    release.set()
    assert await waiting == 0  # the call in flight finished and was recorded
    assert await first == "A"
    record = store.get(key(call_index=0))
    assert record is not None and record.outcome is not None
    assert started == ["a"] and not later.done()  # no new call started
    assert log.in_flight == 0
    later.cancel()
    assert store.get(key(call_index=1)) is None
    log.close()


async def test_finish_calls_gives_up_after_its_timeout(store: ActionStateStore) -> None:
    async def hang(prompt: str) -> str:
        await asyncio.Event().wait()
        return prompt

    log = DurableCallLog(store)
    call = asyncio.create_task(log.execute(key(), hang, ("a",), {}))
    while log.in_flight == 0:
        await asyncio.sleep(0.001)
    left = await asyncio.get_running_loop().run_in_executor(None, log.finish_calls, 0.05)
    assert left == 1
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert log.in_flight == 0
    log.close()
