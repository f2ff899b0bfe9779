"""With the default options, running agents leaves the process's global state as it was:
the collector's frozen objects and thresholds, and `copyreg`'s reducers (`gc.freeze` is
opt-in; the thresholds and the pickled outputs' reducers are undone exactly)."""

from __future__ import annotations

import asyncio
import copyreg
import gc
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext
from flink_agents.runtime.local_runner import LocalRunner


def _global_state() -> tuple[tuple[int, ...], dict[Any, Any]]:
    return gc.get_threshold(), dict(copyreg.dispatch_table)


def _still_frozen_as_before(before: int) -> bool:
    """Whether what the application froze is still frozen and nothing was added: the count
    only goes down, as frozen objects are freed by reference counting."""
    return 0 < gc.get_freeze_count() <= before


@pytest.fixture
def app_froze_objects() -> Iterator[None]:
    """The application froze its own objects before the agents ran (a pre-fork server
    does), and thawed them after."""
    gc.freeze()
    assert gc.get_freeze_count() > 0
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("app_froze_objects")
def test_a_local_run_leaves_the_collector_and_copyreg_as_they_were() -> None:
    before, frozen = _global_state(), gc.get_freeze_count()
    frozen_as_before: list[bool] = []

    async def work(event: Event, ctx: RunnerContext) -> None:
        frozen_as_before.append(_still_frozen_as_before(frozen))
        ctx.send_event(OutputEvent(output=event.attributes["input"]))

    agent = Agent().add_action("work", InputEvent, work)
    outputs = asyncio.run(LocalRunner(agent).run([{"key": i, "value": i} for i in range(3)]))
    assert len(outputs) == 3
    assert frozen_as_before == [True] * 3
    assert _still_frozen_as_before(frozen)
    assert _global_state() == before


class _RuntimeContext:
    """PyFlink's process-mode RuntimeContext, as much as the agent operator's `open` uses."""

    _keyed_state_backend = None

    class _Group:
        def add_group(self, name: str, value: str | None = None) -> Any:
            return self

        def counter(self, name: str) -> Any:
            return self

        def inc(self, n: int = 1) -> None:
            pass

    def get_task_name(self) -> str:
        return "agent"

    def get_index_of_this_subtask(self) -> int:
        return 0

    def get_number_of_parallel_subtasks(self) -> int:
        return 1

    def get_attempt_number(self) -> int:
        return 0

    def get_state(self, descriptor: Any) -> Any:
        return None

    def get_map_state(self, descriptor: Any) -> Any:
        return None

    def get_metrics_group(self) -> Any:
        return self._Group()


@pytest.mark.usefixtures("app_froze_objects")
def test_an_agent_operator_open_and_close_leave_the_collector_and_copyreg_as_they_were() -> None:
    pytest.importorskip("pyflink")
    from flink_agents.runtime.flink.operator import KeyedAgentOperator
    from flink_agents.runtime.flink.pickled_outputs import pickle_by_value
    from tests.runtime.stand_in_engine import StandInEngine

    class Weather(BaseModel):
        city: str

    Weather.__qualname__ = "WeatherOnlyInTheClient"  # pickle cannot name it, as in a worker
    before, frozen = _global_state(), gc.get_freeze_count()
    operator = KeyedAgentOperator(lambda context: StandInEngine())
    operator.open(_RuntimeContext())  # type: ignore[arg-type]
    try:
        assert _still_frozen_as_before(frozen)
        pickle_by_value(Weather(city="Lyon"))  # an output leaving the operator
        assert Weather in copyreg.dispatch_table
    finally:
        operator.close()
    assert _still_frozen_as_before(frozen)
    assert _global_state() == before
