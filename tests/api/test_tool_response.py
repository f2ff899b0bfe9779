"""`ToolResponse`: failures are redacted; arguments that are not a JSON object."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from flink_agents.api.content_blocks import TextBlock, ToolResultBlock
from flink_agents.api.redaction import clear_registered_secrets, register_secret
from flink_agents.api.tool_response import RAW_ARGUMENTS_KEY, ToolResponse, raw_arguments

PLAIN_KEY = "db-pass-Zq81LmPq04XyTt7Rw3"


@pytest.fixture(autouse=True)
def no_registered_secrets() -> Iterator[None]:
    clear_registered_secrets()
    yield
    clear_registered_secrets()


def test_a_failure_never_shows_a_secret_to_the_model() -> None:
    register_secret(PLAIN_KEY)
    error = (
        "tool 'fetch' failed: ValueError: 401 for https://api.x.com/v1?api_key=abc123456 "
        f"with sk-abc0123456789abcdef and {PLAIN_KEY}"
    )
    response = ToolResponse.failure("c1", "fetch", error)
    expected = (
        "tool 'fetch' failed: ValueError: 401 for https://api.x.com/v1?api_key=*** "
        "with sk-***cdef and ***7Rw3"
    )
    assert response.error == expected
    block = response.to_result_block()
    assert block.is_error is True
    assert block.content == [TextBlock(text=expected)]


def test_an_error_given_directly_or_parsed_is_redacted_too() -> None:
    direct = ToolResponse(call_id="c", name="t", success=False, error="token=s3cr3tvalue")
    assert direct.error == "token=***"
    parsed = ToolResponse.model_validate_json(
        '{"call_id": "c", "name": "t", "success": false, "error": "Bearer abcdefgh12345678"}'
    )
    assert parsed.error == "Bearer ***5678"


def test_a_successful_response_has_no_error() -> None:
    assert ToolResponse.from_output("c", "t", "ok").error is None


def test_raw_arguments() -> None:
    assert raw_arguments({RAW_ARGUMENTS_KEY: '{"a": '}) == '{"a": '
    assert raw_arguments({RAW_ARGUMENTS_KEY: '{"a": ', "b": 1}) is None
    assert raw_arguments({RAW_ARGUMENTS_KEY: 3}) is None
    assert raw_arguments({"a": 1}) is None
    assert raw_arguments({}) is None


def test_invalid_arguments_is_a_failure_quoting_what_the_model_sent() -> None:
    response = ToolResponse.invalid_arguments("c1", "weather", '{"city": "Par')
    assert response.success is False
    assert response.error == (
        'tool \'weather\' was not run: its arguments are not a JSON object: {"city": "Par'
    )
    long = ToolResponse.invalid_arguments("c1", "weather", "[" + "1," * 400)
    assert long.error is not None and long.error.endswith("...<truncated>")
    assert len(long.error) < 600


def test_a_response_from_output_is_what_validation_would_build() -> None:
    started = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
    fast = ToolResponse.from_output("c1", "lookup", "open", started_at=started, duration_s=0.25)
    validated = ToolResponse(
        call_id="c1",
        name="lookup",
        content=[TextBlock(text="open")],
        started_at=started,
        duration_s=0.25,
    )
    assert fast == validated
    assert fast.model_fields_set == validated.model_fields_set
    assert fast.model_dump_json() == validated.model_dump_json()
    block = fast.to_result_block()
    assert block == ToolResultBlock(call_id="c1", content=[TextBlock(text="open")])
    assert block.model_fields_set == {"call_id", "content"}


def test_values_of_other_types_are_still_validated() -> None:
    # A duration given as an int and a time as text come out as validation makes them.
    response = ToolResponse.from_output(
        "c1",
        "lookup",
        None,
        started_at="2026-12-01T12:00:00Z",
        duration_s=1,  # type: ignore[arg-type]
    )
    assert response.duration_s == 1.0 and isinstance(response.duration_s, float)
    assert response.started_at == datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
    with pytest.raises(ValidationError):
        ToolResponse.from_output(1, "lookup", "x")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ToolResponse.from_output("", "lookup", "x").to_result_block()
