"""Tool calls from a response, the same way in every adapter: their id and arguments.

A call without an id (some compatible servers) gets a generated one. Arguments are a
JSON object. Anything else (invalid JSON, an array, a number) keeps
the call: its input is ``{RAW_ARGUMENTS_KEY: <the arguments as sent>}``, which the
built-in tool action answers with an ``is_error`` result, and which goes back to the
provider verbatim on later turns.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from flink_agents.api.tool_response import RAW_ARGUMENTS_KEY, raw_arguments

__all__ = ["arguments_json", "parse_tool_arguments", "tool_call_id"]


def tool_call_id(value: object) -> str:
    """The provider's call id, or ``call_`` + a uuid hex when it is absent or empty."""
    if isinstance(value, str) and value:
        return value
    return "call_" + uuid.uuid4().hex


def parse_tool_arguments(arguments: Any) -> dict[str, Any]:
    """The input of a tool call from its wire arguments (a JSON string or an object).

    ``None`` and a blank string give ``{}``; a JSON object gives itself; anything else
    gives ``{RAW_ARGUMENTS_KEY: raw}`` (``raw`` is the string, or the value as JSON).
    """
    if arguments is None:
        return {}
    if isinstance(arguments, Mapping):  # Anthropic, and some compatible servers
        return dict(arguments)
    if not isinstance(arguments, str):
        return {RAW_ARGUMENTS_KEY: json.dumps(arguments, ensure_ascii=False)}
    if not arguments.strip():
        return {}
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: arguments}
    if isinstance(parsed, dict):
        return parsed
    return {RAW_ARGUMENTS_KEY: arguments}


def arguments_json(arguments: Mapping[str, Any]) -> str:
    """The JSON-string form of a tool call's input: raw arguments go back verbatim."""
    raw = raw_arguments(arguments)
    if raw is not None:
        return raw
    return json.dumps(arguments, ensure_ascii=False)
