"""A fake OpenAI-compatible model for mem0, on `FakeProviderServer` (127.0.0.1).

``/chat/completions`` answers mem0's two prompts as a careful model would: the fact
extraction prompt (a system message, then ``Input:`` and the conversation) with the user's
text as the one fact; the memory update prompt with ``ADD`` for each new fact that the set
does not hold yet, ``NONE`` for one it holds. ``/embeddings`` gives each text a
bag-of-words vector (so texts that share words are close), in floats or in base64, as
asked.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import math
import re
import struct
from typing import Any

from tests.fakes.http_server import FakeProviderServer, RecordedRequest, ScriptedResponse

__all__ = ["DIMENSIONS", "memory_model_server", "vector_of"]

DIMENSIONS = 64


def vector_of(text: str) -> list[float]:
    """A unit bag-of-words vector of ``text`` (lower-cased words, hashed to DIMENSIONS)."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def _blocks(text: str) -> list[str]:
    return re.findall(r"```\s*(.*?)\s*```", text, flags=re.DOTALL)


def _chat_answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    if any(m["role"] == "system" for m in messages):  # fact extraction
        said = user.split("Input:", 1)[1].strip()
        facts = [line.split(": ", 1)[1] for line in said.splitlines() if ": " in line]
        return {"facts": facts}
    blocks = _blocks(user)  # the update prompt: [old memory,] new facts
    new_facts = ast.literal_eval(blocks[-1])
    old = ast.literal_eval(blocks[0]) if len(blocks) > 1 else []
    held = {entry["text"] for entry in old}
    return {
        "memory": [
            {"id": str(len(old) + i), "text": fact, "event": "NONE" if fact in held else "ADD"}
            for i, fact in enumerate(new_facts)
        ]
    }


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    data = []
    for index, text in enumerate(texts):
        vector = vector_of(text)
        embedding: Any = vector
        if body.get("encoding_format") == "base64":
            embedding = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "fake-embed"),
        "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
    }


def _respond(request: RecordedRequest) -> ScriptedResponse:
    body = request.body
    if request.path.endswith("/embeddings"):
        return ScriptedResponse(body=_embeddings(body))
    if request.path.endswith("/chat/completions"):
        content = json.dumps(_chat_answer(body["messages"]))
        return ScriptedResponse(
            body={
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "fake-chat"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )
    return ScriptedResponse(404, {"error": {"message": f"no route {request.path}"}})


def memory_model_server() -> FakeProviderServer:
    """A started-on-enter fake server answering mem0's chat and embedding requests."""
    return FakeProviderServer(_respond)
