"""The value codec: what round-trips through JSON, what is refused, the canonical form, and
what agent state keeps (checked where inputs arrive and events are sent)."""

from __future__ import annotations

import datetime as dt
import json
import math
from enum import Enum, IntEnum
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError

from flink_agents.api import (
    ChatMessage,
    ChatResult,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResponse,
    Usage,
)
from flink_agents.api._values import (
    AnyValue,
    ModelClassRef,
    UndecodableValueError,
    UnencodableValueError,
    canonical_json,
    canonical_value,
    check_state_value,
    decode_value,
    encode_value,
)


class Ticket(BaseModel):
    id: int
    title: str
    tags: list[str] = []


class Opened(BaseModel):
    opened: dt.datetime


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Mood(str, Enum):
    CALM = "calm"


class Level(IntEnum):
    HIGH = 3


class Opaque:
    def __repr__(self) -> str:
        return "Opaque(token='tok-999')"


PNG = "iVBORw0KGgo="


def through_json(value: Any, *, by_name: bool = False) -> Any:
    """``value`` written, sent through JSON text and read back."""
    text = json.dumps(encode_value(value, by_name=by_name), allow_nan=False)
    return decode_value(json.loads(text), by_name=by_name)


def assert_same(left: Any, right: Any) -> None:
    """Equal, and of the same types all the way down (``1 == 1.0 == True`` in Python)."""
    assert type(left) is type(right), (left, right)
    if isinstance(left, (list, tuple)):
        assert len(left) == len(right)
        for a, b in zip(left, right, strict=True):
            assert_same(a, b)
    elif isinstance(left, dict):
        assert list(left) == list(right)
        for key in left:
            assert_same(left[key], right[key])
    else:
        assert left == right


# ------------------------------------------------------------------ round trips

ROUND_TRIPS: list[Any] = [
    None,
    True,
    0,
    -3,
    2.5,
    "",
    "naïve ☕",
    [],
    {},
    [1, [2, [3]]],
    {"a": None, "b": [True, 1.5]},
    (),
    (1, "two", None),
    [(1, (2,)), {"t": (3,)}],
    {"nested": (Colour.RED, [Colour.BLUE])},
    Mood.CALM,
    Level.HIGH,
    {"$model": "looks like a tag", "$$double": 1, "$tuple": [1], "$": "", "a$": 2},
    Ticket(id=1, title="t", tags=["a"]),
    [Ticket(id=2, title="u"), {"t": Ticket(id=3, title="v")}],
    Opened(opened=dt.datetime(2026, 1, 1, 12, 30)),
    Ticket,  # a model class (an output schema)
    ChatResult(message=ChatMessage.assistant("hi"), model="m", usage=Usage(input_tokens=0)),
    ChatMessage.user(
        [TextBlock(text="what is this?"), ImageBlock(mime_type="image/png", data=PNG)]
    ),
    ToolCallBlock(id="c1", name="lookup", input={"id": 7, "$ref": "x"}),
    ToolResponse.from_output("c1", "chart", ImageBlock(mime_type="image/png", data=PNG)),
    ToolResponse.failure("c2", "missing", "no such tool"),
]


@pytest.mark.parametrize("by_name", [False, True], ids=["in-process", "by-name"])
@pytest.mark.parametrize("value", ROUND_TRIPS)
def test_values_round_trip_exactly(value: Any, by_name: bool) -> None:
    assert_same(through_json(value, by_name=by_name), value)


def test_the_tagged_form() -> None:
    assert encode_value((1, Colour.RED, Ticket(id=1, title="t"), Ticket)) == {
        "$tuple": [
            1,
            {"$enum": f"{__name__}:Colour", "$value": "red"},
            {"$model": f"{__name__}:Ticket", "$data": {"id": 1, "title": "t", "tags": []}},
            {"$class": f"{__name__}:Ticket"},
        ]
    }


def test_tag_lookalike_keys_are_escaped() -> None:
    written = encode_value({"$model": "x:Y", "$data": {}, "$$x": 1, "plain": 2})
    assert written == {"$$model": "x:Y", "$$data": {}, "$$$x": 1, "plain": 2}
    assert decode_value(written) == {"$model": "x:Y", "$data": {}, "$$x": 1, "plain": 2}


def test_subclasses_of_plain_values_come_back_plain() -> None:
    class Name(str):
        pass

    class Count(int):
        pass

    value = {"n": Name("ann"), "c": Count(2), "l": type("Items", (list,), {})([1])}
    assert_same(through_json(value), {"n": "ann", "c": 2, "l": [1]})


@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text()
        | st.sampled_from([Colour.RED, Mood.CALM, Level.HIGH])
        | st.builds(Ticket, id=st.integers(), title=st.text(), tags=st.lists(st.text())),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.lists(inner, max_size=4).map(tuple)
            | st.dictionaries(st.text(alphabet="$ab"), inner, max_size=4)
        ),
        max_leaves=20,
    ),
    st.booleans(),
)
def test_any_nesting_of_kept_values_round_trips(value: Any, by_name: bool) -> None:
    assert_same(through_json(value, by_name=by_name), value)


# ------------------------------------------------------------------ what cannot be written


@pytest.mark.parametrize(
    ("value", "found"),
    [
        (b"tok-999", "a value of type bytes"),
        ({"x": Opaque()}, "a value of type Opaque"),
        ({1: "tok-999"}, "a dict key of type int"),
        ([float("nan")], "NaN"),
        ({"inf": float("inf")}, "an infinity"),
        ({"s": {"tok-999"}}, "a value of type set"),
        (dt.datetime(2026, 1, 1), "a value of type datetime"),
        (dict, "a value of type type"),
    ],
)
def test_values_without_json_form_are_refused_by_type_never_by_value(
    value: Any, found: str
) -> None:
    for by_name in (False, True):
        with pytest.raises(UnencodableValueError) as refused:
            encode_value(value, by_name=by_name)
        assert found in refused.value.reason
        assert "tok-999" not in str(refused.value)
    with pytest.raises(UnencodableValueError, match=found):
        canonical_value(value)


def test_a_cycle_is_refused() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(UnencodableValueError, match="nested more than 200 levels"):
        encode_value(cycle)


def test_a_model_that_cannot_be_dumped_is_refused_without_its_values() -> None:
    class Holder(BaseModel):
        value: Any

    with pytest.raises(UnencodableValueError, match=r"model_dump\(mode='json'\) of .*Holder"):
        encode_value(Holder(value=Opaque()))


# ------------------------------------------------------------------ classes


def test_a_class_defined_in_a_function_round_trips_within_the_process_only() -> None:
    class Local(BaseModel):
        x: int

    class Shade(Enum):
        DARK = 1

    value = [Local(x=1), Shade.DARK, Local]
    assert_same(through_json(value), value)
    for item in value:
        with pytest.raises(UnencodableValueError, match="define it at module level"):
            encode_value(item, by_name=True)


def test_a_class_that_cannot_be_found_gives_its_plain_data_in_process() -> None:
    written = {
        "m": {"$model": f"{__name__}:Gone", "$data": {"id": 1, "$ref": "kept as written"}},
        "e": {"$enum": f"{__name__}:Missing", "$value": "red"},
        "c": {"$class": f"{__name__}:Missing"},
    }
    assert decode_value(written) == {
        "m": {"id": 1, "$ref": "kept as written"},
        "e": "red",
        "c": f"{__name__}:Missing",
    }


@pytest.mark.parametrize(
    "written",
    [
        {"$model": f"{__name__}:Gone", "$data": {}},
        {"$enum": f"{__name__}:Missing", "$value": "red"},
        {"$class": f"{__name__}:Ticket.Missing"},
        {"$model": f"{__name__}:Colour", "$data": {}},  # names a class, but not a model
    ],
)
def test_a_class_that_cannot_be_found_by_name_is_an_error(written: Any) -> None:
    with pytest.raises(UndecodableValueError, match="cannot be imported now"):
        decode_value(written, by_name=True)


def test_data_that_no_longer_fits_its_class_is_an_error() -> None:
    stale = {"$model": f"{__name__}:Ticket", "$data": {"id": "x"}}
    with pytest.raises(UndecodableValueError, match="no longer validates against the class"):
        decode_value(stale, by_name=True)
    with pytest.raises(ValidationError):
        decode_value(stale)
    gone = {"$enum": f"{__name__}:Colour", "$value": "green"}
    with pytest.raises(UndecodableValueError, match="no longer has the member's value"):
        decode_value(gone, by_name=True)
    with pytest.raises(ValueError):
        decode_value(gone)


# ------------------------------------------------------------------ canonical form


def test_the_canonical_form_has_no_tags() -> None:
    value = {"b": (1, Colour.RED, Mood.CALM), "a": Ticket(id=1, title="t"), "$k": Ticket}
    assert canonical_value(value) == {
        "b": [1, "red", "calm"],
        "a": {"id": 1, "title": "t", "tags": []},
        "$k": f"{__name__}:Ticket",
    }


def test_canonical_json_is_sorted_compact_ascii() -> None:
    text = canonical_json({"b": [1, 2.5], "a": {"z": "☕", "y": None}})
    assert text == '{"a":{"y":null,"z":"\\u2615"},"b":[1,2.5]}'


def test_values_equal_after_a_json_round_trip_have_one_canonical_form() -> None:
    original = (("a", 1), Colour.RED, ChatMessage.user("hi"), Ticket(id=2, title="x"))
    plain = json.loads(json.dumps(canonical_value(original)))
    assert canonical_json(original) == canonical_json(plain)


def test_parts_without_json_form_can_be_replaced() -> None:
    def marker(value: Any) -> str:
        return f"<{type(value).__name__}>"

    value = {"ok": [1, Opaque()], "nan": math.nan, "keys": {1: 2}, "set": {3}}
    assert canonical_value(value, unknown=marker) == {
        "ok": [1, "<Opaque>"],
        "nan": "<float>",
        "keys": "<dict>",
        "set": "<set>",
    }


# ------------------------------------------------------------------ pydantic fields


def test_any_value_fields_write_the_tagged_form_and_read_it_back() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(AnyValue)
    value = {"t": (1, Ticket(id=1, title="t"))}
    written = adapter.dump_python(value, mode="json")
    assert written == encode_value(value)
    assert adapter.validate_python(written) == value
    live = (1, 2)
    assert adapter.validate_python(live) is live  # live values pass through


def test_model_class_refs_are_written_as_their_path() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(ModelClassRef)
    assert adapter.dump_python(Ticket, mode="json") == f"{__name__}:Ticket"
    assert adapter.validate_python(f"{__name__}:Ticket") is Ticket
    assert adapter.validate_python(None) is None
    with pytest.raises(TypeError, match="not a pydantic model class"):
        adapter.validate_python(f"{__name__}:Colour")


# ------------------------------------------------------------------ what agent state keeps


@pytest.mark.parametrize(
    "value",
    [
        None,
        "text",
        3,
        2.5,
        True,
        [1, "a", None],
        (1, 2),
        {"a": {"b": [1.0, {"c": "d"}]}},
        Opened(opened=dt.datetime(2026, 1, 1)),  # a model keeps its datetime
        Opened,  # a model class (an output schema)
    ],
)
def test_values_agent_state_keeps(value: Any) -> None:
    check_state_value(value)
    assert_same(through_json(value), value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (b"raw", "input is a value of type bytes"),
        ({"a": {"b": {1, 2}}}, "input['a']['b'] is a value of type set"),
        ([1, dt.datetime(2026, 1, 1)], "input[1] is a value of type datetime"),
        ({1: "one"}, "input has a key of type int"),
        (float("nan"), "input is nan"),
        (object(), "input is a value of type object"),
    ],
)
def test_values_agent_state_refuses_name_where_and_what(value: Any, message: str) -> None:
    with pytest.raises(TypeError) as refused:
        check_state_value(value, "input")
    assert str(refused.value).startswith(message)
    with pytest.raises(UnencodableValueError):
        encode_value(value)  # what the door refuses has no JSON form either
