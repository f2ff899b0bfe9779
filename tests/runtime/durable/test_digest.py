"""The call digest: stable, order-insensitive where JSON is, and strict about what it takes."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api import ChatMessage
from flink_agents.runtime.durable import call_digest, function_identity
from flink_agents.runtime.durable.digest import canonical_call_json

from ._support import Colour, Ticket, send_email

ROOT = Path(__file__).resolve().parents[3]


def lookup(query: Any, *, limit: int = 3) -> None:
    return None


def other_lookup(query: Any, *, limit: int = 3) -> None:
    return None


class Search:
    def run(self, query: str) -> None:
        return None

    async def arun(self, query: str) -> None:
        return None

    def __call__(self, query: str) -> None:
        return None


ARGS: tuple[Any, ...] = (
    "café ☕",
    {"b": [1, 2.5, None], "a": {"z": True, "y": "x"}},
    Ticket(id=1, title="t", tags=["x"]),
)


def test_same_call_gives_same_digest_in_another_process() -> None:
    here = call_digest(send_email, ARGS, {"cc": ["a", "b"]})
    code = (
        "from tests.runtime.durable._support import send_email\n"
        "from tests.runtime.durable.test_digest import ARGS\n"
        "from flink_agents.runtime.durable import call_digest\n"
        "print(call_digest(send_email, ARGS, {'cc': ['a', 'b']}))\n"
    )
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        child = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert child.returncode == 0, child.stderr
        assert child.stdout.strip() == here


def test_the_digest_of_a_call_does_not_change_between_versions() -> None:
    """Records written by an earlier version must still match: a change here is a change of
    `DIGEST_SCHEME`."""
    digest = call_digest(send_email, (*ARGS, (1, Colour.RED)), {"cc": ["a", "b"]})
    assert digest == "ca3f890d511b756dfb2ec67699209e095694ac7094f33280f7dac85554b815e4"


def test_digest_is_sha256_hex() -> None:
    digest = call_digest(lookup, ("q",), {})
    assert len(digest) == 64 and int(digest, 16) >= 0


def test_key_order_of_dicts_and_kwargs_does_not_matter() -> None:
    a = call_digest(lookup, ({"x": 1, "y": 2},), {"limit": 5, "extra": "e"})
    b = call_digest(lookup, ({"y": 2, "x": 1},), {"extra": "e", "limit": 5})
    assert a == b


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (("q",), ("Q",)),
        ((1,), (1.0,)),
        ((1,), (True,)),
        ((None,), ("null",)),
        (([1, 2],), ([2, 1],)),
        (({"a": 1},), ({"a": 1, "b": None},)),
        (("a", "b"), (["a", "b"],)),
    ],
)
def test_different_arguments_give_different_digests(
    left: tuple[Any, ...], right: tuple[Any, ...]
) -> None:
    assert call_digest(lookup, left, {}) != call_digest(lookup, right, {})


def test_positional_and_keyword_arguments_are_distinguished() -> None:
    assert call_digest(lookup, ("q",), {}) != call_digest(lookup, (), {"query": "q"})


def test_function_identity_is_module_and_qualname() -> None:
    assert function_identity(lookup) == f"{__name__}:lookup"
    assert function_identity(Search().run) == f"{__name__}:Search.run"
    assert function_identity(Search().arun) == f"{__name__}:Search.arun"
    assert function_identity(Search()) == f"{__name__}:Search.__call__"
    assert function_identity(functools.partial(lookup, "q")) == f"{__name__}:lookup"
    assert function_identity(len) == "builtins:len"
    assert function_identity([].append) == "builtins:list.append"
    assert call_digest(lookup, ("q",), {}) != call_digest(other_lookup, ("q",), {})


def test_partial_digests_like_the_call_it_makes() -> None:
    bound = functools.partial(lookup, "q", limit=5)
    assert call_digest(bound, (), {}) == call_digest(lookup, ("q",), {"limit": 5})
    assert call_digest(bound, (), {"limit": 6}) == call_digest(lookup, ("q",), {"limit": 6})


def test_values_equal_after_a_json_round_trip_digest_the_same() -> None:
    """A checkpoint keeps events as JSON; a replayed call must still match."""

    class Mode(str, Enum):
        FAST = "fast"

    message = ChatMessage.user("hello")
    original = (("a", 1), Mode.FAST, Colour.RED, message, Ticket(id=2, title="x"))
    round_tripped = json.loads(
        json.dumps(
            [
                list(original[0]),
                "fast",
                "red",
                message.model_dump(mode="json"),
                {"id": 2, "title": "x", "tags": []},
            ]
        )
    )
    assert call_digest(lookup, original, {}) == call_digest(lookup, tuple(round_tripped), {})


def test_canonical_document_names_scheme_function_and_arguments() -> None:
    document = json.loads(canonical_call_json(lookup, (Ticket(id=1, title="t"),), {"limit": 2}))
    assert document == {
        "scheme": "flink-agents/durable-call/v1",
        "function": f"{__name__}:lookup",
        "args": [{"id": 1, "title": "t", "tags": []}],
        "kwargs": {"limit": 2},
    }


class Secretive:
    def __repr__(self) -> str:
        return "Secretive(api_key='sk-live-123')"


@pytest.mark.parametrize(
    ("args", "kwargs", "where", "type_name"),
    [
        (("ok", Secretive()), {}, "argument 1", "Secretive"),
        ((), {"payload": b"sk-live-123"}, "keyword argument 'payload'", "bytes"),
        (({"k": {1, 2}},), {}, "argument 0", "set"),
        (({1: "sk-live-123"},), {}, "argument 0", "dict key of type int"),
        (([1.0, float("nan")],), {}, "argument 0", "float"),
        ((float("inf"),), {}, "argument 0", "float"),
    ],
)
def test_values_without_canonical_json_raise_type_error_naming_the_position(
    args: tuple[Any, ...], kwargs: dict[str, Any], where: str, type_name: str
) -> None:
    with pytest.raises(TypeError) as raised:
        call_digest(lookup, args, kwargs)
    message = str(raised.value)
    assert where in message
    assert type_name in message
    assert "sk-live-123" not in message
    assert f"{__name__}:lookup" in message


def test_cyclic_arguments_raise_type_error() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(TypeError, match="argument 0"):
        call_digest(lookup, (cycle,), {})
