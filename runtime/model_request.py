"""A fingerprint of what one model call sends, so its durable record answers only that.

The built-in chat action makes each model call through a durable call whose arguments are
the chat model setup's name, the request id, the turn and the attempt, plus this
fingerprint: a SHA-256 hex digest of the canonical JSON of everything the call sends to the
provider. Two runs at the same key and input sequence over one store (a second local runner,
a job run again, reordered input) that ask different questions therefore have different
digests: the recorded answer of one is never returned to the other (the code-path-changed
rule drops it and the call runs live).

Covered:

- ``model``: the chat model setup's name, and ``connection``: its connection's name;
- ``messages``: each message's ``model_dump(mode="json")`` (role and content blocks, media as
  their JSON form) without ``metadata``, which is never sent to a provider, and without
  fields that are None (a field added later with a None default leaves old digests alone);
- ``tools``: each tool's metadata (name, description, argument schema), in order;
- ``params``: the setup's model parameters (``model_kwargs``: the provider's model name and
  every extra option). A parameter value with no JSON form (an arbitrary object) counts by
  its type's ``module:qualname`` only.

Only the compact hex digest enters the durable call's arguments (and so its digest), never
the messages themselves: nothing of the request is written to the store or to logs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from flink_agents.api._class_path import class_path
from flink_agents.api._values import canonical_value
from flink_agents.api.message import ChatMessage
from flink_agents.api.tools.tool import ToolMetadata

__all__ = ["FINGERPRINT_SCHEME", "model_request_fingerprint"]

FINGERPRINT_SCHEME = "flink-agents/model-request/v2"
"""Part of every fingerprint, so a future change of what it covers reads as a new request."""


def _type_marker(value: Any) -> dict[str, str]:
    """What a parameter value with no JSON form counts as: its type's name."""
    return {"$type": class_path(type(value))}


def model_request_fingerprint(
    *,
    model: str,
    connection: str,
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolMetadata],
    params: Mapping[str, Any],
) -> str:
    """SHA-256 hex of the canonical JSON of one model call's request (see the module doc)."""
    document = {
        "scheme": FINGERPRINT_SCHEME,
        "model": model,
        "connection": connection,
        # Already plain JSON (str keys, finite numbers): their canonical form is themselves,
        # so only the parameters, which may hold anything, take the codec's walk.
        "messages": [
            m.model_dump(mode="json", exclude={"metadata"}, exclude_none=True) for m in messages
        ],
        "tools": [t.model_dump(mode="json", exclude_none=True) for t in tools],
        "params": canonical_value(dict(params), unknown=_type_marker),
    }
    # `flink_agents.api._values.canonical_json`'s text form: sorted keys, compact, ASCII.
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()
