"""PyFlink ``Row`` values in agent state (an input from a table, a ReActAgent's row output):
they come back as the same ``Row``."""

from __future__ import annotations

from pyflink.common import Row

from flink_agents.api._values import canonical_json, check_state_value, decode_value, encode_value


def test_a_named_row_comes_back_as_itself() -> None:
    row = Row(id="p1", score=5)
    written = encode_value(row)
    assert written == {"$row": ["p1", 5], "$names": ["id", "score"]}
    back = decode_value(written)
    assert isinstance(back, Row)
    assert back == row
    assert back.as_dict() == {"id": "p1", "score": 5}


def test_nested_and_unnamed_rows() -> None:
    row = Row("a", [1, Row(x=2)], {"k": Row(y=None)})
    back = decode_value(encode_value(row))
    assert back == row
    assert isinstance(back[1][1], Row)
    check_state_value(row)


def test_the_canonical_form_is_plain_json() -> None:
    assert canonical_json(Row(id="p1", score=5)) == '{"id":"p1","score":5}'
    assert canonical_json(Row("a", 1)) == '["a",1]'
