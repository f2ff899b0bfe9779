"""The offline model upstream's examples are run with here: one rule-based stand-in for
the Ollama models they use (qwen3 on an Ollama server), so they run with no model server,
no API key and no network, and always answer the same.

`offline_model(messages, tools)` answers each example's requests as its prompt asks:

* review analysis (workflow, ReAct, table agents): the review rules of
  examples/upstream_quickstart/offline_review_model.py (a shipping complaint first calls
  ``notify_shipping_manager`` when offered), then ``{"id", "score", "reasons"}``;
* product suggestions: ``{"suggestion_list": [...]}`` from the unsatisfied reasons;
* parallel chat: an aspect's sentiment ``{"aspect", "result"}``, then the
  ``{"summary": ...}`` of the judgments;
* skills: examples/upstream/offline_skills_model.py;
* RAG: the first document of the retrieved context (the closest to the question).

`offline_connection` is the connection descriptor the examples' ``ollama_server`` is
replaced with (`OfflineModelConnection` in the YAML example): the one change made to them.
The RAG example's Ollama embedding connection is `OfflineEmbeddingModelConnection`
(`offline_embedding_connection()`): the local WordLlama model, taking the Ollama setup's
model name and options and leaving them aside.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.function_model import ChatFunction, FunctionChatModelConnection
from flink_agents.api.embedding_models.embedding_model import EmbeddingResult
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.integrations.embedding_models.local.wordllama_embedding_model import (
    WordLlamaEmbeddingModelConnection,
)

_HERE = Path(__file__).resolve().parent
for _folder in (_HERE, _HERE.parent / "upstream_quickstart"):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

from offline_review_model import review_model  # noqa: E402
from offline_skills_model import skills_model  # noqa: E402

__all__ = [
    "OfflineEmbeddingModelConnection",
    "OfflineModelConnection",
    "offline_connection",
    "offline_embedding_connection",
    "offline_model",
]

_JUDGMENT = re.compile(r"(\w+):(positive|negative|not_mentioned)")
_ASPECT = re.compile(r'Judge the "(\w+)" dimension: (.*)', re.DOTALL)
_ASPECT_WORDS = {
    "taste": ("food", "taste", "dish", "flavor"),
    "service": ("service", "staff", "waiter"),
}
_RAG = re.compile(r"Context:\n(.*?)\n\nUser Question:", re.DOTALL)
_POSITIVE = ("great", "good", "delicious", "friendly", "fast", "excellent")
_NEGATIVE = ("slow", "bad", "rude", "cold", "bland", "terrible")


def _texts(messages: list[ChatMessage], role: MessageRole) -> list[str]:
    return [m.text for m in messages if m.role is role]


def _sentiment(text: str, aspect: str) -> str:
    for clause in re.split(r",|\bbut\b|\band\b|\.", text.lower()):
        if any(word in clause for word in _ASPECT_WORDS.get(aspect, (aspect,))):
            if any(word in clause for word in _NEGATIVE):
                return "negative"
            if any(word in clause for word in _POSITIVE):
                return "positive"
    return "not_mentioned"


def _suggestions(request: str) -> list[str]:
    found = re.search(r'"unsatisfied_reasons":\s*(\[.*?\])', request, re.DOTALL)
    quoted = re.findall(r"'([^']*)'|\"([^\"]*)\"", found.group(1)) if found else []
    reasons = list(dict.fromkeys(a or b for a, b in quoted if a or b))
    tips = [f"Address '{reason}'" for reason in reasons[:3]]
    defaults = [
        "Keep the quality that customers praise",
        "Ask buyers for more feedback",
        "Review the packaging",
    ]
    return (tips + defaults)[:3]


def offline_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    """The answer to one request of upstream's examples (see the module doc)."""
    system = "\n".join(_texts(messages, MessageRole.SYSTEM))
    everything = "\n".join(m.text for m in messages)
    if "<available_skills>" in system:
        return skills_model(messages, tools)
    if "satisfaction score" in everything:
        return review_model(messages, tools)
    if "actionable suggestions" in everything:
        return json.dumps({"suggestion_list": _suggestions(everything)})
    user = _texts(messages, MessageRole.USER)[-1] if _texts(messages, MessageRole.USER) else ""
    context = _RAG.search(user)
    if context is not None:
        first = context.group(1).split("\n\n", 1)[0]
        return re.sub(r"^1\. ", "", first).strip() or "The context has nothing on this."
    if "sentiment analysis assistant" in system:
        found = _ASPECT.search(user)
        if found is not None:
            aspect, text = found.group(1), found.group(2)
            return json.dumps({"aspect": aspect, "result": _sentiment(text, aspect)})
    if "summary assistant" in system:
        judged = dict(_JUDGMENT.findall(user.split("Judgments:", 1)[-1]))
        return json.dumps({"summary": ", ".join(f"{a}:{r}" for a, r in judged.items())})
    return f"the offline model has no rule for this request: {user[:200]!r}"


class OfflineModelConnection(FunctionChatModelConnection):
    """The offline model as a connection class (what a YAML file names by its path)."""

    function: ChatFunction | None = Field(default=offline_model, exclude=True)


def offline_connection() -> ResourceDescriptor:
    """The descriptor of the offline model's connection (for ``ollama_server``)."""
    return ResourceDescriptor(clazz=OfflineModelConnection)


class OfflineEmbeddingModelConnection(WordLlamaEmbeddingModelConnection):
    """The local WordLlama model in place of an Ollama embedding server: a call's Ollama
    options (``model``, ``truncate``, ``keep_alive``) are left aside."""

    def embed_with_usage(self, text: str | Sequence[str], **kwargs: Any) -> EmbeddingResult[Any]:
        """WordLlama's vectors of ``text`` (256 dimensions, normalized)."""
        for ollama_option in ("model", "truncate", "keep_alive"):
            kwargs.pop(ollama_option, None)
        return super().embed_with_usage(text, **kwargs)


def offline_embedding_connection() -> ResourceDescriptor:
    """The descriptor of the offline embedding connection (for an Ollama one)."""
    return ResourceDescriptor(clazz=OfflineEmbeddingModelConnection)
