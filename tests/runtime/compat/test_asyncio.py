"""What `compat.asyncio` assumes holds in this Python's asyncio, and `run_ready` runs a
loop's ready callbacks as the loop would."""

from __future__ import annotations

import asyncio
import logging

import pytest

from flink_agents._compat import Assumption, IncompatibleDependencyError
from flink_agents.runtime.compat import asyncio as compat_asyncio
from flink_agents.runtime.compat.asyncio import check_loop, run_ready, running_loop, wakes_before


@pytest.mark.parametrize("assumption", compat_asyncio.ASSUMPTIONS, ids=lambda a: a.text[:50])
def test_this_pythons_asyncio_has_what_is_assumed(assumption: Assumption) -> None:
    assumption.check()


def test_run_ready_runs_the_callback_and_what_it_makes_ready_as_the_running_loop() -> None:
    loop = asyncio.new_event_loop()
    try:
        check_loop(loop)
        seen: list[str] = []
        tasks: list[asyncio.Task[None]] = []

        async def step() -> None:
            seen.append("coroutine")
            assert asyncio.get_running_loop() is loop

        def callback() -> None:
            seen.append("callback")
            tasks.append(loop.create_task(step()))
            cancelled = loop.call_soon(seen.append, "cancelled")
            cancelled.cancel()

        assert running_loop() is None
        run_ready(loop, callback, budget_s=1.0)
        assert running_loop() is None
        assert seen == ["callback", "coroutine"]
        assert not wakes_before(loop, float("inf"))
        loop.call_later(10, lambda: None)
        assert wakes_before(loop, float("inf"))
        assert not wakes_before(loop, loop.time())
    finally:
        loop.close()


class _LoopWithoutReadyQueue(asyncio.AbstractEventLoop):
    """A loop class that keeps no `_ready` deque (as uvloop's, or a future asyncio's)."""


def test_a_loop_without_the_internals_is_named_not_an_attribute_error() -> None:
    with pytest.raises(IncompatibleDependencyError, match=r"^python .* `_ready`"):
        check_loop(_LoopWithoutReadyQueue())


def test_the_loop_thread_runs_without_inline_runs_when_they_cannot_work(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from flink_agents.runtime.flink import loop_thread as module

    def broken(loop: asyncio.AbstractEventLoop) -> None:
        compat_asyncio.READY_QUEUE.broken()

    monkeypatch.setattr(module, "check_loop", broken)
    thread = module.LoopThread()
    with caplog.at_level(logging.WARNING, logger=module.__name__):
        thread.start()
    try:
        assert "no inline runs" in caplog.text and "_ready" in caplog.text
        ran: list[bool] = []
        thread.launch(lambda: ran.append(thread.on_loop_thread()))
        thread.close()  # runs what was posted before it stops the loop
        assert ran == [True]  # on the loop thread, not inline on this one
    finally:
        thread.close()
