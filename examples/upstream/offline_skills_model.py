"""An offline stand-in for a model that uses skills (upstream's skills examples and tests
send to qwen on Ollama or DashScope).

`skills_model(messages, tools)` does what those examples ask of the model, by rules: it
reads the skills the system message lists, loads the one the question needs with
``load_skill``, runs what the skill's instructions say with ``bash`` (``echo "<expr>" |
bc`` for the math-calculator skill, the skill's script in its folder for the others),
and answers with what the command printed (as ``{"result": n}`` when asked for JSON).
Every step is read from what the runtime gave it (the listing, the loaded skill, the
command's output), so a broken step shows in the answer. No network, no API key.
"""

from __future__ import annotations

import json
import re

from flink_agents.api.chat_message import ChatMessage, MessageRole, ToolCallBlock
from flink_agents.api.tools.tool import ToolMetadata

__all__ = ["expression_of", "skills_model"]

_LISTED = re.compile(r"<name>([^<]+)</name>")
_FOLDER = re.compile(r"The skill's folder: (.+)")
_BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
_EXPRESSION = re.compile(r"[\d(][\d\s+\-*/^%().]*")


def expression_of(question: str) -> str:
    """The arithmetic expression in ``question`` (``divided by`` read as ``/``)."""
    text = question.replace("divided by", "/").replace("times", "*")
    found = [m.group(0).strip() for m in _EXPRESSION.finditer(text)]
    best = max(found, key=len, default="")
    return best.rstrip(".")


def _call(name: str, arguments: dict[str, str], turn: int) -> ChatMessage:
    call = ToolCallBlock(id=f"call-{name}-{turn}", name=name, input=arguments)
    return ChatMessage.assistant(tool_calls=[call])


def skills_model(messages: list[ChatMessage], tools: list[ToolMetadata]) -> ChatMessage | str:
    """The model: load a listed skill, run its command, answer with the command's output."""
    offered = {t.name for t in tools}
    question = next(m.text for m in reversed(messages) if m.role is MessageRole.USER)
    listed = [n for m in messages if m.role is MessageRole.SYSTEM for n in _LISTED.findall(m.text)]
    results = [m.content for m in messages if m.role is MessageRole.TOOL]
    wants_joke = "joke" in question.lower()
    skill = next((n for n in listed if ("joke" in n) == wants_joke), None)
    if "load_skill" not in offered or skill is None:
        return f"no skill to use (skills listed: {listed}, tools: {sorted(offered)})"
    if not results:
        return _call("load_skill", {"name": skill}, 1)
    if len(results) == 1:
        loaded = results[0]
        folder = _FOLDER.search(loaded)
        block = _BASH_BLOCK.search(loaded)
        if folder is None or block is None:
            return f"the skill did not load: {loaded[:200]}"
        if skill == "math-calculator":
            command = f'echo "{expression_of(question)}" | bc'
        else:
            command = next(line for line in block.group(1).splitlines() if line.strip())
        return _call("bash", {"command": command, "cwd": folder.group(1).strip()}, 2)
    output = results[-1].strip()
    asks_json = any("json" in m.text.lower() for m in messages if m.role is MessageRole.SYSTEM)
    if asks_json and output.lstrip("-").isdigit():
        return json.dumps({"result": int(output)})
    return output
