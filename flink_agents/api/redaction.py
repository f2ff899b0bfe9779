"""Redaction: secrets and media payloads kept out of logs, errors and events.

One process-wide redactor. `redact` cleans one string, `redact_value` every string
of a JSON-like value (dicts, lists, nested), `register_secret` adds a value that must
never be shown (an API key given to a connection, or read from the environment:
`register_provider_env_secrets`, which every runner calls when it starts).

What `redact` replaces, in this order:

* ``data:<mime>;base64,<payload>`` -> ``data:<mime>;base64,<N bytes redacted>`` (and a
  non-base64 ``data:<mime>,<payload>`` -> ``data:<mime>,<N chars redacted>``);
* runs of at least `BASE64_RUN_MIN` base64 characters (standard or URL-safe alphabet)
  -> ``<base64, N chars redacted>``;
* registered secrets -> `mask_secret` (``***`` plus the last 4 characters of a long one);
* credential shapes, registered or not: ``sk-...`` and ``sk-ant-...`` keys,
  ``Bearer <token>``, the password of a URL (``https://user:<password>@host``), and the
  value after ``key=``, ``api_key=``, ``apikey=``, ``token=``, ``password=``,
  ``secret=`` (in URLs, query strings, ``k=v`` text, quoted or not; also as a suffix,
  as in ``access_token=`` or ``client_secret=``) and of a JSON or Python-repr entry
  ``"api_key": "..."`` / ``'password': '...'``.

`redact_value` also masks a string stored under a dict key that names a credential
(``api_key``, ``x-api-key``, ``access_token``, ``password``, ``client_secret``,
``authorization``...). Masks are left alone by a second pass, so redacting twice gives
the same text.

This module is the API layer's: the runtime and the adapters import it, never the
other way round.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "BASE64_RUN_MIN",
    "MASK",
    "MIN_SECRET_LENGTH",
    "PROVIDER_SECRET_ENV_VARS",
    "RedactingFilter",
    "clear_registered_secrets",
    "mask_secret",
    "redact",
    "redact_value",
    "register_env_secrets",
    "register_provider_env_secrets",
    "register_secret",
]

MASK = "***"
"""What a secret is replaced by (long secrets keep their last 4 characters after it)."""

MIN_SECRET_LENGTH = 8
"""Shorter values are not registered: masking every ``test`` or ``none`` in every text
would hide more than it protects."""

BASE64_RUN_MIN = 200
"""A run of base64 characters at least this long is redacted as a payload."""

_SHOW_TAIL_FROM = 16
"""Secrets at least this long keep their last 4 characters, enough to tell keys apart."""

_SHORTEST_SHAPE = 5
"""No credential shape, registered secret or ``data:`` URL fits in fewer characters."""

# ----------------------------------------------------------------------------- patterns

_DATA_URL = re.compile(
    r"(?<![A-Za-z0-9])data:"
    r"(?P<head>[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+(?:;[A-Za-z0-9.+-]+=[^;,\s\"'<>]*)*)"
    r"(?P<b64>;base64)?,"
    r"(?P<payload>[^\s\"'<>()\[\]{}\\]+)",
    re.IGNORECASE,
)
# The lookbehind makes a match start only where a run starts: linear time.
_BASE64_RUN = re.compile(
    r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{%d,}={0,2}" % BASE64_RUN_MIN  # noqa: UP031
)

_SENSITIVE = r"api[_-]?key|apikey|private[_-]?key|access[_-]?key|token|password|passwd|secret"
"""Names whose value is a credential (also as a suffix: ``access_token``, ``x-api-key``)."""

_KEY_VALUE = (
    # key=value, api_key = 'value', ?token=value&... (a bare ``key=`` counts here too)
    r"(?<![A-Za-z0-9])(?P<kv_name>" + _SENSITIVE + r"|key)(?P<kv_sep>\s*=\s*)"
    r"(?:(?P<kv_quote>[\"'])(?P<kv_quoted>[^\"'\n]*)(?P=kv_quote)"
    r"|(?P<kv_value>[^\s&#;,\"'<>=)\]}][^\s&#;,\"'<>)\]}]*))"
)
_JSON_ENTRY = (
    # "name": "value" and 'name': 'value'; masked when the name is a credential's
    r"(?P<js_quote>[\"'])(?P<js_name>[^\"'\\\s]{1,64})(?P=js_quote)(?P<js_sep>\s*:\s*)"
    r"(?P<js_vquote>[\"'])(?P<js_value>(?:\\.|(?!(?P=js_vquote))[^\\\n])*)(?P=js_vquote)"
)
_BEARER = r"(?<![A-Za-z0-9])(?P<br_scheme>[Bb]earer\s+)(?P<br_value>[A-Za-z0-9._~+/=-]{8,})"
_URL_PASSWORD = (
    r"(?<![A-Za-z0-9+.-])(?P<up_head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:)(?P<up_value>[^@\s/]+)@"
)
# The lookahead keeps a masked key (``sk-ant-***abcd``) from matching again.
_SK_KEY = (
    r"(?<![A-Za-z0-9])(?P<sk_prefix>sk-(?:ant-)?)(?P<sk_value>[A-Za-z0-9_-]{3,})"
    r"(?![A-Za-z0-9_*-])"
)

# One pattern per shape, each run only when the text holds what the shape needs.
_KEY_VALUE_RE = re.compile(_KEY_VALUE, re.IGNORECASE)
_JSON_ENTRY_RE = re.compile(_JSON_ENTRY, re.IGNORECASE)
_BEARER_RE = re.compile(_BEARER, re.IGNORECASE)
_URL_PASSWORD_RE = re.compile(_URL_PASSWORD)
_SK_KEY_RE = re.compile(_SK_KEY, re.IGNORECASE)

_SENSITIVE_KEY = re.compile(
    r"(?:^|[_-])(?:" + _SENSITIVE + r"|authorization|credentials?)$", re.IGNORECASE
)
"""A dict key or JSON entry name whose value is a credential (a bare ``key`` is not)."""
_NAME_HINTS = ("key", "token", "passw", "secret", "authorization", "credential")
"""Words one of which a lowered text holds when a named credential can be in it."""

# ----------------------------------------------------------------------------- secrets

_lock = threading.Lock()
_secrets: frozenset[str] = frozenset()
_secret_pattern: re.Pattern[str] | None = None


def register_secret(value: str | None) -> bool:
    """Mask ``value`` wherever `redact` sees it from now on, in this process.

    Values shorter than `MIN_SECRET_LENGTH` (after stripping) and non-strings are
    ignored. Returns True when the value was newly registered.
    """
    global _secrets, _secret_pattern
    if not isinstance(value, str):
        return False
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH or value in _secrets:
        return False
    with _lock:
        if value in _secrets:
            return False
        secrets = _secrets | {value}
        ordered = sorted(secrets, key=len, reverse=True)  # the longest wins an overlap
        _secret_pattern = re.compile("|".join(re.escape(s) for s in ordered))
        _secrets = secrets
    return True


def register_env_secrets(names: Iterable[str]) -> None:
    """Register the values of these environment variables (those that are set)."""
    for name in names:
        register_secret(os.environ.get(name))


PROVIDER_SECRET_ENV_VARS: tuple[str, ...] = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_ADMIN_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "OLLAMA_API_KEY",
    "DASHSCOPE_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)
"""Environment variables the provider SDKs (``anthropic``, ``openai``, ``ollama``,
``dashscope``, ``google-genai``, ``boto3``) read credentials from: every secret among the
adapters' ``sdk_environment`` (a test says so)."""


def register_provider_env_secrets() -> None:
    """Register the values of `PROVIDER_SECRET_ENV_VARS` that are set. Every runner does
    when it starts (the local runner; the Flink operator's ``open``, in the worker), so a
    key in the environment is masked even when no provider connection is ever built (a
    custom model connection, a tool that reads the variable)."""
    register_env_secrets(PROVIDER_SECRET_ENV_VARS)


def clear_registered_secrets() -> None:
    """Forget every registered secret (for tests)."""
    global _secrets, _secret_pattern
    with _lock:
        _secrets = frozenset()
        _secret_pattern = None


def mask_secret(value: str) -> str:
    """``***`` plus the last 4 characters when ``value`` is long, else ``***``."""
    return MASK + value[-4:] if len(value) >= _SHOW_TAIL_FROM else MASK


# --------------------------------------------------------------------------- redaction


def redact(text: str) -> str:
    """``text`` with media payloads, registered secrets and credential shapes masked."""
    if len(text) < _SHORTEST_SHAPE:
        return text
    # Substring tests on the lowered text decide which patterns can match: a scan by the
    # regex engine costs far more, and most texts hold none of them.
    lowered = text.lower()
    if len(text) >= BASE64_RUN_MIN or "data:" in lowered:
        text = _redact_payloads(text, "data:" in lowered)
        lowered = text.lower()
    pattern = _secret_pattern
    if pattern is not None:
        text = pattern.sub(_mask_match, text)
    return _redact_shapes(text, lowered)


def _redact_shapes(text: str, lowered: str) -> str:
    """``text`` with credential shapes masked (``lowered``: the text in lower case)."""
    if any(word in lowered for word in _NAME_HINTS):
        if "=" in text:
            text = _KEY_VALUE_RE.sub(_mask_key_value, text)
        if ":" in text and ('"' in text or "'" in text):
            text = _JSON_ENTRY_RE.sub(_mask_json_entry, text)
    if "@" in text and "://" in text:
        text = _URL_PASSWORD_RE.sub(_mask_url_password, text)
    if "bearer" in lowered:
        text = _BEARER_RE.sub(_mask_bearer, text)
    if "sk-" in lowered:
        text = _SK_KEY_RE.sub(_mask_sk_key, text)
    return text


def redact_value(
    value: Any,
    *,
    max_string_length: int | None = None,
    mapping_hook: Callable[[Mapping[str, Any]], Mapping[str, Any] | None] | None = None,
) -> Any:
    """A copy of a JSON-like value with every string redacted (`redact`).

    Dict values under a credential-naming key are masked whole. Lists and tuples
    become lists; other values are returned as they are. ``max_string_length``
    truncates long strings after redaction; ``mapping_hook`` may replace a mapping
    before its entries are walked (return None to keep it).
    """
    if isinstance(value, str):
        text = redact(value)
        if max_string_length is not None and len(text) > max_string_length:
            cut = len(text) - max_string_length
            text = f"{text[:max_string_length]}...<{cut} more chars>"
        return text
    if isinstance(value, Mapping):
        if mapping_hook is not None:
            replaced = mapping_hook(value)
            if replaced is not None:
                value = replaced
        result: dict[Any, Any] = {}
        for key, item in value.items():
            if (
                isinstance(item, str)
                and item
                and isinstance(key, str)
                and _SENSITIVE_KEY.search(key)
                and not item.startswith(MASK)
            ):
                result[key] = mask_secret(item)
            else:
                result[key] = redact_value(
                    item, max_string_length=max_string_length, mapping_hook=mapping_hook
                )
        return result
    if isinstance(value, (list, tuple)):
        return [
            redact_value(item, max_string_length=max_string_length, mapping_hook=mapping_hook)
            for item in value
        ]
    return value


def _redact_payloads(text: str, has_data_url: bool) -> str:
    if has_data_url:
        text = _DATA_URL.sub(_data_url_replacement, text)
    if len(text) >= BASE64_RUN_MIN:
        text = _BASE64_RUN.sub(_base64_replacement, text)
    return text


def _data_url_replacement(match: re.Match[str]) -> str:
    payload = match["payload"]
    if match["b64"]:
        stripped = payload.rstrip("=")
        size = (len(stripped) * 3) // 4
        return f"data:{match['head']};base64,<{size} bytes redacted>"
    return f"data:{match['head']},<{len(payload)} chars redacted>"


def _base64_replacement(match: re.Match[str]) -> str:
    return f"<base64, {len(match.group())} chars redacted>"


def _mask_match(match: re.Match[str]) -> str:
    return mask_secret(match.group())


def _mask_key_value(match: re.Match[str]) -> str:
    head = match["kv_name"] + match["kv_sep"]
    quote = match["kv_quote"]
    if quote is not None:
        return f"{head}{quote}{_masked(match['kv_quoted'])}{quote}"
    return head + _masked(match["kv_value"])


def _mask_json_entry(match: re.Match[str]) -> str:
    if not _SENSITIVE_KEY.search(match["js_name"]):
        return match.group()
    quote, value_quote = match["js_quote"], match["js_vquote"]
    name = f"{quote}{match['js_name']}{quote}{match['js_sep']}"
    return f"{name}{value_quote}{_masked(match['js_value'])}{value_quote}"


def _mask_bearer(match: re.Match[str]) -> str:
    return match["br_scheme"] + _masked(match["br_value"])


def _mask_url_password(match: re.Match[str]) -> str:
    return f"{match['up_head']}{_masked(match['up_value'])}@"


def _mask_sk_key(match: re.Match[str]) -> str:
    return match["sk_prefix"] + _masked(match["sk_value"])


def _masked(value: str) -> str:
    """The mask for a matched credential; an empty or already masked one stays."""
    if not value or value.startswith(MASK) or value.startswith("<"):
        return value
    return mask_secret(value)


# ------------------------------------------------------------------------------ logging


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message and traceback text.

    Attach it to a handler (``handler.addFilter(RedactingFilter())``) to clean every
    record the handler writes, or to a logger for the records logged through it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
