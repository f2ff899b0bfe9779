"""Human approval of tool calls: what goes out (`ApprovalRequest`) and what comes back
(`ToolApproval`).

A tool declared with ``requires_approval=True`` (``@tool(requires_approval=True)``,
``Tool.from_callable(fn, requires_approval=True)``, or an MCP tool named in
``tool-call.approval-required-tools``) is not called when the model asks for it: the run
parks in keyed state and one `ApprovalRequest` per such call goes out (on Flink through
``to_approval_request_datastream()``, locally through ``to_approval_request_list()`` and
``LocalRunner.approval_requests()``). A `ToolApproval` with the request's ``call_id``,
sent as an input value of the same key, decides the call; once every call of the model
turn is decided the run goes on.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["REQUIRES_APPROVAL_MARK", "ApprovalRequest", "ToolApproval"]

REQUIRES_APPROVAL_MARK = "_requires_approval"
"""Attribute ``@tool(requires_approval=True)`` sets on a function."""


class ApprovalRequest(BaseModel):
    """A tool call that waits for a person's decision."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: Any
    """The key of the run that waits (a `ToolApproval` for it is an input of this key)."""
    request_id: str
    """Id of the tool request the call belongs to: the calls of one model turn share it
    and are asked for together."""
    call_id: str
    """The model's id of the call: what a `ToolApproval` names."""
    tool: str
    """The tool's name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The model's arguments, redacted as the event log redacts (secrets, base64, media
    URLs masked)."""
    requested_at: datetime
    """When the run parked (UTC)."""


class ToolApproval(BaseModel):
    """A person's decision on one `ApprovalRequest`, sent as an input of the same key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_id: str
    """The `ApprovalRequest.call_id` decided."""
    approved: bool
    """True: the tool runs (once); False: it does not, and the model reads why."""
    reason: str | None = None
    """Why, for the model (and the audit trail)."""
    key: Any = None
    """The key of the run it decides, optional: on Flink a key selector over a stream of
    questions and decisions can read it (``ApprovalRequest.key`` copied back). When given,
    a decision arriving under another key decides nothing (a failure record)."""
