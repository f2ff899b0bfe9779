"""`ActionContext`: how durable calls are keyed (the run's typed key text)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext
from flink_agents.runtime.agent_engine import AgentEngine
from flink_agents.runtime.durable import DurableCallLog, SqliteActionStateStore
from flink_agents.runtime.errors import ActionExecutionError
from flink_agents.runtime.run_state import KeyState

SENT: list[str] = []


def send_email(to: str) -> str:
    """A call with a side effect."""
    SENT.append(to)
    return f"sent to {to}"


async def mail_action(event: Event, ctx: RunnerContext) -> None:
    result = await ctx.durable_execute_async(send_email, event.attributes["input"])
    ctx.send_event(OutputEvent(output=result))


def _run(engine: AgentEngine, key: Any, value: Any) -> list[Any]:
    key_state = KeyState()  # a fresh key: its first input is seq 0
    return asyncio.run(engine.run(engine.start_run(key, value, key_state), key_state))


@pytest.fixture(autouse=True)
def _clear_sent() -> None:
    SENT.clear()


def test_keys_of_different_types_keep_separate_records(tmp_path: Path) -> None:
    store = SqliteActionStateStore(tmp_path / "calls.db")
    log = DurableCallLog(store)
    agent = Agent().add_action("mail", InputEvent, mail_action)
    engine = AgentEngine(agent, durable=log)
    # The same call (same function, same argument) at the same seq, step and action.
    assert _run(engine, 1, "a@example.com") == ["sent to a@example.com"]
    assert _run(engine, "1", "a@example.com") == ["sent to a@example.com"]
    assert SENT == ["a@example.com", "a@example.com"]  # the second key's side effect ran
    assert [r.key.agent_key for r in store.load_run("1", 0)] == ["1"]
    assert [r.key.agent_key for r in store.load_run('"1"', 0)] == ['"1"']
    # Each key replays its own record.
    _run(engine, 1, "a@example.com")
    _run(engine, "1", "a@example.com")
    assert len(SENT) == 2
    engine.close()
    log.close()


def test_a_key_with_no_text_is_refused_before_the_call(tmp_path: Path) -> None:
    log = DurableCallLog(SqliteActionStateStore(tmp_path / "calls.db"))
    engine = AgentEngine(Agent().add_action("mail", InputEvent, mail_action), durable=log)
    with pytest.raises(ActionExecutionError) as raised:
        _run(engine, None, "a@example.com")
    assert isinstance(raised.value.__cause__, TypeError)
    assert "None" in str(raised.value.__cause__)
    assert SENT == []
    engine.close()
    log.close()
