"""Events: typed constructors, lineage fields, and the JSON round trip."""

from __future__ import annotations

import copy
import json
import pickle
import uuid
from typing import ClassVar

import pytest
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from flink_agents.api import (
    ChatError,
    ChatMessage,
    ChatRequestEvent,
    ChatResponseEvent,
    ChatResult,
    Event,
    ImageBlock,
    InputEvent,
    OutputEvent,
    TextBlock,
    ToolCallBlock,
    ToolRequestEvent,
    ToolResponse,
    ToolResponseEvent,
    Usage,
)
from flink_agents.api.events import event_class_for
from flink_agents.api.events.event import event_id


class Ticket(BaseModel):
    subject: str
    priority: int


class Answer(BaseModel):
    label: str


class PingEvent(Event):
    """A user-defined event with its own type name."""

    EVENT_TYPE: ClassVar[str] = "ping"

    def __init__(self, count: int = 0, **data: object) -> None:
        if "attributes" in data:
            super().__init__(**data)  # type: ignore[arg-type]
        else:
            super().__init__(attributes={"count": count}, **data)  # type: ignore[arg-type]


class UnnamedEvent(Event):
    """A subclass without EVENT_TYPE gets its import path as its type."""


PNG = "iVBORw0KGgo="


def _round_trip(event: Event) -> Event:
    text = event.to_json()
    json.loads(text)  # valid JSON
    return Event.from_json(text)


def test_plain_event_round_trip_keeps_type_attributes_and_lineage() -> None:
    event = Event("my_event", {"n": 1, "items": ["a", {"b": None}]})
    event.upstream_event_id = "up-1"
    event.upstream_action_name = "start"
    restored = _round_trip(event)
    assert type(restored) is Event
    assert restored == event
    assert restored.id == event.id


def test_event_needs_a_type() -> None:
    with pytest.raises(ValueError, match="needs a type"):
        Event()  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"Event\.id must be a UUID or its text, got 3"):
        Event("t", {}, id=3)  # type: ignore[arg-type]


def test_event_ids_are_unique_by_default() -> None:
    assert len({Event("t").id for _ in range(100)}) == 100


def test_input_and_output_events_round_trip_as_their_class() -> None:
    for event in (InputEvent(input={"q": "hi", "n": [1, 2]}), OutputEvent(output="done")):
        restored = _round_trip(event)
        assert type(restored) is type(event)
        assert restored == event
    assert InputEvent(input=5).input == 5
    assert OutputEvent(output=[1]).output == [1]
    assert InputEvent.EVENT_TYPE == "_input_event"
    assert OutputEvent.EVENT_TYPE == "_output_event"


def test_pydantic_values_keep_their_class_across_json() -> None:
    event = InputEvent(input={"ticket": Ticket(subject="printer", priority=2)})
    restored = _round_trip(event)
    assert isinstance(restored, InputEvent)
    assert restored.input == {"ticket": Ticket(subject="printer", priority=2)}


def test_chat_request_event_round_trip() -> None:
    event = ChatRequestEvent(
        model="triage",
        messages=[
            ChatMessage.system("Be brief."),
            ChatMessage.user(
                [TextBlock(text="What is this?"), ImageBlock(mime_type="image/png", data=PNG)]
            ),
        ],
        prompt_args={"team": "billing"},
        output_schema=Answer,
    )
    restored = _round_trip(event)
    assert isinstance(restored, ChatRequestEvent)
    assert restored == event
    assert restored.output_schema is Answer
    assert restored.messages[1].blocks[1] == ImageBlock(mime_type="image/png", data=PNG)
    assert restored.prompt_args == {"team": "billing"}


def test_chat_request_accepts_message_dicts_and_checks_its_fields() -> None:
    event = ChatRequestEvent(
        model="m", messages=[{"role": "user", "blocks": [{"type": "text", "text": "hi"}]}]
    )
    assert event.messages == [ChatMessage.user("hi")]
    with pytest.raises(ValueError, match="chat model setup"):
        ChatRequestEvent(model="", messages=[])
    with pytest.raises(TypeError, match="pydantic model class"):
        ChatRequestEvent(model="m", messages=[], output_schema=dict)  # type: ignore[arg-type]


def test_chat_response_event_round_trip_with_result_and_structured_output() -> None:
    message = ChatMessage.assistant('{"label": "bug"}')
    result = ChatResult(
        message=message,
        model="m-1",
        response_id="r-9",
        usage=Usage(input_tokens=10, output_tokens=0),
        finish_reason="stop",
    )
    event = ChatResponseEvent(
        request_id="req-1", result=result, structured_output=Answer(label="bug")
    )
    assert event.response == message  # taken from the result
    restored = _round_trip(event)
    assert isinstance(restored, ChatResponseEvent)
    assert restored == event
    assert restored.result is not None and restored.result.usage.output_tokens == 0
    assert restored.result.usage.cache_read_tokens is None
    assert restored.structured_output == Answer(label="bug")
    assert restored.ok


def test_chat_response_event_with_error() -> None:
    error = ChatError(
        message="rate limited", kind="rate_limit", retryable=True, status_code=429, attempts=4
    )
    event = ChatResponseEvent(request_id="req-1", error=error)
    restored = _round_trip(event)
    assert isinstance(restored, ChatResponseEvent)
    assert restored.error == error
    assert restored.response is None and not restored.ok
    with pytest.raises(ValueError, match="id of its request"):
        ChatResponseEvent(request_id="")


def test_tool_events_round_trip() -> None:
    request = ToolRequestEvent(
        model="m",
        tool_calls=[
            ToolCallBlock(id="c1", name="lookup", input={"id": 7}),
            {"id": "c2", "name": "chart"},
        ],
    )
    restored = _round_trip(request)
    assert isinstance(restored, ToolRequestEvent)
    assert restored == request
    assert [c.id for c in restored.tool_calls] == ["c1", "c2"]

    response = ToolResponseEvent(
        request_id=request.id,
        responses=[
            ToolResponse.from_output("c1", "lookup", {"status": "open"}),
            ToolResponse.from_output("c2", "chart", ImageBlock(mime_type="image/png", data=PNG)),
            ToolResponse.failure("c3", "missing", "no such tool"),
        ],
    )
    restored_response = _round_trip(response)
    assert isinstance(restored_response, ToolResponseEvent)
    assert restored_response == response
    assert restored_response.responses[1].content == [ImageBlock(mime_type="image/png", data=PNG)]
    assert restored_response.responses[2].success is False


def test_user_event_subclasses_round_trip_as_themselves() -> None:
    ping = PingEvent(count=3)
    restored = _round_trip(ping)
    assert isinstance(restored, PingEvent)
    assert restored.attributes == {"count": 3}
    assert event_class_for("ping") is PingEvent

    unnamed = UnnamedEvent()
    assert unnamed.type == f"{__name__}.UnnamedEvent"
    assert isinstance(_round_trip(unnamed), UnnamedEvent)


def test_unknown_event_type_restores_as_plain_event() -> None:
    data = {"type": "not_registered", "id": "e1", "attributes": {"x": [1]}}
    restored = Event.from_dict(data)
    assert type(restored) is Event
    assert restored.type == "not_registered" and restored.attributes == {"x": [1]}


def test_non_json_attribute_fails_clearly() -> None:
    with pytest.raises(ValidationError, match=r"attribute\['value'\] is a value of type object"):
        Event("t", {"value": object()})
    event = Event("t")
    event.attributes["value"] = object()  # changed in place: found when written
    with pytest.raises(TypeError, match="cannot be written to agent state as JSON"):
        event.to_json()


# ---------------------------------------------------------------- upstream's Event API


class UpstreamStyleEvent(Event):
    """A custom event written as upstream's docs show it."""

    EVENT_TYPE: ClassVar[str] = "upstream_style"

    def __init__(self, value: str) -> None:
        super().__init__(type=UpstreamStyleEvent.EVENT_TYPE, attributes={"value": value})

    @classmethod
    def from_event(cls, event: Event) -> UpstreamStyleEvent:
        assert "value" in event.attributes
        return cls(value=event.attributes["value"]).reconstruct_from(event)

    @property
    def value(self) -> str:
        return self.get_attr("value")


def test_custom_event_keywords_are_attributes_read_as_attributes() -> None:
    event = Event(type="my_event", field1="test", field2=42)
    assert event.attributes == {"field1": "test", "field2": 42}
    assert event.field1 == "test" and event.get_attr("field2") == 42
    assert event.get_type() == "my_event"
    event.field2 = 43  # writes the attribute
    event.set_attr("field3", [1])
    assert event.attributes == {"field1": "test", "field2": 43, "field3": [1]}
    assert event.get_attr("missing") is None
    with pytest.raises(AttributeError, match="missing"):
        _ = event.missing
    restored = _round_trip(event)
    assert restored.field3 == [1] and restored == event


def test_unified_event_with_attributes_and_lineage_aliases() -> None:
    event = Event(
        type="MyEvent",
        attributes={"x": 1},
        upstreamEventId="up-1",
        upstreamActionName="act",
    )
    assert event.attributes == {"x": 1}
    assert (str(event.upstream_event_id), event.upstream_action_name) == ("up-1", "act")
    with pytest.raises(ValueError, match="'x' is given twice"):
        Event(type="MyEvent", attributes={"x": 1}, x=2)


def test_fields_and_properties_win_over_attributes() -> None:
    event = Event(type="t", attributes={"type": "shadowed", "id": "shadowed"})
    assert event.type == "t" and event.id != "shadowed"
    event.upstream_action_name = "a"  # a field, not an attribute
    assert "upstream_action_name" not in event.attributes
    assert InputEvent(input=3).input == 3


def test_from_event_gives_the_typed_view_with_the_same_identity() -> None:
    base = Event(
        type="_chat_response_event",
        attributes={
            "request_id": "r1",
            "response": {"role": "assistant", "blocks": [{"type": "text", "text": "hi"}]},
        },
        id="e-7",
        upstream_event_id="r1",
        upstream_action_name="chat",
    )
    typed = ChatResponseEvent.from_event(base)
    assert isinstance(typed, ChatResponseEvent)
    assert typed.response == ChatMessage.assistant("hi")  # validated into the typed model
    assert (str(typed.id), str(typed.upstream_event_id), typed.upstream_action_name) == (
        "e-7",
        "r1",
        "chat",
    )
    assert InputEvent.from_event(Event(type="_input_event", attributes={"input": 5})).input == 5
    assert OutputEvent.from_event(Event(type="_output_event", attributes={"output": 9})).output == 9
    already = InputEvent(input=1)
    assert InputEvent.from_event(already) is already
    assert Event.from_event(already) is already
    with pytest.raises(ValueError, match="is not a OutputEvent"):
        OutputEvent.from_event(already)


def test_upstream_style_subclass_from_event_and_reconstruct_from() -> None:
    source = Event(type="upstream_style", attributes={"value": "v"}, id="s-1")
    source.upstream_action_name = "producer"
    typed = UpstreamStyleEvent.from_event(source)
    assert isinstance(typed, UpstreamStyleEvent) and typed.value == "v"
    assert typed.id == source.id and typed.upstream_action_name == "producer"
    draft = UpstreamStyleEvent("w")
    copy = draft.reconstruct_from(source)
    assert copy is not draft and str(copy.id) == "s-1" and draft.id != source.id
    assert draft.upstream_action_name is None
    restored = _round_trip(typed)
    assert isinstance(restored, UpstreamStyleEvent) and restored.value == "v"


# Upstream's event contract: a missing type is a validation error, an id is fixed, and
# pydantic's JSON of an event names its lineage as upstream's Java side does.


def test_a_missing_type_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="needs a type"):
        Event(n=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match='"type"'):
        Event.from_json(json.dumps({"attributes": {}}))


def test_an_events_id_cannot_be_assigned() -> None:
    event = Event(type="t")
    with pytest.raises(ValidationError, match="Field is frozen"):
        event.id = "other"
    assert event.model_copy(update={"id": "copy"}).id == "copy"


def test_pydantic_json_names_the_lineage_as_upstream() -> None:
    root = Event(type="t", n=1)
    assert set(json.loads(root.model_dump_json())) == {"type", "attributes", "id"}
    child = Event(
        type="t", upstreamEventId=uuid.UUID(int=1), upstreamActionName="act", attributes={}
    )
    written = json.loads(child.model_dump_json())
    assert written["upstreamEventId"] == str(uuid.UUID(int=1))
    assert written["upstreamActionName"] == "act"
    assert "upstream_event_id" not in written
    assert "upstreamEventId" not in child.model_dump(exclude={"upstream_event_id"})
    for restored in (Event.from_json(json.dumps(written)), Event.model_validate(written)):
        assert restored.upstream_event_id == uuid.UUID(int=1)
        assert restored.upstream_action_name == "act"
        assert restored.id == child.id


class _Declared(Event):
    note: str = ""


def test_a_lineage_id_next_to_declared_fields_is_a_uuid() -> None:
    event = _Declared(type="d", note="x", upstreamEventId=str(uuid.UUID(int=2)))
    assert event.upstream_event_id == uuid.UUID(int=2)
    assert json.loads(event.model_dump_json())["note"] == "x"


# ---------------------------------------------------------------- ids and attribute checks


def test_ids_are_version_4_uuids_and_text_ids_of_older_versions_keep_their_text() -> None:
    event = Event(type="t")
    assert isinstance(event.id, uuid.UUID) and event.id.version == 4
    old = Event.from_dict({"type": "t", "id": "9f1c-3-1-0", "upstream_event_id": "9f1c-3-0-0"})
    assert isinstance(old.id, uuid.UUID) and str(old.id) == "9f1c-3-1-0"
    assert old.to_dict()["upstream_event_id"] == "9f1c-3-0-0"
    assert pickle.loads(pickle.dumps(old)).id == old.id
    assert str(pickle.loads(pickle.dumps(old.id))) == "9f1c-3-1-0"


def test_an_id_read_from_text_is_the_uuid_of_that_text() -> None:
    value = uuid.uuid4()
    for text in (str(value), str(value).upper()):
        read = event_id(text)
        assert read == value and hash(read) == hash(value) and str(read) == str(value)
    for text in ("zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz", "0123456g-89ab-cdef-0123-456789abcdef"):
        assert str(event_id(text)) == text  # 36 characters, but no UUID: an older text id
    made = Event(type="t").id
    for copied in (pickle.loads(pickle.dumps(made)), copy.deepcopy(made), event_id(str(made))):
        assert copied == made and str(copied) == str(made) and copied.is_safe == made.is_safe


def test_a_uuid_attribute_comes_back_as_a_uuid() -> None:
    event = Event(type="t", ref=uuid.UUID(int=5), old=event_id("9f1c-3-1-0"), refs=[event_id("a")])
    restored = Event.from_json(event.to_json())
    assert restored.ref == uuid.UUID(int=5) and isinstance(restored.ref, uuid.UUID)
    assert str(restored.old) == "9f1c-3-1-0" and restored.refs == [event_id("a")]


def test_a_response_request_id_is_a_uuid_given_as_one_or_as_its_text() -> None:
    request = uuid.uuid4()
    response = ChatResponseEvent(request_id=str(request), response=ChatMessage.assistant("a"))
    assert response.request_id == request
    assert Event.from_json(response.to_json()).request_id == request


def test_an_attribute_assigned_is_checked_as_upstream() -> None:
    event = Event(type="t", a=1)
    with pytest.raises(PydanticSerializationError, match="attribute 'c' is a value of type set"):
        event.c = {1}
    with pytest.raises(PydanticSerializationError, match="attribute 'd' is a value of type bytes"):
        event.set_attr("d", b"x")
    assert event.attributes == {"a": 1}
    event.e = Event(type="nested")  # a pydantic model is kept
