"""Pieces of the Flink environment that need no running JVM."""

from __future__ import annotations

import pickle
from typing import Any
from unittest.mock import ANY

import cloudpickle  # pyright: ignore[reportMissingTypeStubs]
import pytest
from pydantic import BaseModel
from pyflink.common import Row
from pyflink.datastream.functions import KeySelector

from flink_agents.runtime.flink.environment import _selector, _table_key, _ToRow, keyed_input
from flink_agents.runtime.keys import refused_key
from tests.fakes.values import nested_lists


class Reply(BaseModel):
    id: int
    reply: str


def test_outputs_become_rows_of_the_schema() -> None:
    to_row = _ToRow(["id", "reply"])
    for value in ({"reply": "B", "id": 1, "extra": 0}, Reply(id=1, reply="B"), (1, "B")):
        row = to_row(value)
        assert (row[0], row[1]) == (1, "B")
        assert row.as_dict() == {"id": 1, "reply": "B"}
    with pytest.raises(ValueError, match="lacks fields"):
        to_row({"id": 1})
    with pytest.raises(ValueError, match="cannot turn"):
        to_row("just text")
    assert _ToRow(["text"])("just text").as_dict() == {"text": "just text"}
    assert to_row(Row(2, "C")) == Row(2, "C")


def test_flink_keys_are_the_keys_typed_text() -> None:
    assert keyed_input(lambda r: r["n"] % 3, {"n": 7}) == ("1", cloudpickle.dumps({"n": 7}))
    assert keyed_input(lambda r: r["k"], {"k": "1"})[0] == '"1"'


_NO_SELECTOR_KEY = "<no key: the key selector raised>"


@pytest.mark.parametrize(
    ("record", "name", "cause_type"),
    [
        ({}, "None", "TypeError"),
        ({"k": "k\udfff"}, "'k\\udfff'", "TypeError"),
        ({"k": float("nan")}, "nan", "TypeError"),
        ({"k": ()}, "()", "TypeError"),
        ({"k": 10**5000}, None, "TypeError"),
        ({"k": nested_lists(10_000)}, "<unprintable key of type list>", "TypeError"),
        ("not a dict", _NO_SELECTOR_KEY, "AttributeError"),
        ({"other": 1}, _NO_SELECTOR_KEY, "KeyError"),
    ],
    ids=["none", "surrogate", "nan", "empty-tuple", "big-int", "deep", "str", "missing"],
)
def test_a_key_without_text_leaves_as_a_refused_key_text(
    record: Any, name: str | None, cause_type: str
) -> None:
    """The key selector never raises before Java: the operator gets the refusal."""
    select = (lambda r: r.get("k")) if record != {"other": 1} else (lambda r: r["k"])
    text, data = keyed_input(select, record)
    refused = refused_key(text)
    assert refused is not None
    text.encode("utf-8")  # Flink's STRING serializer can write it
    assert refused.key_text is None
    if name is None:
        assert refused.name.startswith("<unprintable key of type int, sha256 ")
        assert keyed_input(select, record)[0] == text  # a stable stand-in
    else:
        assert refused.name == name
    assert refused.cause_type == cause_type
    value = pickle.loads(data)
    if name == "<unprintable key of type list>":  # the record cannot be pickled either
        assert value == "<unprintable input of type dict>"
    else:
        assert pickle.dumps(value) == pickle.dumps(record)  # (nan != nan)


def test_a_value_that_cannot_be_pickled_leaves_as_its_stand_in() -> None:
    deep = {"k": "a", "v": nested_lists(10_000)}
    text, data = keyed_input(lambda r: r["k"], deep)
    assert refused_key(text) == ('"a"', '"a"', "PicklingError", ANY)
    assert pickle.loads(data) == "<unprintable input of type dict>"


def test_key_selector_objects_and_functions() -> None:
    class ByUser(KeySelector):
        def get_key(self, value: dict[str, str]) -> str:
            return value["user"]

    assert _selector(ByUser())({"user": "u1"}) == "u1"
    assert _selector(len)("abc") == 3
    with pytest.raises(TypeError, match="must be callable or a KeySelector, got 'user'"):
        _selector("user")


def test_a_table_key_selector_gets_the_row_by_position_or_by_name() -> None:
    """from_table's key selector gets the row, as upstream's (whose tests key by
    ``value[0]``), while the agent gets the dict of its fields."""

    class First(KeySelector):
        def get_key(self, value: Row) -> int:
            return value[0]

    fields = {"a": 2, "b": 3, "nested": {"c": 1}}
    assert _table_key(_selector(First()))(fields) == 2
    assert _table_key(lambda row: row["b"])(fields) == 3
    assert _table_key(lambda row: row.nested["c"])(fields) == 1
    key = cloudpickle.loads(cloudpickle.dumps(_table_key(lambda row: row[1])))
    assert key(fields) == 3  # shipped to the workers


def test_operator_options_come_from_the_agent_options_where_not_given() -> None:
    from flink_agents.api.core_options import AgentConfiguration
    from flink_agents.runtime.flink.environment import operator_options_from
    from flink_agents.runtime.flink.keyed_runs import PollPolicy
    from flink_agents.runtime.flink.operator import AgentOperatorOptions

    defaults = operator_options_from(AgentConfiguration())
    # Bounded by memory, not by a count: 256 MiB lets 16,384 runs of 16 KiB wait at once.
    assert (
        defaults.max_in_flight_bytes,
        defaults.max_in_flight,
        defaults.max_buffered,
        defaults.gc_tuning,
        defaults.gc_freeze,  # process-wide and not undone exactly: opt-in
    ) == (256 * 2**20, None, 32768, True, False)
    assert operator_options_from(AgentConfiguration({"gc.freeze": True})).gc_freeze is True

    config = AgentConfiguration(
        {"max-in-flight-runs": 20000, "max-in-flight-runs-bytes": 2**30, "gc.tuning": False}
    )
    options = operator_options_from(config)
    # Every waiting run of a subtask fits: twice the runs in flight are accepted.
    assert (options.max_in_flight, options.max_in_flight_bytes) == (20000, 2**30)
    assert (options.max_buffered, options.gc_tuning) == (40000, False)
    config.set("max-in-flight-runs-bytes", 2**20)  # the memory bound lets fewer on
    assert operator_options_from(config).max_buffered == 10000  # 2 x 64, at least 10,000
    config.set("max-buffered-inputs", 25000)
    assert operator_options_from(config).max_buffered == 25000

    # Given options keep what they set; what they leave out still comes from the config.
    poll = PollPolicy(max_ms=2000)
    given = AgentOperatorOptions(max_in_flight=30000, poll=poll)
    merged = operator_options_from(
        AgentConfiguration({"gc.tuning": False, "max-in-flight-runs-bytes": 2**30}), given
    )
    assert (merged.max_in_flight, merged.max_buffered) == (30000, 60000)
    assert merged.poll == poll and merged.gc_tuning is False
    explicit = AgentOperatorOptions(max_buffered=5, gc_tuning=True, max_in_flight_bytes=2**20)
    kept = operator_options_from(AgentConfiguration({"gc.tuning": False}), explicit)
    assert (kept.max_in_flight, kept.max_in_flight_bytes) == (None, 2**20)
    assert (kept.max_buffered, kept.gc_tuning) == (5, True)


def test_to_table_takes_upstreams_external_type_info_of_a_row_type() -> None:
    """Upstream's docs: `to_table(schema=schema, output_type=ExternalTypeInfo(RowTypeInfo(
    [BasicTypeInfo.INT_TYPE_INFO()], ["result"])))`. The outputs become rows of its fields,
    mapped with the type as given; the table is made from them with the schema."""
    from pyflink.common.typeinfo import BasicTypeInfo, ExternalTypeInfo, RowTypeInfo

    from flink_agents.runtime.flink.environment import AgentStream

    output_type = ExternalTypeInfo(RowTypeInfo([BasicTypeInfo.INT_TYPE_INFO()], ["result"]))
    mapped: list[tuple[object, object]] = []
    tables: list[tuple[object, object]] = []

    class Output:
        def map(self, func: object, output_type: object) -> str:
            mapped.append((func, output_type))
            return "rows"

    class TableEnvironment:
        def from_data_stream(self, stream: object, schema: object) -> str:
            tables.append((stream, schema))
            return "table"

    class Environment:
        table_environment = TableEnvironment()

    stream = AgentStream.__new__(AgentStream)
    stream._environment = Environment()  # pyright: ignore[reportAttributeAccessIssue]
    stream._output = Output()  # pyright: ignore[reportAttributeAccessIssue]
    assert stream.to_table(schema="schema", output_type=output_type) == "table"  # pyright: ignore[reportArgumentType]
    assert tables == [("rows", "schema")]
    [(to_row, given_type)] = mapped
    assert given_type is output_type
    assert isinstance(to_row, _ToRow) and to_row({"result": 7}).as_dict() == {"result": 7}
    with pytest.raises(TypeError, match="RowTypeInfo"):
        stream.to_table(schema="schema", output_type=BasicTypeInfo.INT_TYPE_INFO())  # pyright: ignore[reportArgumentType]
