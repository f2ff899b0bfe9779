"""Benchmark of the local runner with a real provider adapter: the shape users run.

The agent and inputs of `local_runner.py` (1,000 keys, one input each; half of the inputs
make the model call a plain ``def`` tool once), with its model behind one of five
connections, taking turns in one run:

- ``function``: `FunctionChatModelConnection` (the engine alone: no HTTP, no SDK);
- ``openai``: `OpenAIChatModelConnection`, the official ``openai`` SDK sending Chat
  Completions requests over HTTP to a fake server on 127.0.0.1, in a process of its own
  (on another CPU where there is one), that answers as the function does after the
  latency, through the SDK's httpx client (what ``http_transport="httpx"`` sends through);
- ``openai+aiohttp``: the same through the SDK's ``DefaultAioHttpClient`` (what a
  connection sends through by default) instead;
- ``anthropic``, ``anthropic+aiohttp``: `AnthropicChatModelConnection` (the official
  ``anthropic`` SDK, Messages requests) to the same server, with either transport.

Each line runs its inputs twice on one runner and measures the second round (the SDK's
connections to the server are open by then, as in a job that has run for a while).
Printed per line and latency: wall time, CPU time of this process per input, and for a
non-zero latency the ratio to the ideal (every key concurrent: ``2 x latency``), then the
share of the CPU the adapter and its SDK add.

    python tools/bench/adapter.py
    python tools/bench/adapter.py --latency-ms 200 --repeat 5
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anthropic
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the local runner bench

from fake_provider import Reply, json_reply, serve_connection
from local_runner import build_agent as local_agent
from local_runner import machine_ms, ratio_to_ideal

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.integrations.chat_models.anthropic import (
    AnthropicChatModelConnection,
    AnthropicChatModelSetup,
)
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.runtime.local_runner import LocalRunner

LINES = ("function", "openai", "openai+aiohttp", "anthropic", "anthropic+aiohttp")

# ---------------------------------------------------------------------------- the server


def _text(content: Any) -> str:
    """A message's text: a string, or a list of parts (text parts, or an Anthropic tool
    result's)."""
    if isinstance(content, str):
        return content
    parts = [p for p in content or [] if isinstance(p, dict)]
    return "".join(_text(p["content"]) if "content" in p else p.get("text", "") for p in parts)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """What the server answers, in the API the model name says (``chat-<latency ms>``: Chat
    Completions; ``messages-<latency ms>``: Anthropic Messages): what `bench_model` would (a
    call of ``lookup`` for a question starting with ``tool:``, the tool's result once it has
    one, else a text)."""
    last = request["messages"][-1]
    content = last.get("content")
    blocks = content if isinstance(content, list) else []
    if (
        any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
        or last["role"] == "tool"
    ):
        reply = ("text", f"Found: {_text(content)}")
    elif last["role"] == "user" and _text(content).startswith("tool:"):
        reply = ("tool", _text(content)[5:])
    else:
        reply = ("text", "Answered directly.")
    if request["model"].startswith("messages-"):
        return _message(request["model"], *reply)
    return _completion(request["model"], *reply)


def _completion(model: str, kind: str, value: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": value}
    if kind == "tool":
        arguments = json.dumps({"ticket": value})
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "lookup", "arguments": arguments},
        }
        message = {"role": "assistant", "content": "Looking it up.", "tool_calls": [call]}
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if kind == "tool" else "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
    }


def _message(model: str, kind: str, value: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": value}]
    if kind == "tool":
        content = [
            {"type": "text", "text": "Looking it up."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"ticket": value}},
        ]
    return {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if kind == "tool" else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 4},
    }


async def _answer(path: str, request: dict[str, Any]) -> Reply:
    latency_ms = float(request["model"].rpartition("-")[2])  # "<api>-<latency ms>"
    if latency_ms:
        await asyncio.sleep(latency_ms / 1000.0)
    return json_reply(answer(request))


async def serve() -> None:
    """The fake server: prints its port, serves until stdin closes."""
    connections: set[asyncio.Task[None]] = set()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        try:
            await serve_connection(reader, writer, _answer)
        finally:
            connections.discard(task)

    server = await asyncio.start_server(connection, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    server.close()
    for task in list(connections):
        task.cancel()
    await asyncio.gather(*connections, return_exceptions=True)


def start_server() -> tuple[subprocess.Popen[str], int]:
    """The server process, pinned to the last CPU where there is more than one."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cpus) > 1:
        os.sched_setaffinity(process.pid, {cpus[-1]})
    return process, port


# ---------------------------------------------------------------------------- the runs


def build_agent(
    line: str, latency_s: float, port: int, http_clients: list[Any] | None = None
) -> Agent:
    """The agent of one line (`local_runner.build_agent` with the line's model); the HTTP
    clients the SDK lines make go to `http_clients` (to be closed before the run's event
    loop ends)."""
    if line == "function":
        return local_agent(latency_s, sync_tool=True)
    anthropic_api = line.startswith("anthropic")
    sdk: Any = anthropic if anthropic_api else openai
    transport = sdk.DefaultAioHttpClient if line.endswith("aiohttp") else None
    made = http_clients if http_clients is not None else []

    def http_client() -> Any:  # what the SDK makes by default, or its aiohttp client
        client = (transport or sdk.DefaultAsyncHttpxClient)()
        made.append(client)
        return client

    settings: dict[str, Any] = {
        "api_key": "sk-bench",
        "timeout": 60.0,
        "max_concurrent_requests": 100_000,  # the bench's own fixed limit: no adaptive start
        "http_client": http_client,
    }
    if anthropic_api:
        connection = ResourceDescriptor(
            clazz=AnthropicChatModelConnection, base_url=f"http://127.0.0.1:{port}", **settings
        )
        setup_class: type[BaseChatModelSetup] = AnthropicChatModelSetup
        model = f"messages-{latency_s * 1000.0:g}"
    else:
        connection = ResourceDescriptor(
            clazz=OpenAIChatModelConnection, base_url=f"http://127.0.0.1:{port}/v1", **settings
        )
        setup_class = OpenAIChatModelSetup
        model = f"chat-{latency_s * 1000.0:g}"
    setup = ResourceDescriptor(
        clazz=setup_class, connection="bench_connection", model=model, tools=["lookup"]
    )
    return local_agent(latency_s, sync_tool=True, connection=connection, setup=setup)


def _inputs(keys: int, round_: int) -> list[dict[str, Any]]:
    return [
        {"key": f"k{i}", "value": f"tool:T{round_}-{i}" if i % 2 == 0 else f"question {i}"}
        for i in range(keys)
    ]


async def run_once(line: str, keys: int, latency_s: float, port: int) -> tuple[float, float, int]:
    """Two rounds on one runner; (wall s, CPU s, outputs) of the second."""
    http_clients: list[Any] = []
    runner = LocalRunner(
        build_agent(line, latency_s, port, http_clients),
        {AgentExecutionOptions.MAX_IN_FLIGHT_RUNS.key: keys},
    )
    try:
        warm = await runner.run(_inputs(keys, 0))
        if len(warm) != keys:
            return 0.0, 0.0, len(warm)
        gc.collect()
        started, cpu_started = time.perf_counter(), time.process_time()
        outputs = await runner.run(_inputs(keys, 1))
        return time.perf_counter() - started, time.process_time() - cpu_started, len(outputs)
    finally:
        runner.close()
        for client in http_clients:
            await client.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The local runner with a real adapter.")
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, action="append")
    parser.add_argument("--repeat", type=int, default=3, help="runs per line (best and median)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(serve())
        return 0
    latencies = args.latency_ms or [0.0, 200.0]
    server, port = start_server()
    try:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        print(
            f"python {sys.version.split()[0]}, {args.keys} keys, one input each, half with a "
            "def tool; the second of two rounds on one runner"
        )
        print(f"machine: a fixed pure-Python loop takes {machine_ms():.0f} ms (lower is faster)")
        failed = False
        for latency_ms in latencies:
            latency_s = latency_ms / 1000.0
            walls: dict[str, list[float]] = {line: [] for line in LINES}
            cpus: dict[str, list[float]] = {line: [] for line in LINES}
            for _ in range(args.repeat):
                for line in LINES:  # the lines take turns
                    wall, cpu, produced = asyncio.run(run_once(line, args.keys, latency_s, port))
                    if produced != args.keys:
                        print(f"  ERROR: {line}: {produced} outputs for {args.keys} inputs")
                        failed = True
                        continue
                    walls[line].append(wall)
                    cpus[line].append(cpu)
            best_cpu: dict[str, float] = {}
            for line in LINES:
                if not walls[line]:
                    continue
                wall, cpu_s = min(walls[line]), min(cpus[line])
                best_cpu[line] = cpu_s / args.keys * 1e6
                text = (
                    f"{line:17s} latency {latency_ms:6.1f} ms: {wall:7.3f} s, "
                    f"CPU {best_cpu[line]:5.0f} us/input"
                )
                if latency_s > 0:
                    text += ratio_to_ideal(latency_s, walls[line])
                print(text)
            for line in LINES[1:]:
                if line in best_cpu and "function" in best_cpu:
                    added = best_cpu[line] - best_cpu["function"]
                    print(
                        f"    {line}: the adapter and its SDK add {added:.0f} us/input, "
                        f"{added / best_cpu[line]:.0%} of the line's CPU"
                    )
        return 1 if failed else 0
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)


if __name__ == "__main__":
    raise SystemExit(main())
