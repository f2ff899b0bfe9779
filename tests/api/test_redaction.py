"""The process-wide redactor: credential shapes, registered secrets, payloads, walking."""

from __future__ import annotations

import base64
import io
import logging
import time
from collections.abc import Iterator

import pytest

from flink_agents.api.redaction import (
    RedactingFilter,
    clear_registered_secrets,
    mask_secret,
    redact,
    redact_value,
    register_env_secrets,
    register_secret,
)

# Not shaped like any known key: only registration can mask it.
PLAIN_KEY = "ak-live-Zq81LmPq04XyTt7Rw3"


@pytest.fixture(autouse=True)
def no_registered_secrets() -> Iterator[None]:
    clear_registered_secrets()
    yield
    clear_registered_secrets()


# ----------------------------------------------------------------------- credential shapes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Incorrect API key provided: sk-test-0123456789abcdef.",
            "Incorrect API key provided: sk-***cdef.",
        ),
        ("invalid x-api-key sk-ant-api03-SECRETKEY1234567890", "invalid x-api-key sk-ant-***7890"),
        ("short sk-abc1", "short sk-***"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcd", "Authorization: Bearer ***abcd"),
        ("authorization: bearer tok_12345678", "authorization: bearer ***"),
        (
            "GET https://api.example.com/v1/x?alt=json&key=AIzaSyA1234567890abcd&q=1",
            "GET https://api.example.com/v1/x?alt=json&key=***abcd&q=1",
        ),
        ("https://h/p?api_key=abc123&token=xyz789", "https://h/p?api_key=***&token=***"),
        ("apikey=v4lue123 secret=s3cr3t password=hunter2", "apikey=*** secret=*** password=***"),
        (
            "access_token = 'tok-1234' client_secret=\"cs-1\"",
            "access_token = '***' client_secret=\"***\"",
        ),
        ("Secretive(api_key='sk-live-123')", "Secretive(api_key='***')"),
        ('{"api_key": "abc123def456", "model": "m"}', '{"api_key": "***", "model": "m"}'),
        ('{"x-api-key":"v","password" : "p\\"q"}', '{"x-api-key":"***","password" : "***"}'),
        ("{'client_secret': 'cs-123', 'name': 'n'}", "{'client_secret': '***', 'name': 'n'}"),
        ('{"Authorization": "Basic dXNlcjpwYXNz"}', '{"Authorization": "***YXNz"}'),
        (
            '{"keys": "k1", "monkey": "m", "max_tokens": "5"}',
            '{"keys": "k1", "monkey": "m", "max_tokens": "5"}',
        ),
        ("postgres://bob:s3cr3t@db.local:5432/app", "postgres://bob:***@db.local:5432/app"),
    ],
)
def test_credential_shapes_are_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello",
        "max_tokens=100 monkey=banana tokens=5",
        "the key of the song; a token of thanks",
        '{"key": "user-42", "input_tokens": 3}',
        "metadata: {}",
        "task-runner ask-me",
        "https://example.com:8080/path",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_redacting_twice_changes_nothing() -> None:
    register_secret(PLAIN_KEY)
    text = (
        f"k={PLAIN_KEY} sk-ant-api03-SECRETKEY1234567890 Bearer abcdefgh12345678 "
        '{"api_key": "sk-test-0123456789abcdef"} data:image/png;base64,iVBORw0KGgo= ' + "QUJD" * 100
    )
    once = redact(text)
    assert redact(once) == once
    assert PLAIN_KEY not in once and "SECRETKEY" not in once and "QUJDQUJD" not in once


def test_mask_keeps_the_last_four_characters_of_long_secrets_only() -> None:
    assert mask_secret("0123456789abcdef") == "***cdef"
    assert mask_secret("0123456789abcde") == "***"


# ----------------------------------------------------------------------- registered secrets


def test_a_registered_secret_is_masked_whatever_its_shape() -> None:
    assert PLAIN_KEY in redact(f"bad key {PLAIN_KEY}")
    assert register_secret(PLAIN_KEY) is True
    assert register_secret(PLAIN_KEY) is False
    assert redact(f"bad key {PLAIN_KEY}!") == "bad key ***7Rw3!"


def test_short_and_missing_values_are_not_registered() -> None:
    assert register_secret(None) is False
    assert register_secret("test") is False
    assert register_secret("   short  ") is False
    assert redact("a test that is short") == "a test that is short"


def test_the_longest_registered_secret_wins() -> None:
    register_secret("abcdefgh")
    register_secret("abcdefgh-ijklmnop-qrst")
    assert redact("x abcdefgh-ijklmnop-qrst y abcdefgh z") == "x ***qrst y *** z"


def test_environment_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_PROVIDER_KEY", PLAIN_KEY)
    monkeypatch.delenv("MY_MISSING_KEY", raising=False)
    register_env_secrets(["MY_PROVIDER_KEY", "MY_MISSING_KEY"])
    assert PLAIN_KEY not in redact(f"echo {PLAIN_KEY}")


# ----------------------------------------------------------------------------- payloads


def test_data_urls_inside_text_keep_their_type_and_size() -> None:
    payload = base64.b64encode(b"\x89PNG" + b"\x00" * 296).decode()
    text = f'<img src="data:image/png;base64,{payload}"> and data:text/plain,hello%20world.'
    assert redact(text) == (
        '<img src="data:image/png;base64,<300 bytes redacted>"> and '
        "data:text/plain,<14 chars redacted>"  # the final dot is taken as data
    )


def test_long_base64_runs_are_redacted_short_ones_kept() -> None:
    run = base64.b64encode(bytes(range(256)) * 2).decode()  # 684 chars
    urlsafe = base64.urlsafe_b64encode(bytes(range(256))).decode()  # 344 chars
    short = "QUJD" * 49  # 196 chars
    text = f"raw {run} safe {urlsafe} short {short}"
    assert redact(text) == (
        f"raw <base64, {len(run)} chars redacted> safe <base64, {len(urlsafe)} chars "
        f"redacted> short {short}"
    )


def test_large_payloads_take_linear_time() -> None:
    big = base64.b64encode(b"\x01\x02\x03" * 3_500_000).decode()  # 14 MB
    prose = ("word " * 10 + "x" * 199 + " ") * 5_000  # 1.25 MB of near-miss runs
    # A guard against catastrophic backtracking, not a benchmark: linear scans take about
    # 0.1 s here, while a pattern that backtracks over the text is quadratic in these
    # sizes and takes hours. The bound only has to tell those apart, so it is generous,
    # and counts this thread's CPU time, which a busy machine does not stretch.
    started = time.thread_time()
    assert (
        redact(f"data:image/png;base64,{big}") == "data:image/png;base64,<10500000 bytes redacted>"
    )
    assert redact(big) == f"<base64, {len(big)} chars redacted>"
    assert redact(prose) == prose
    assert time.thread_time() - started < 20.0


# ---------------------------------------------------------------------------- JSON values


def test_redact_value_walks_every_string() -> None:
    register_secret(PLAIN_KEY)
    run = "QUJD" * 60
    value = {
        "text": f"key {PLAIN_KEY}",
        "nested": [{"deep": ("sk-test-0123456789abcdef", run)}, 3, None, True],
        "api_key": "any-value-at-all",
        "headers": {"Authorization": "Basic dXNlcjpwYXNz", "x-team": "search"},
        "key": "user-42",
        "max_tokens": 5,
    }
    assert redact_value(value) == {
        "text": f"key ***{PLAIN_KEY[-4:]}",
        "nested": [{"deep": ["sk-***cdef", "<base64, 240 chars redacted>"]}, 3, None, True],
        "api_key": "***-all",
        "headers": {"Authorization": "***YXNz", "x-team": "search"},
        "key": "user-42",
        "max_tokens": 5,
    }
    assert value["api_key"] == "any-value-at-all"  # the input is not changed


def test_redact_value_truncates_after_redacting_and_applies_the_mapping_hook() -> None:
    run = "QUJD" * 500
    value = {"a": "x" * 30, "b": f"{run}", "media": {"drop": "me"}}

    def hook(mapping: object) -> dict[str, str] | None:
        return {"dropped": "yes"} if isinstance(mapping, dict) and "drop" in mapping else None

    assert redact_value(value, max_string_length=10, mapping_hook=hook) == {
        "a": "xxxxxxxxxx...<20 more chars>",
        "b": "<base64, 2...<19 more chars>",
        "media": {"dropped": "yes"},
    }


# -------------------------------------------------------------------------------- logging


def test_redacting_filter_cleans_messages_and_tracebacks() -> None:
    register_secret(PLAIN_KEY)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("tests.redaction")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("calling with %s", f"api_key={PLAIN_KEY}")
        try:
            raise ValueError(f"server said {PLAIN_KEY}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    output = stream.getvalue()
    assert PLAIN_KEY not in output
    assert "calling with api_key=***" in output and "ValueError: server said ***" in output
