"""An offline stand-in for the quickstart's model (upstream uses qwen3:8b on Ollama).

`review_model(messages, tools)` reads the review out of the prompt's user message and
answers as the quickstart asks: when the review complains about shipping and the
``notify_shipping_manager`` tool is offered, it first calls the tool; then it answers with
the JSON ``{"id": ..., "score": 1-5, "reasons": [...]}``. Rules, not a model: the examples
run anywhere, with no API key and no network, and always give the same answers.
"""

from __future__ import annotations

import json
import re

from pydantic import Field

from flink_agents.api.chat_message import ChatMessage, MessageRole, ToolCallBlock
from flink_agents.api.chat_models.function_model import ChatFunction, FunctionChatModelConnection
from flink_agents.api.tools.tool import ToolMetadata

__all__ = ["OfflineReviewModelConnection", "analyze", "review_model"]

_INPUT = re.compile(r'"id":\s*(?P<id>[^,\n]+?),\s*"review":\s*(?P<review>.+?)\s*$', re.DOTALL)

_REASONS: dict[str, tuple[tuple[str, ...], ...]] = {
    # reason: every group must have a word in the review
    "poor quality": (("broke", "stopped working", "poor quality", "flimsy"),),
    "shipping damage": (
        ("box", "package", "shipping", "delivery", "arrived", "received"),
        ("crushed", "cracked", "damaged", "soaked", "wet", "dented"),
    ),
    "late delivery": (("delivery", "shipping", "arrived"), ("weeks", "late", "delayed")),
    "short cable": (("cable",), ("short",)),
}
_SHIPPING = {"shipping damage", "late delivery"}
_MILD = {"short cable"}
_PRAISE = ("great", "excellent", "love", "perfect")


def analyze(review: str) -> tuple[int, list[str]]:
    """The score (1-5) and the reasons for dissatisfaction the rules find in ``review``."""
    text = review.lower()
    reasons = [
        reason
        for reason, groups in _REASONS.items()
        if all(any(word in text for word in group) for group in groups)
    ]
    if not reasons:
        return (5 if any(word in text for word in _PRAISE) else 4), []
    if set(reasons) <= _MILD:
        return 3, reasons
    return (1 if "poor quality" in reasons or len(reasons) > 1 else 2), reasons


def review_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    """The model: a tool call for a shipping complaint (once), else the JSON answer."""
    user = next(m.text for m in reversed(messages) if m.role is MessageRole.USER)
    found = _INPUT.search(user)
    if found is None:
        return json.dumps({"error": "no review in the request"})
    product_id = found["id"].strip().strip('"')
    review = found["review"].strip().strip('"')
    score, reasons = analyze(review)
    notified = any(m.role is MessageRole.TOOL for m in messages)
    offered = any(t.name == "notify_shipping_manager" for t in tools)
    if offered and not notified and _SHIPPING & set(reasons):
        call = ToolCallBlock(
            id=f"call-{product_id}",
            name="notify_shipping_manager",
            input={"id": product_id, "review": review},
        )
        return ChatMessage.assistant(tool_calls=[call])
    return json.dumps({"id": product_id, "score": score, "reasons": reasons})


class OfflineReviewModelConnection(FunctionChatModelConnection):
    """`review_model` as a connection class, for the YAML example's file to name
    (``clazz: offline_review_model.OfflineReviewModelConnection``)."""

    function: ChatFunction | None = Field(default=review_model, exclude=True)
    request_timeout: float = 120
    """Upstream's Ollama connection option, kept so the YAML file is upstream's."""
