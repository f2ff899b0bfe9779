"""Benchmark of provider rate limits: a burst of inputs against a provider that allows 20
requests per second.

The benches' fake provider (`fake_provider.py`), an OpenAI Chat Completions server on
127.0.0.1, keeps a token bucket (``--rate`` requests per second, a burst of one second's
worth) and answers a request beyond it with HTTP 429 and ``retry-after: 1`` at once; a
request within it is answered after ``--latency-ms``. ``--inputs`` inputs on as many keys
go at once through the OpenAI adapter (`OpenAIChatModelConnection`, the real SDK) on the
local runner, three times:

- ``none``: no limiter (``adaptive_limit=False``): the chat action's retries only;
- ``adaptive``: no option set (the default adaptive limit);
- ``configured``: ``requests_per_second`` set to the provider's rate.

Printed side by side: inputs answered (with the default ``max-retries``), requests and
the share of 429s, wall time, answers per second and their ratio to the provider's rate,
and the seconds from the start to the provider's first request. With ``--limit-headers``
the provider's answers carry OpenAI's ``x-ratelimit-*-requests`` headers (a connection
lowers its limit and pauses when one says the bucket is empty).

    python tools/bench/rate_limits.py
    python tools/bench/rate_limits.py --latency-ms 1000 --inputs 600
    python tools/bench/rate_limits.py --modes adaptive --limit-headers

Targets (issue 14), against 20 requests/s: adaptive, every input answered, at most 25%
429s, at least 0.7 of the rate; configured, at most 3% 429s, at least 0.85 of the rate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from fake_provider import FakeProvider, Reply, json_reply

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.message import ChatMessage
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.runtime.local_runner import LocalRunner

# ---------------------------------------------------------------------------- the provider


class LimitedProvider(FakeProvider):
    """The benches' `FakeProvider` answering OpenAI Chat Completions within ``rate``
    requests per second (a token bucket holding one second's worth), and 429 with
    ``retry-after: 1`` at once beyond it; counts the refusals."""

    def __init__(self, rate: float, latency_s: float, limit_headers: bool = False) -> None:
        super().__init__(self._answer)
        self.rate = rate
        self.latency_s = latency_s
        self.limit_headers = limit_headers
        """Whether answers carry OpenAI's ``x-ratelimit-*-requests`` headers (the bucket
        when the request came: its size, what is left, the time until it is full)."""
        self.rejected = 0
        self.first_request_at: float | None = None
        """`time.perf_counter` when the first request came."""
        self._tokens = rate
        self._at = time.monotonic()

    def _admit(self) -> bool:
        now = time.monotonic()
        self._tokens = min(self.rate, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        self.rejected += 1
        return False

    async def _answer(self, path: str, body: dict[str, Any]) -> Reply:
        if self.first_request_at is None:
            self.first_request_at = time.perf_counter()
        if not self._admit():
            return Reply(429, _RATE_LIMITED, {"retry-after": "1"})
        headers: dict[str, str] = {}
        if self.limit_headers:
            left = int(self._tokens)
            headers = {
                "x-ratelimit-limit-requests": f"{self.rate:g}",
                "x-ratelimit-remaining-requests": str(left),
                "x-ratelimit-reset-requests": f"{(self.rate - self._tokens) / self.rate:.3f}s",
            }
        await asyncio.sleep(self.latency_s)
        return json_reply(_completion(body), headers=headers)


_RATE_LIMITED = json.dumps(
    {
        "error": {
            "message": "Rate limit reached for requests",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    }
).encode()


def _completion(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "gpt-4.1-mini"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Answered."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
    }


# ---------------------------------------------------------------------------- the agent


async def start(event: Event, ctx: RunnerContext) -> None:
    text = str(event.attributes["input"])
    ctx.send_event(ChatRequestEvent(model="bench_model", messages=[ChatMessage.user(text)]))


async def finish(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=event.attributes["error"] is None))


def build_agent(base_url: str, limits: dict[str, Any]) -> Agent:
    agent = Agent()
    agent.add_action("start", [InputEvent], start)
    agent.add_action("finish", [ChatResponseEvent], finish)
    agent.add_resource(
        "bench_connection",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(
            clazz=OpenAIChatModelConnection, base_url=base_url, api_key="sk-bench", **limits
        ),
    )
    agent.add_resource(
        "bench_model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=OpenAIChatModelSetup, connection="bench_connection"),
    )
    return agent


MODES: dict[str, dict[str, Any]] = {
    "none": {"adaptive_limit": False},
    "adaptive": {},
    "configured": {"requests_per_second": None},  # filled with --rate
}


@dataclass
class Result:
    mode: str
    answered: int
    inputs: int
    requests: int
    rejected: int
    wall_s: float
    rate: float
    first_request_s: float

    @property
    def rejected_share(self) -> float:
        return self.rejected / self.requests if self.requests else 0.0

    @property
    def answers_per_s(self) -> float:
        return self.answered / self.wall_s

    def line(self) -> str:
        return (
            f"{self.mode:>10}  {self.answered:4d}/{self.inputs:<4d}  {self.requests:5d}  "
            f"{self.rejected_share:6.1%}  {self.wall_s:6.1f}  {self.answers_per_s:6.1f}  "
            f"{self.answers_per_s / self.rate:5.2f}  {self.first_request_s:7.3f}"
        )


async def run_mode(mode: str, args: argparse.Namespace) -> Result:
    limits = dict(MODES[mode])
    if "requests_per_second" in limits:
        limits["requests_per_second"] = args.rate
    inputs = [{"key": f"k{i}", "value": f"question {i}"} for i in range(args.inputs)]
    with LimitedProvider(args.rate, args.latency_ms / 1000.0, args.limit_headers) as provider:
        config: dict[str, Any] = {
            AgentExecutionOptions.MAX_IN_FLIGHT_RUNS.key: max(1000, args.inputs)
        }
        if args.max_retries is not None:
            config[AgentExecutionOptions.MAX_RETRIES.key] = args.max_retries
        runner = LocalRunner(build_agent(provider.base_url, limits), config)
        started = time.perf_counter()
        outputs = await runner.run(inputs)
        wall = time.perf_counter() - started
        runner.close()
        return Result(
            mode=mode,
            answered=sum(1 for o in outputs if o.value is True),
            inputs=args.inputs,
            requests=provider.requests,
            rejected=provider.rejected,
            wall_s=wall,
            rate=args.rate,
            first_request_s=(provider.first_request_at or started) - started,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark of provider rate limits.")
    parser.add_argument("--inputs", type=int, default=300, help="inputs, one key each")
    parser.add_argument("--rate", type=float, default=20.0, help="the provider's requests/s")
    parser.add_argument("--latency-ms", type=float, default=200.0, help="answer latency")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--max-retries", type=int, help="the chat action's (default: 3)")
    parser.add_argument(
        "--limit-headers",
        action="store_true",
        help="answers carry x-ratelimit-*-requests headers, as OpenAI's do",
    )
    args = parser.parse_args(argv)
    retries = "default" if args.max_retries is None else str(args.max_retries)
    print(
        f"python {sys.version.split()[0]}, {args.inputs} inputs on {args.inputs} keys at once; "
        f"provider: {args.rate:g} requests/s (429 retry-after 1 beyond), "
        f"{args.latency_ms:g} ms per answer; max-retries {retries}"
        + ("; x-ratelimit headers on answers" if args.limit_headers else "")
    )
    print("      mode  answered  reqs    429s  wall s  ans/s  ratio  1st req s")
    for mode in args.modes:
        print(asyncio.run(run_mode(mode, args)).line(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
