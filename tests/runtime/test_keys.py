"""Agent keys as typed text."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.runtime.keys import decode_key, encode_key, refused_key, refused_key_text


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


def _nested(depth: int) -> Any:
    key: Any = "k"
    for _ in range(depth):
        key = (key,)
    return key


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("k\udfff", "lone surrogate"),
        (("a", "\ud800"), "lone surrogate"),
        (10**5000, "4300 digits"),
        (_nested(10_000), "nested this deep"),
        (float("inf"), "not a finite number"),
    ],
    ids=["surrogate", "surrogate-in-tuple", "int-over-4300-digits", "deep", "inf"],
)
def test_a_key_that_has_no_utf8_json_text_is_refused(key: Any, why: str) -> None:
    """Accepted here, such a key would fail later on Flink (its STRING serializer, naming no
    key) or in a store."""
    with pytest.raises(TypeError, match=why):
        encode_key(key)


def test_non_ascii_keys_keep_their_text() -> None:
    assert encode_key("ünï😀") == '"ünï😀"'


def test_a_refused_key_text_is_no_key_text_and_carries_the_refusal() -> None:
    text = refused_key_text(None, "'k\\udfff'", "TypeError", "why \udfff")
    refused = refused_key(text)
    assert text.isascii() and refused == (None, "'k\\udfff'", "TypeError", "why \udfff")
    assert refused.key == "'k\\udfff'"  # a key without text: its name
    refused = refused_key(refused_key_text('["a",1]', '["a",1]', "PicklingError", "deep"))
    assert refused is not None and refused.key == ("a", 1)  # a refused value: the key
    assert refused_key(encode_key("\x00refused-key")) is None
