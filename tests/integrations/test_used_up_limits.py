"""The rate-limit headers of a successful answer: how long a used-up limit holds the next
request (`used_up_limit_wait`), and the HTTP clients' response hook that tells the call's
gate (`hear_used_up_limits`). Through the real SDKs: test_rate_limit_openai.py,
test_anthropic_chat_model.py, test_openai_embedding_model.py."""

from __future__ import annotations

import httpx2
import pytest

from flink_agents.api.chat_models.rate_limit import bind_used_up_limits, release_used_up_limits
from flink_agents.integrations._provider_client import hear_used_up_limits
from flink_agents.integrations._sdk_errors import used_up_limit_wait

# 10 requests a window that is whole again in 20 s: one comes back every 2 s.
USED_UP = {
    "x-ratelimit-limit-requests": "10",
    "x-ratelimit-remaining-requests": "0",
    "x-ratelimit-reset-requests": "20s",
}


async def test_the_hook_reports_only_successful_answers_to_a_bound_call() -> None:
    heard: list[float] = []
    token = bind_used_up_limits(heard.append)
    try:
        await hear_used_up_limits(httpx2.Response(429, headers=USED_UP))  # the error's to read
        await hear_used_up_limits(httpx2.Response(200, headers=USED_UP))
        await hear_used_up_limits(httpx2.Response(200, headers={}))
    finally:
        release_used_up_limits(token)
    await hear_used_up_limits(httpx2.Response(200, headers=USED_UP))  # no call: nobody
    assert heard == [2.0]


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        (USED_UP, 2.0),
        ({**USED_UP, "x-ratelimit-limit-requests": "nope"}, 20.0),  # the whole reset
        ({k: v for k, v in USED_UP.items() if k != "x-ratelimit-limit-requests"}, 20.0),
        ({**USED_UP, "x-ratelimit-reset-requests": "soon"}, None),
        ({**USED_UP, "x-ratelimit-remaining-requests": "3"}, None),
        (
            {
                **USED_UP,
                "x-ratelimit-limit-tokens": "1000",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-tokens": "6m0s",
            },
            2.0,  # the longest: requests 20 / 10, tokens 360 / 1000
        ),
        (
            {
                "anthropic-ratelimit-requests-limit": "50",
                "anthropic-ratelimit-requests-remaining": "0",
                "anthropic-ratelimit-requests-reset": "1970-01-01T00:01:40Z",
            },
            2.0,  # 100 s from the epoch (``now`` 0) for 50 requests
        ),
        ({}, None),
        (None, None),
    ],
)
def test_used_up_limit_wait(headers: dict[str, str] | None, wait: float | None) -> None:
    assert used_up_limit_wait(headers, now=0.0) == wait
