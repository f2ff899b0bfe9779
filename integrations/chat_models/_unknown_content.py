"""Response content an adapter does not convert: kept, redacted, and reported once.

A content block (Anthropic), output item or message part (OpenAI Responses), or
content part or tool call (Chat Completions) of a type the adapter does not know is
not dropped: its JSON, with payloads and secrets redacted, goes into
``ChatResult.metadata["unknown_blocks"]``, and a WARNING is logged the first time
(per process) a provider sends that type. When such content was all the response
held, the warning says the answer's text is empty because of it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from flink_agents.api.chat_result import ChatResult
from flink_agents.api.redaction import redact, redact_value

__all__ = ["UNKNOWN_BLOCKS_KEY", "keep_unknown_blocks"]

UNKNOWN_BLOCKS_KEY = "unknown_blocks"
"""The `ChatResult.metadata` key listing the unknown content, in response order."""

logger = logging.getLogger("flink_agents.integrations.chat_models")

_warned: set[tuple[str, str, bool]] = set()
_warned_lock = threading.Lock()


def keep_unknown_blocks(
    provider: str, result: ChatResult, unknown: Sequence[Mapping[str, Any]]
) -> ChatResult:
    """``result`` with ``unknown`` (raw JSON objects) kept in its metadata, and warned about.

    One warning per process for each (provider, type), and one more for a type that
    was a response's only content (the answer then has no text and no tool call).
    """
    if not unknown:
        return result
    result.metadata[UNKNOWN_BLOCKS_KEY] = [redact_value(dict(item)) for item in unknown]
    message = result.message
    only_content = not message.text and not message.tool_calls
    for kind in dict.fromkeys(_type_name(item) for item in unknown):
        _warn_once(provider, kind, only_content)
    return result


def _type_name(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    return kind if isinstance(kind, str) else "<no type>"


def _warn_once(provider: str, kind: str, only_content: bool) -> None:
    key = (provider, kind, only_content)
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    text = (
        f"{provider}: the response held content of type {kind!r} that this adapter does not "
        f"convert; it is kept, redacted, in ChatResult.metadata[{UNKNOWN_BLOCKS_KEY!r}]"
    )
    if only_content:
        text += " (it was the response's only content, so the answer's text is empty)"
    logger.warning("%s. Logged once per process for this type.", redact(text))
