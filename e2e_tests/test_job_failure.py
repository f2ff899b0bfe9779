"""A failed job's first line names the Python exception that failed it, in both modes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext
from flink_agents.runtime.errors import FlinkJobFailedError

pytestmark = pytest.mark.flink


def _answer(event: Event, ctx: RunnerContext) -> None:
    record = event.attributes["input"]
    if record["text"] == "":
        raise ValueError(f"ticket {record['id']} has no text")
    ctx.send_event(OutputEvent(output=record["id"]))


class TicketAgent(Agent):
    def __init__(self) -> None:
        super().__init__()
        self.add_action("answer", [InputEvent], _answer)


def _fail_on_the_map(value: Any) -> Any:
    raise LookupError(f"no route for {value}")


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_an_agent_runs_failure_is_the_first_line(stream_env: Callable[..., Any], mode: str) -> None:
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=1)
    agents_env = FlinkAgentsExecutionEnvironment(env, execution_mode=mode)  # type: ignore[arg-type]
    tickets = env.from_collection([{"id": "T-1", "text": "hello"}, {"id": "T-2", "text": ""}])
    outputs: Any = (
        agents_env.from_datastream(tickets, key_selector=lambda t: t["id"])
        .apply(TicketAgent())
        .to_datastream()
    )
    with pytest.raises(FlinkJobFailedError) as failed, outputs.execute_and_collect() as results:
        list(results)
    lines = str(failed.value).splitlines()
    assert lines[0] == (
        "ValueError: ticket T-2 has no text (action 'answer' on a _input_event event, "
        "key 'T-2', seq 0)"
    )
    assert failed.value.agent_run
    assert "Recovery is suppressed" in str(failed.value)  # PyFlink's message follows


def test_another_python_functions_exception_is_the_first_line(
    stream_env: Callable[..., Any],
) -> None:
    from flink_agents.runtime.flink import FlinkAgentsExecutionEnvironment

    env = stream_env(parallelism=1)
    agents_env = FlinkAgentsExecutionEnvironment(env)
    tickets = env.from_collection([{"id": "T-1", "text": "hello"}])
    outputs = (
        agents_env.from_datastream(tickets, key_selector=lambda t: t["id"])
        .apply(TicketAgent())
        .to_datastream()
        .map(_fail_on_the_map)
    )
    outputs.print()
    with pytest.raises(FlinkJobFailedError) as failed:
        agents_env.execute("failing-map")
    assert str(failed.value).splitlines()[0] == "LookupError: no route for T-1"
    assert not failed.value.agent_run
