"""Memory observation and run lifecycle events, as upstream defines them."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from flink_agents.api.events import (
    AgentRunBeginEvent,
    Event,
    LongTermSearchEvent,
    LongTermUpdateEvent,
    MemoryEvent,
    SensoryReadEvent,
    SensoryWriteEvent,
    ShortTermReadEvent,
    ShortTermWriteEvent,
)
from flink_agents.api.events.run_event import AGENT_RUN_BEGIN_ACTION


class Tier(BaseModel):
    name: str


def _round_trip(event: Event) -> Event:
    return Event.from_json(event.to_json())


@pytest.mark.parametrize(
    ("cls", "type_"),
    [
        (ShortTermWriteEvent, "_short_term_write_event"),
        (ShortTermReadEvent, "_short_term_read_event"),
        (SensoryWriteEvent, "_sensory_write_event"),
        (SensoryReadEvent, "_sensory_read_event"),
    ],
)
def test_memory_events_carry_key_and_flat_value(cls: type[MemoryEvent], type_: str) -> None:
    event = cls(key="user-42", value={"user.tier": "gold", "user": None})
    assert event.type == type_ == cls.EVENT_TYPE
    assert event.key == "user-42"
    assert event.value == {"user.tier": "gold", "user": None}
    assert event.attributes == {"key": "user-42", "value": {"user.tier": "gold", "user": None}}
    restored = _round_trip(event)
    assert type(restored) is cls and restored == event
    assert MemoryEvent.is_memory_type(type_)


def test_memory_event_values_are_normalized_to_json() -> None:
    event = ShortTermWriteEvent(key="k", value={"t": Tier(name="gold"), "pair": (1, 2)})
    assert event.value == {"t": {"name": "gold"}, "pair": [1, 2]}
    json.loads(event.to_json())


def test_memory_event_checks_its_key_and_value() -> None:
    with pytest.raises(TypeError, match="key must be a string"):
        ShortTermWriteEvent(key=7, value={})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="value must be a dict"):
        ShortTermWriteEvent(key="k", value=[1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="JSON serializable"):
        ShortTermWriteEvent(key="k", value={"s": {1, 2}})
    with pytest.raises(TypeError, match="abstract"):
        MemoryEvent(key="k", value={})


def test_memory_event_from_event_gives_the_subclass_of_the_type() -> None:
    base = Event(type="_sensory_write_event", attributes={"key": "k", "value": {"a": 1}}, id="m-1")
    typed = MemoryEvent.from_event(base)
    assert type(typed) is SensoryWriteEvent
    assert typed.key == "k" and typed.value == {"a": 1} and typed.id == base.id
    with pytest.raises(ValueError, match="Not a memory event type"):
        MemoryEvent.from_event(Event(type="other"))
    assert not MemoryEvent.is_memory_type("other")


def test_long_term_classes_exist_with_upstreams_shape() -> None:
    update = LongTermUpdateEvent(key="k", value={"set": {"item": None}}, cleared_sets=["old"])
    assert update.cleared_sets == ["old"]
    assert type(_round_trip(update)) is LongTermUpdateEvent
    with pytest.raises(TypeError, match="list of strings"):
        LongTermUpdateEvent(key="k", value={}, cleared_sets=[1])  # type: ignore[list-item]
    search = LongTermSearchEvent(key="k", value={"set": {"q": []}})
    assert search.results == {"set": {"q": []}}


def test_agent_run_begin_event() -> None:
    event = AgentRunBeginEvent(key="k", value={"seen": [1, 2], "user.name": "x"})
    assert event.type == "_agent_run_begin_event"
    assert event.key == "k" and event.value == {"seen": [1, 2], "user.name": "x"}
    assert not MemoryEvent.is_memory_type(event.type)
    assert type(_round_trip(event)) is AgentRunBeginEvent
    assert AGENT_RUN_BEGIN_ACTION == "agent_run_begin_action"


def test_bytes_in_a_value_are_base64_as_upstream_writes_them() -> None:
    event = ShortTermWriteEvent(key="k", value={"raw": b"\x01\x02\x03", "in": [b"\xff"]})
    assert event.value == {"raw": "AQID", "in": ["/w=="]}


def test_a_rebuilt_event_without_value_or_with_a_text_for_its_sets_is_refused() -> None:
    with pytest.raises(TypeError, match="value"):
        MemoryEvent.from_event(Event(type=ShortTermWriteEvent.EVENT_TYPE, attributes={"key": "k"}))
    with pytest.raises(TypeError, match="must be a list"):
        MemoryEvent.from_event(
            Event(
                type=LongTermUpdateEvent.EVENT_TYPE,
                attributes={"key": "k", "value": {}, "cleared_sets": "prefs"},
            )
        )
