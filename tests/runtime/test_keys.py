"""Agent keys as typed text."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.runtime.keys import decode_key, encode_key


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("1", '"1"'),
        (1, "1"),
        (True, "true"),
        (1.5, "1.5"),
        ("None", '"None"'),
        ("ünï", '"ünï"'),
        (("a", 2), '["a",2]'),
        (("a", ("b", 3)), '["a",["b",3]]'),
    ],
)
def test_keys_round_trip_with_their_type(key: Any, text: str) -> None:
    assert encode_key(key) == text
    assert decode_key(text) == key
    assert type(decode_key(text)) is type(key)


def test_keys_of_different_types_differ() -> None:
    texts = {encode_key(k) for k in (1, "1", True, 1.0, "true", (1,))}
    assert len(texts) == 6


@pytest.mark.parametrize("key", [None, b"raw", {"a": 1}, (), float("nan"), ("a", None), object()])
def test_a_value_without_key_text_is_refused(key: Any) -> None:
    with pytest.raises(TypeError, match="agent key"):
        encode_key(key)


def test_a_list_key_is_the_tuple_key() -> None:
    assert encode_key(["a", 1]) == encode_key(("a", 1))
