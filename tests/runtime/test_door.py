"""The door: every key or value that cannot be kept is refused before any run, as a
failure record under `input-failure.policy: skip` (the job goes on) and as an
`InputRefusedError` under `fail` (after the inputs accepted before it were answered)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from flink_agents.api import Agent, Event, InputEvent, OutputEvent, RunnerContext
from flink_agents.runtime.errors import InputRefusedError
from flink_agents.runtime.input_failure import key_name, printable
from flink_agents.runtime.local_runner import LocalExecutionEnvironment, LocalRunner
from tests.fakes.values import nested_lists


def _deep_tuple(depth: int) -> Any:
    key: Any = "k"
    for _ in range(depth):
        key = (key,)
    return key


class _Hostile:
    """An object whose every method a runner might call raises."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")

    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _HostileStr(str):
    """A string key whose own methods raise."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")

    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __str__(self) -> str:
        raise RuntimeError("no str")


class _Overflowing(Mapping[str, Any]):
    """A mapping that raises OverflowError when read."""

    def __getitem__(self, key: str) -> Any:
        raise OverflowError("too big to read")

    def __iter__(self) -> Iterator[str]:
        raise OverflowError("too big to read")

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return "_Overflowing()"


BAD_VALUES: dict[str, tuple[Any, str, Any]] = {
    # id: (value, the record's error_type, the record's input)
    "lone-surrogate": ("\ud800", "PydanticSerializationError", "'\\ud800'"),
    "surrogate-in-dict-key": ({"\udfff": 1}, "PydanticSerializationError", "{'\\udfff': 1}"),
    "int-over-4300-digits": (10**5000, "ValueError", "<unprintable input of type int, sha256 "),
    "nested-10000-deep": (
        nested_lists(10_000),
        "RecursionError",
        "<unprintable input of type list>",
    ),
    "bytes-not-utf8": (b"\xff\xfe", "TypeError", "b'\\xff\\xfe'"),
    "hostile-object": (_Hostile(), "TypeError", "<unprintable input of type _Hostile, sha256 "),
    "overflow-when-read": (_Overflowing(), "OverflowError", "_Overflowing()"),
    "nan": (float("nan"), "TypeError", "nan"),
}

BAD_KEYS: dict[str, tuple[Any, str]] = {
    # id: (key, how the record names it)
    "lone-surrogate": ("k\udfff", "'k\\udfff'"),
    "none": (None, "None"),
    "nan": (float("nan"), "nan"),
    "inf": (float("inf"), "inf"),
    "empty-tuple": ((), "()"),
    "dict": ({}, "{}"),
    "unhashable-list-of-list": ([[]], "[[]]"),
    "int-over-4300-digits": (10**5000, "<unprintable key of type int, sha256 "),
    "nested-10000-deep": (_deep_tuple(10_000), "<unprintable key of type tuple>"),
    "bytes-not-utf8": (b"\xff", "b'\\xff'"),
    "hostile-object": (_Hostile(), "<unprintable key of type _Hostile, sha256 "),
}


async def _echo(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=event.attributes["input"]))


def _echo_agent() -> Agent:
    return Agent().add_action("echo", InputEvent, _echo)


def _between_good_ones(bad: dict[str, Any]) -> list[dict[str, Any]]:
    """Good inputs `good-0`, ... with one bad input after each of the first ones."""
    inputs: list[dict[str, Any]] = []
    for n in range(3):
        inputs.append({"key": f"g{n}", "value": f"good-{n}"})
    inputs.append(bad)
    for n in range(3, 6):
        inputs.append({"key": f"g{n % 2}", "value": f"good-{n}"})
    return inputs


def _good_answers(outputs: list[dict[Any, Any]]) -> list[Any]:
    return sorted(v for o in outputs for v in o.values())


GOOD = [f"good-{n}" for n in range(6)]


def _skip(inputs: list[dict[str, Any]]) -> tuple[list[dict[Any, Any]], list[dict[str, Any]]]:
    env = LocalExecutionEnvironment({"input-failure.policy": "skip"})
    builder = env.from_list(inputs).apply(_echo_agent())
    env.execute()
    return builder.to_list(), builder.to_error_list()


@pytest.mark.parametrize(("value", "error_type", "shown"), BAD_VALUES.values(), ids=BAD_VALUES)
def test_under_skip_a_bad_value_is_a_failure_record_naming_its_key(
    value: Any, error_type: str, shown: str
) -> None:
    outputs, errors = _skip(_between_good_ones({"key": "bad", "value": value}))
    assert _good_answers(outputs) == GOOD
    [record] = errors
    assert record["key"] == "bad"
    assert (record["action"], record["attempts"], record["error_type"]) == (None, 0, error_type)
    assert str(record["input"]).startswith(shown)
    for text in (record["input"], record["message"]):
        str(text).encode("utf-8")  # a record any sink can write


@pytest.mark.parametrize(("key", "name"), BAD_KEYS.values(), ids=BAD_KEYS)
def test_under_skip_a_bad_key_is_a_failure_record_naming_the_key(key: Any, name: str) -> None:
    outputs, errors = _skip(_between_good_ones({"key": key, "value": "the bad key's"}))
    assert _good_answers(outputs) == GOOD
    [record] = errors
    assert record["key"].startswith(name)
    assert record["key"] == key_name(key)  # what Flink's key selector sends: the same name
    assert (record["input"], record["error_type"], record["attempts"]) == (
        "the bad key's",
        "TypeError",
        0,
    )
    assert "agent key" in record["message"]
    record["key"].encode("utf-8")


def test_a_key_string_whose_methods_raise_is_the_plain_string_key() -> None:
    """A str subclass has the text of its characters; runs and outputs see the plain
    string, as on Flink (where the key is read back from its text)."""
    outputs, errors = _skip(_between_good_ones({"key": _HostileStr("h"), "value": "h's"}))
    assert errors == []
    assert _good_answers(outputs) == sorted([*GOOD, "h's"])
    assert {"h": "h's"} in outputs


def test_a_list_key_is_answered_under_its_tuple() -> None:
    outputs, errors = _skip([{"key": ["a", 1], "value": "x"}, {"key": ("a", 1), "value": "y"}])
    assert (outputs, errors) == ([{("a", 1): "x"}, {("a", 1): "y"}], [])


def test_the_stand_in_of_a_key_without_a_name_is_stable() -> None:
    assert printable(10**5000, "key") == printable(10**5000, "key")
    assert printable(10**5000, "key") != printable(10**5001, "key")


@pytest.mark.parametrize("bad", ["key", "value"])
def test_under_fail_a_refused_input_is_a_clear_error_after_the_answers_before_it(
    bad: str,
) -> None:
    inputs: list[dict[str, Any]] = [{"key": f"g{n}", "value": f"good-{n}"} for n in range(3)]
    if bad == "key":
        inputs.append({"key": "k\udfff", "value": "x"})
        match = r"key 'k\\udfff': an agent key cannot hold a lone surrogate"
    else:
        inputs.append({"key": "bad", "value": 10**5000})
        match = r'key "bad": ValueError: number out of range'
    inputs.append({"key": "after", "value": "never read"})
    env = LocalExecutionEnvironment()
    builder = env.from_list(inputs).apply(_echo_agent())
    with pytest.raises(InputRefusedError, match=match):
        env.execute()
    assert _good_answers(builder.to_list()) == GOOD[:3]  # answered, not thrown away


def test_a_streaming_caller_gets_the_answers_before_a_refused_input() -> None:
    async def main() -> tuple[list[Any], BaseException | None]:
        runner = LocalRunner(_echo_agent())
        got: list[Any] = []
        try:
            async for output in runner.stream(
                [
                    {"key": "a", "value": "first"},
                    {"key": None, "value": "refused"},
                    {"key": "b", "value": "unread"},
                ]
            ):
                got.append(output.value)
        except InputRefusedError as exc:
            return got, exc
        finally:
            runner.close()
        return got, None

    got, error = asyncio.run(main())
    assert got == ["first"]
    assert isinstance(error, TypeError)  # InputRefusedError is a TypeError, as before


@dataclass
class _Operation:
    a: int
    b: list[int]


def test_a_dataclass_input_reaches_the_agent_as_the_dict_of_its_fields() -> None:
    """As upstream's (its events carry an input as JSON): upstream's skills test sends
    dataclass instances and reads them back as dicts."""
    outputs, errors = _skip([{"key": "k", "value": _Operation(a=2, b=[3])}])
    assert (outputs, errors) == ([{"k": {"a": 2, "b": [3]}}], [])
