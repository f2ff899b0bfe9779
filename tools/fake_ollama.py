"""A fake Ollama server and ``ollama`` CLI, for upstream's end-to-end tests here with no
model: the model connection is the one change (`tools/upstream_tests.py --e2e`).

`FakeOllamaServer` speaks Ollama's HTTP API as the official ``ollama`` SDK calls it:
``GET /`` and ``/api/version``, ``GET /api/tags`` (the pulled models), ``POST /api/pull``
(streamed status lines), ``/api/show``, ``/api/chat`` (streamed or not, tool calls in
Ollama's format: arguments as an object) and ``/api/embed`` / ``/api/embeddings``. A
model must be pulled before it chats or embeds (else 404, as Ollama answers). Ollama's
OpenAI-compatible ``/v1/chat/completions`` answers too (any model name, not streamed).

Answers are rule-based and deterministic (`answer`), as a capable model answers the
prompts of upstream's e2e tests:

* arithmetic (``What is (2123 + 2321) * 312``, ``the sum of 1 and 2``): with the tools
  ``add`` / ``multiply`` offered, one call per operation, innermost first, each operand
  taken from the tool results already in the conversation; then the value, as
  ``{"result": value}`` when the system prompt or the ``format`` asks for a ``result``
  field, else in a sentence;
* ``Reply with the numeric result only``: the last number of the message;
* ``a joke about cats``: a joke about the subject;
* mem0's fact extraction (``{"facts": [...]}``, each user line) and memory update
  (``{"memory": [...]}``: a fact sharing most of its words with a memory updates it,
  another is added);
* anything else: ``You said: <the last user message>``.

Embeddings are `examples.mock_model_server.embedding_of` (hashed words) in 768 numbers,
nomic-embed-text's size.

`main` is both the shim of the ``ollama`` CLI (``ollama pull MODEL``, ``ollama list``; the
SDK's ``OLLAMA_HOST``) and a way to run the server alone (``serve --port``).
`write_cli` writes an ``ollama`` executable that runs it.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import operator
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script (the CLI shim)
    sys.path.insert(0, str(ROOT))

from examples.mock_model_server import embedding_of  # noqa: E402

__all__ = [
    "DEFAULT_PORT",
    "EMBEDDING_DIMENSIONS",
    "FakeOllamaServer",
    "OllamaPortInUseError",
    "answer",
    "main",
    "memory_answer",
    "model_name",
    "write_cli",
]

DEFAULT_PORT = 11434
"""Where ``ollama serve`` listens, and where the connections look by default."""
EMBEDDING_DIMENSIONS = 768
"""The length of an embedding (nomic-embed-text's)."""
VERSION = "0.12.0"
"""The version ``/api/version`` reports."""

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_EXPRESSION = re.compile(r"[\d\s.+\-*/()]*\d[\d\s.+\-*/()]*")
_WORDED = re.compile(
    r"(sum|product|difference)\s+of\s+(-?\d+(?:\.\d+)?)\s+and\s+(-?\d+(?:\.\d+)?)", re.I
)
_JOKE = re.compile(r"joke about ([\w\s-]+?)[.?!]*$", re.I)
_OPERATIONS: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("add", "+"),
    ast.Mult: ("multiply", "*"),
    ast.Sub: ("subtract", "-"),
    ast.Div: ("divide", "/"),
}
_APPLY = {"+": operator.add, "*": operator.mul, "-": operator.sub, "/": operator.truediv}
_WORD_OPERATIONS = {"sum": "+", "product": "*", "difference": "-"}


class OllamaPortInUseError(OSError):
    """Something already listens on the fake server's port."""


def model_name(name: str) -> str:
    """A model's name as Ollama lists it (``:latest`` when no tag is given)."""
    return name if ":" in name else f"{name}:latest"


# =========================================================================== the model


@dataclass(frozen=True)
class _Step:
    tool: str
    symbol: str
    left: float
    right: float


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _expression(text: str) -> ast.expr | None:
    worded = _WORDED.search(text)
    if worded:
        kind, left, right = worded.groups()
        text = f"{left} {_WORD_OPERATIONS[kind.lower()]} {right}"
    candidates = sorted(
        (m.group().strip() for m in _EXPRESSION.finditer(text)), key=len, reverse=True
    )
    for candidate in candidates:
        try:
            tree = ast.parse(candidate, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(tree, ast.BinOp):
            return tree
    return None


def _plan(
    node: ast.expr, offered: set[str], results: list[float], steps: list[_Step]
) -> float | None:
    """The value of ``node``, walking it innermost first: an operation whose tool is
    offered takes the next tool result (None, and a step to call, when there is none)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _plan(node.operand, offered, results, steps)
        return None if inner is None else -inner
    if not isinstance(node, ast.BinOp) or type(node.op) not in _OPERATIONS:
        raise ValueError("not arithmetic")
    left = _plan(node.left, offered, results, steps)
    right = _plan(node.right, offered, results, steps)
    if left is None or right is None:
        return None
    tool, symbol = _OPERATIONS[type(node.op)]
    if tool in offered:
        done = sum(1 for step in steps if step.tool in offered)
        steps.append(_Step(tool, symbol, left, right))
        return results[done] if done < len(results) else None
    return float(_APPLY[symbol](left, right))


def _tool_call(step: _Step, tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    tool = next(t for t in tools if t.get("function", {}).get("name") == step.tool)
    parameters = list((tool["function"].get("parameters") or {}).get("properties") or {})
    names = [*parameters, "a", "b"][:2] if len(parameters) < 2 else parameters[:2]
    arguments = {names[0]: _number(step.left), names[1]: _number(step.right)}
    return {"function": {"name": step.tool, "arguments": arguments}}


def _wants_result_field(messages: Sequence[dict[str, Any]], format_: Any) -> bool:
    if isinstance(format_, dict):
        return "result" in (format_.get("properties") or {})
    system = " ".join(_text(m) for m in messages if m.get("role") == "system")
    return '"result"' in system


def answer(
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] = (),
    format_: Any = None,
) -> dict[str, Any]:
    """The assistant message (Ollama's wire format) a capable model gives to ``messages``
    (``/api/chat``'s), the ``tools`` offered and the ``format`` asked (module doc)."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    last = _text(messages[users[-1]]) if users else ""
    since = messages[users[-1] + 1 :] if users else messages
    results = [
        float(found.group())
        for m in since
        if m.get("role") == "tool" and (found := _NUMBER.search(_text(m)))
    ]
    memory = memory_answer(messages, last)
    if memory is not None:
        return _assistant(json.dumps(memory))
    if "numeric result only" in last.lower():
        numbers = _NUMBER.findall(last)
        return _assistant(numbers[-1] if numbers else "0")
    expression = _expression(last)
    if expression is not None:
        offered = {t.get("function", {}).get("name", "") for t in tools}
        steps: list[_Step] = []
        try:
            value = _plan(expression, offered, results, steps)
        except (ValueError, ZeroDivisionError):
            value, steps = None, []
        if value is None and len(steps) > len(results):
            return _assistant("", tool_calls=[_tool_call(steps[len(results)], tools)])
        if value is not None:
            if _wants_result_field(messages, format_):
                return _assistant(json.dumps({"result": _number(value)}))
            return _assistant(f"The answer is {_number(value)}.")
    joke = _JOKE.search(last.strip())
    if joke:
        subject = joke.group(1).strip()
        return _assistant(f"Why don't {subject} play poker in the jungle? Too many cheetahs!")
    return _assistant(f"You said: {last}")


def memory_answer(messages: Sequence[dict[str, Any]], last: str) -> dict[str, Any] | None:
    """mem0's two requests: the facts of a conversation (``{"facts": [...]}``: each user
    line), and the memory update (``{"memory": [...]}``: a fact that shares most of its
    words with a memory updates it, another fact is added, other memories stay)."""
    system = " ".join(_text(m) for m in messages if m.get("role") == "system")
    if last.startswith("Input:\n") and "facts" in system:
        lines = last.removeprefix("Input:\n").splitlines()
        facts = [line.split(":", 1)[1].strip() for line in lines if line.startswith("user:")]
        return {"facts": [fact for fact in facts if fact]}
    if "new retrieved facts" not in last:
        return None
    blocks = re.findall(r"```\s*(.*?)\s*```", last, re.DOTALL)
    try:
        facts = [str(f) for f in ast.literal_eval(blocks[-1])]
        old = ast.literal_eval(blocks[-2]) if "Current memory is empty" not in last else []
    except (IndexError, ValueError, SyntaxError):
        return {"memory": []}
    events: dict[str, dict[str, Any]] = {
        str(m["id"]): {"id": str(m["id"]), "text": m["text"], "event": "NONE"} for m in old
    }
    for fact in facts:
        match = next(
            (e for e in events.values() if e["event"] == "NONE" and _similar(e["text"], fact)),
            None,
        )
        if match is not None:
            match.update(event="UPDATE", old_memory=match["text"], text=fact)
        else:
            new_id = str(len(events))
            events[new_id] = {"id": new_id, "text": fact, "event": "ADD"}
    return {"memory": list(events.values())}


def _similar(one: str, other: str) -> bool:
    words = [set(re.findall(r"\w+", text.lower())) for text in (one, other)]
    return len(words[0] & words[1]) >= 0.5 * len(words[0] | words[1])


def _assistant(content: str, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


# ========================================================================== the server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False  # a second server on the port must fail, not share it

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that went away mid-request


class FakeOllamaServer:
    """``with FakeOllamaServer() as server: ...``: the fake on 127.0.0.1 (module doc).

    Args:
        port: the port (default Ollama's, 11434; 0: a free one).
        models: models pulled from the start.

    Raises `OllamaPortInUseError` when the port is taken.
    """

    def __init__(self, port: int = DEFAULT_PORT, models: Sequence[str] = ()) -> None:
        self.models: list[str] = [model_name(m) for m in models]
        """The pulled models, in pull order."""
        self.requests: list[tuple[str, dict[str, Any]]] = []
        """Every request: its path and JSON body."""
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_HEAD(self) -> None:
                self._send(200, b"", "text/plain")

            def do_GET(self) -> None:
                self._route({})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = None
                if not isinstance(body, dict):
                    self._json(400, {"error": "invalid JSON body"})
                    return
                self._route(body)

            def _route(self, body: dict[str, Any]) -> None:
                path = self.path.split("?", 1)[0].rstrip("/") or "/"
                with fake._lock:
                    fake.requests.append((path, body))
                status, payload, stream = fake._reply(path, body)
                if stream is not None:
                    lines = b"".join(json.dumps(chunk).encode() + b"\n" for chunk in stream)
                    self._send(status, lines, "application/x-ndjson")
                elif isinstance(payload, str):
                    self._send(status, payload.encode(), "text/plain; charset=utf-8")
                else:
                    self._json(status, payload)

            def _json(self, status: int, payload: Any) -> None:
                self._send(status, json.dumps(payload).encode(), "application/json")

            def _send(self, status: int, data: bytes, content_type: str) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", content_type)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                except OSError:
                    self.close_connection = True

        try:
            self._httpd = _Server(("127.0.0.1", port), Handler)
        except OSError as error:
            raise OllamaPortInUseError(
                f"cannot start the fake Ollama server on 127.0.0.1:{port}: {error.strerror} "
                "(is an Ollama server, or another fake, running there? stop it, or run "
                "with --real-ollama to use it)"
            ) from error
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def serve_forever(self) -> None:
        """Serves in this thread until `stop` (from another) or an interrupt."""
        self._httpd.serve_forever()

    def start(self) -> FakeOllamaServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeOllamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------------- routes

    def _reply(
        self, path: str, body: dict[str, Any]
    ) -> tuple[int, Any, list[dict[str, Any]] | None]:
        """(status, payload, stream): a stream is sent as JSON lines instead."""
        if path == "/":
            return 200, "Ollama is running", None
        if path == "/api/version":
            return 200, {"version": VERSION}, None
        if path == "/api/tags":
            with self._lock:
                models = list(self.models)
            return 200, {"models": [_listed(m) for m in models]}, None
        if path == "/api/ps":
            return 200, {"models": []}, None
        if path == "/api/pull":
            return self._pull(body)
        if path == "/v1/chat/completions":
            return 200, _completion(body), None
        name = body.get("model") or body.get("name") or ""
        if path in ("/api/show", "/api/chat", "/api/embed", "/api/embeddings"):
            with self._lock:
                pulled = model_name(str(name)) in self.models
            if not pulled:
                return 404, {"error": f"model '{name}' not found"}, None
        if path == "/api/show":
            details = _listed(str(name))["details"]
            return 200, {"modelfile": "", "details": details, "model_info": {}}, None
        if path == "/api/chat":
            return self._chat(str(name), body)
        if path == "/api/embed":
            given = body.get("input")
            texts = [given] if isinstance(given, str) else list(given or [])
            vectors = [embedding_of(str(t), EMBEDDING_DIMENSIONS) for t in texts]
            return 200, {"model": name, "embeddings": vectors}, None
        if path == "/api/embeddings":
            vector = embedding_of(str(body.get("prompt") or ""), EMBEDDING_DIMENSIONS)
            return 200, {"embedding": vector}, None
        return 404, {"error": f"no route {path}"}, None

    def _pull(self, body: dict[str, Any]) -> tuple[int, Any, list[dict[str, Any]] | None]:
        name = str(body.get("model") or body.get("name") or "")
        if not name:
            return 400, {"error": "model is required"}, None
        with self._lock:
            if model_name(name) not in self.models:
                self.models.append(model_name(name))
        statuses = ["pulling manifest", "verifying sha256 digest", "writing manifest", "success"]
        if body.get("stream", True):
            return 200, None, [{"status": status} for status in statuses]
        return 200, {"status": "success"}, None

    def _chat(
        self, name: str, body: dict[str, Any]
    ) -> tuple[int, Any, list[dict[str, Any]] | None]:
        message = answer(body.get("messages") or [], body.get("tools") or [], body.get("format"))
        prompt_tokens = sum(len(_text(m).split()) for m in body.get("messages") or [])
        final = {
            "model": name,
            "created_at": "2026-01-01T00:00:00Z",
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": prompt_tokens,
            "eval_count": len(message["content"].split()) + 1,
        }
        if not body.get("stream", True):
            return 200, {**final, "message": message}, None
        words = re.findall(r"\S+\s*", message["content"])
        chunks = [
            {
                "model": name,
                "created_at": final["created_at"],
                "message": {"role": "assistant", "content": word},
                "done": False,
            }
            for word in words
        ]
        if message.get("tool_calls"):
            chunks.append(
                {
                    "model": name,
                    "created_at": final["created_at"],
                    "message": {**message, "content": ""},
                    "done": False,
                }
            )
        chunks.append({**final, "message": {"role": "assistant", "content": ""}})
        return 200, None, chunks


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI-compatible ``/v1/chat/completions`` answer (Ollama serves one too)."""
    messages = [
        {**m, "content": m.get("content") if isinstance(m.get("content"), str) else ""}
        for m in body.get("messages") or []
    ]
    message = answer(messages, body.get("tools") or [])
    calls = [
        {
            "id": f"call_{index}",
            "type": "function",
            "function": {
                "name": call["function"]["name"],
                "arguments": json.dumps(call["function"]["arguments"]),
            },
        }
        for index, call in enumerate(message.get("tool_calls") or [])
    ]
    reply: dict[str, Any] = {"role": "assistant", "content": message["content"] or None}
    if calls:
        reply["tool_calls"] = calls
    prompt_tokens = sum(len(_text(m).split()) for m in messages)
    completion_tokens = len(message["content"].split()) + 1
    return {
        "id": "chatcmpl-fake-ollama",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model") or "",
        "choices": [
            {"index": 0, "message": reply, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _listed(name: str) -> dict[str, Any]:
    embedding = "embed" in name
    return {
        "name": model_name(name),
        "model": model_name(name),
        "modified_at": "2026-01-01T00:00:00Z",
        "size": 1,
        "digest": "0" * 64,
        "details": {
            "format": "gguf",
            "family": "nomic-bert" if embedding else "qwen3",
            "parameter_size": "fake",
            "quantization_level": "fake",
        },
    }


# ============================================================================= the CLI


def write_cli(bin_dir: Path, python: str = sys.executable) -> Path:
    """Writes ``bin_dir/ollama``: the CLI shim (`main`) run by ``python``; its path."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "ollama"
    script.write_text(f'#!/bin/sh\nexec "{python}" "{Path(__file__).resolve()}" "$@"\n')
    script.chmod(0o755)
    return script


def main(argv: list[str] | None = None) -> int:
    """``ollama pull MODEL``, ``ollama list`` (against ``OLLAMA_HOST``, as the real CLI)
    or ``serve [--port N]`` (the fake server, until interrupted)."""
    parser = argparse.ArgumentParser(prog="ollama", description="fake Ollama (module doc)")
    commands = parser.add_subparsers(dest="command", required=True)
    pull = commands.add_parser("pull", help="pull a model from the fake server")
    pull.add_argument("model")
    commands.add_parser("list", help="list the pulled models")
    serve = commands.add_parser("serve", help="run the fake server")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)

    if args.command == "serve":
        server = FakeOllamaServer(args.port)
        print(f"fake Ollama on {server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
        return 0

    import httpx
    import ollama  # the SDK: OLLAMA_HOST as the real CLI reads it

    client = ollama.Client()
    try:
        if args.command == "pull":
            for progress in client.pull(args.model, stream=True):
                print(progress.status, flush=True)
        else:
            for model in client.list().models:
                print(model.model)
    except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
