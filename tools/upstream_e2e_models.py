"""The model server `tools/upstream_tests.py --e2e` runs upstream's end-to-end jobs with.

Upstream's provider tests (``agent_skills_test.py``, ``chat_model_multi_provider_remote_test.py``)
skip without a key and otherwise call the provider named by their environment. Here they
run unchanged: `e2e_model_server` starts `examples/mock_model_server.py` on 127.0.0.1 and
gives the environment that points every provider those tests use at it (`model_environment`):
fake keys, and the base URL each connection's SDK reads (``OPENAI_BASE_URL`` for the
openai SDK, ``AZURE_OPENAI_ENDPOINT`` for its Azure client, ``DASHSCOPE_BASE_URL`` for
dashscope, the tests' own ``ACTION_BASE_URL``). The answers are `e2e_reply`: a request
that lists skills is answered by `examples/upstream/offline_skills_model.py` (load the
skill, run its command, answer with the output), any other by the mock server's own model
(call the first tool with the numbers of the question, then quote its result).

Upstream's ``bash`` tool runs the commands its setup allows; here it runs nothing unless
``skills.commands.enabled`` is on (off by default, docs/skills.md). The runner is the
operator of these jobs, so it turns it on where they run: a Flink configuration folder
(``FLINK_CONF_DIR``) with ``agent: {skills.commands.enabled: true}`` over Flink's packaged
settings (or over those of the ``FLINK_CONF_DIR`` it was given).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from examples.mock_model_server import MockModelServer, reply_to
from examples.upstream.offline_skills_model import skills_model
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.content_blocks import TextBlock, ToolResultBlock
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.runtime.flink.config_file import merged_conf_dir
from tools.fake_ollama import memory_answer

__all__ = [
    "E2E_AGENT_OPTIONS",
    "e2e_model_server",
    "e2e_reply",
    "messages_of",
    "model_environment",
]

E2E_AGENT_OPTIONS: dict[str, Any] = {"skills.commands.enabled": True}
"""The agent options the jobs run with (upstream's skills tests run their commands)."""

_SKILLS_LISTING = "<available_skills>"
"""What the system message that lists a setup's skills holds."""


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def messages_of(wire: list[dict[str, Any]]) -> list[ChatMessage]:
    """The conversation of a Chat Completions request (text, tool calls, tool results)."""
    messages: list[ChatMessage] = []
    for message in wire:
        role = MessageRole(message.get("role", "user"))
        text = _text(message.get("content"))
        if role is MessageRole.TOOL:
            result = ToolResultBlock(
                call_id=message.get("tool_call_id") or "", content=[TextBlock(text=text)]
            )
            messages.append(ChatMessage.tool_result(result))
            continue
        calls = message.get("tool_calls") or []  # the wire's form is upstream's dicts
        messages.append(ChatMessage(role=role, content=text, tool_calls=calls))
    return messages


def _wire_answer(answer: ChatMessage | str) -> dict[str, Any]:
    if isinstance(answer, str):
        return {"role": "assistant", "content": answer}
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.input)},
        }
        for call in answer.tool_calls
    ]
    return {"role": "assistant", "content": answer.text or None, "tool_calls": calls}


def e2e_reply(request: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions response to ``request``: mem0's answers (the long-term memory
    job's fact extraction and memory update, `tools.fake_ollama.memory_answer`), the
    skills model's when its system messages list skills, else the mock server's
    (`reply_to`)."""
    wire = request.get("messages") or []
    system = " ".join(_text(m.get("content")) for m in wire if m.get("role") == "system")
    response = reply_to(request)
    users = [_text(m.get("content")) for m in wire if m.get("role") == "user"]
    memory = memory_answer(
        [{**m, "content": _text(m.get("content"))} for m in wire], users[-1] if users else ""
    )
    if memory is not None:
        message = {"role": "assistant", "content": json.dumps(memory)}
        response["choices"] = [{"index": 0, "message": message, "finish_reason": "stop"}]
        return response
    if _SKILLS_LISTING not in system:
        return response
    tools = [
        ToolMetadata(name=t["function"]["name"], description=t["function"].get("description", ""))
        for t in request.get("tools") or []
    ]
    message = _wire_answer(skills_model(messages_of(wire), tools))
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    response["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    return response


def model_environment(base_url: str, conf_dir: Path) -> dict[str, str]:
    """The environment that points upstream's provider tests at the server on
    ``base_url`` (its OpenAI root, ending in ``/v1``), with the Flink configuration
    folder ``conf_dir``."""
    root = base_url.removesuffix("/v1")
    return {
        "ACTION_API_KEY": "sk-e2e-fake",  # agent_skills_test.py's OpenAI-compatible server
        "ACTION_BASE_URL": base_url,
        "OPENAI_API_KEY": "sk-e2e-fake",
        "OPENAI_BASE_URL": base_url,
        "AZURE_OPENAI_API_KEY": "azure-e2e-fake",
        "AZURE_OPENAI_ENDPOINT": root,  # {root}/openai/deployments/<model>/chat/completions
        "DASHSCOPE_API_KEY": "sk-e2e-fake",
        "DASHSCOPE_BASE_URL": f"{root}/api/v1",  # .../services/aigc/text-generation/generation
        "FLINK_CONF_DIR": str(conf_dir),
    }


def _conf_dir(folder: Path, environ: Mapping[str, str]) -> Path:
    """Flink's settings (``FLINK_CONF_DIR``'s, else the packaged ones) with
    `E2E_AGENT_OPTIONS` over them, written under ``folder``."""
    options = folder / "agent-options"
    options.mkdir(parents=True, exist_ok=True)
    lines = [f"  {key}: {json.dumps(value)}" for key, value in E2E_AGENT_OPTIONS.items()]
    (options / "config.yaml").write_text("agent:\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return merged_conf_dir(options, defaults=environ.get("FLINK_CONF_DIR") or None, parent=folder)


@contextmanager
def e2e_model_server(
    folder: Path, environ: Mapping[str, str] | None = None
) -> Iterator[dict[str, str]]:
    """Start the model server (stopped on exit) and give `model_environment` for it, with
    a Flink configuration folder written under ``folder``."""
    conf_dir = _conf_dir(folder, os.environ if environ is None else environ)
    with MockModelServer(reply=e2e_reply) as server:
        yield model_environment(server.base_url, conf_dir)
