"""`RequestLimiter`: fixed and adaptive limits, on a fake clock (no real waiting)."""

from __future__ import annotations

import asyncio
import pickle
import threading
from typing import Any

import pytest
from pydantic import ValidationError

from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
from flink_agents.api.chat_models.function_model import FunctionChatModelConnection
from flink_agents.api.chat_result import ChatResult, Usage
from flink_agents.api.content_blocks import ImageBlock, TextBlock, ToolCallBlock
from flink_agents.api.errors import ChatModelError
from flink_agents.api.message import ChatMessage
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.runtime.adaptive_concurrency import DECREASE_FACTOR
from flink_agents.runtime.request_gate import LimiterGate, limiter_for, report_limits, use_limiter
from flink_agents.runtime.request_limiter import (
    MAX_PAUSE_S,
    OVERLOAD_PAUSE_S,
    RequestLimiter,
    RequestLimits,
    RequestPermit,
    is_overload,
)
from flink_agents.runtime.request_tokens import estimate_tokens
from tests.api.fake_clock import FakeClock, settle


def limiter(clock: FakeClock, **limits: Any) -> RequestLimiter:
    return RequestLimiter(RequestLimits(**limits), clock=clock, sleep=clock.sleep)


def rate_limited(retry_after: float | None = 1.0) -> ChatModelError:
    return ChatModelError(
        "slow down", status_code=429, retryable=True, retry_after=retry_after, kind="rate_limit"
    )


class Starts:
    """Calls that wait on a limiter; ``times[i]`` is the clock time call ``i`` started."""

    def __init__(self, limiter: RequestLimiter, clock: FakeClock) -> None:
        self.limiter = limiter
        self.clock = clock
        self.times: dict[int, float] = {}
        self.permits: dict[int, RequestPermit] = {}
        self.tasks: dict[int, asyncio.Task[None]] = {}

    def call(self, i: int, tokens: int = 0) -> None:
        async def run() -> None:
            permit = await self.limiter.acquire(tokens)
            self.times[i] = self.clock()
            self.permits[i] = permit

        self.tasks[i] = asyncio.ensure_future(run())

    async def calls(self, n: int, tokens: int = 0) -> None:
        for i in range(len(self.tasks), len(self.tasks) + n):
            self.call(i, tokens)
        await settle()


# ---------------------------------------------------------------------------- fixed limits


async def test_max_concurrent_requests_holds_the_rest_until_a_call_ends_first_come_first() -> None:
    clock = FakeClock()
    starts = Starts(limiter(clock, max_concurrent_requests=2, adaptive=False), clock)
    await starts.calls(5)
    assert sorted(starts.times) == [0, 1]
    assert starts.limiter.in_flight == 2 and starts.limiter.queued == 3
    starts.permits[1].succeeded()
    await settle()
    assert sorted(starts.times) == [0, 1, 2]
    starts.permits[0].failed(RuntimeError("boom"))
    starts.permits[2].release()
    await settle()
    assert sorted(starts.times) == [0, 1, 2, 3, 4]
    assert starts.limiter.waits == 3


async def test_a_permit_reported_twice_frees_one_place() -> None:
    clock = FakeClock()
    starts = Starts(limiter(clock, max_concurrent_requests=1, adaptive=False), clock)
    await starts.calls(3)
    starts.permits[0].succeeded()
    starts.permits[0].succeeded()
    starts.permits[0].release()
    await settle()
    assert sorted(starts.times) == [0, 1]


async def test_requests_per_second_spaces_the_starts_evenly() -> None:
    clock = FakeClock(start=50.0)
    starts = Starts(limiter(clock, requests_per_second=4, adaptive=False), clock)
    await starts.calls(5)
    await clock.advance(2.0)
    assert [starts.times[i] - 50.0 for i in range(5)] == [0.0, 0.25, 0.5, 0.75, 1.0]
    # After a quiet spell, one starts at once and the next one interval later.
    await clock.advance(10.0)
    t = clock()
    await starts.calls(2)
    await clock.advance(1.0)
    assert [starts.times[5] - t, starts.times[6] - t] == [0.0, 0.25]


async def test_tokens_per_minute_waits_for_the_bucket_and_the_usage_corrects_the_estimate() -> None:
    clock = FakeClock(start=0.0)
    starts = Starts(limiter(clock, tokens_per_minute=600, adaptive=False), clock)  # 10/s
    await starts.calls(2, tokens=300)
    await starts.calls(1, tokens=300)
    assert sorted(starts.times) == [0, 1]  # the bucket (600) is empty
    # The first call used 100 tokens, not 300: 200 come back, the third needs 100 more.
    starts.permits[0].succeeded(Usage(input_tokens=60, output_tokens=40))
    await clock.advance(9.9)
    assert 2 not in starts.times
    await clock.advance(0.1)
    assert starts.times[2] == pytest.approx(10.0)


async def test_a_call_larger_than_the_bucket_waits_for_a_full_bucket_then_goes_into_debt() -> None:
    clock = FakeClock(start=0.0)
    starts = Starts(limiter(clock, tokens_per_minute=60, adaptive=False), clock)  # 1/s
    await starts.calls(1, tokens=30)
    await starts.calls(1, tokens=500)
    await clock.advance(29.0)
    assert 1 not in starts.times
    await clock.advance(1.0)
    assert starts.times[1] == pytest.approx(30.0)
    await starts.calls(1, tokens=1)  # the bucket is at -440: 441 s
    await clock.advance(440.0)
    assert 2 not in starts.times
    await clock.advance(1.0)
    assert starts.times[2] == pytest.approx(471.0)


async def test_a_failed_call_gives_its_tokens_back_and_unknown_usage_keeps_the_estimate() -> None:
    clock = FakeClock(start=0.0)
    starts = Starts(limiter(clock, tokens_per_minute=60, adaptive=False), clock)
    await starts.calls(1, tokens=60)
    starts.permits[0].failed(rate_limited())
    await starts.calls(1, tokens=60)
    assert 1 in starts.times  # given back at once
    starts.permits[1].succeeded(Usage())  # the provider did not say: 60 stay taken
    await starts.calls(1, tokens=60)
    await clock.advance(59.0)
    assert 2 not in starts.times


async def test_cancelling_a_waiting_call_gives_its_place_to_the_next() -> None:
    clock = FakeClock()
    starts = Starts(limiter(clock, max_concurrent_requests=1, adaptive=False), clock)
    await starts.calls(3)
    starts.tasks[1].cancel()
    await settle()
    starts.permits[0].succeeded()
    await settle()
    assert sorted(starts.times) == [0, 2]
    assert starts.limiter.queued == 0


async def test_cancelling_the_head_while_it_waits_for_time_wakes_the_next() -> None:
    clock = FakeClock()
    starts = Starts(limiter(clock, requests_per_second=1, adaptive=False), clock)
    await starts.calls(3)
    starts.tasks[1].cancel()  # the head, sleeping until t+1
    await settle()
    await clock.advance(1.0)
    assert sorted(starts.times) == [0, 2]


async def test_a_waiter_on_another_threads_loop_is_woken_by_a_release_here() -> None:
    shared = RequestLimiter(RequestLimits(max_concurrent_requests=1, adaptive=False))
    first = await shared.acquire()
    entered = threading.Event()
    got: list[RequestPermit] = []

    async def other_thread() -> None:
        acquiring = asyncio.ensure_future(shared.acquire())
        await asyncio.sleep(0)
        entered.set()
        got.append(await acquiring)

    thread = threading.Thread(target=asyncio.run, args=(other_thread(),))
    thread.start()
    assert await asyncio.to_thread(entered.wait, 10)
    assert shared.queued == 1
    first.succeeded()
    await asyncio.to_thread(thread.join, 10)
    assert len(got) == 1 and shared.in_flight == 1


# ---------------------------------------------------------------------------- adaptive


async def turns(n: int) -> None:
    """Let the event loop turn ``n`` times."""
    for _ in range(n):
        await asyncio.sleep(0)


async def test_adaptive_sends_a_burst_at_once_until_the_first_overload() -> None:
    clock = FakeClock()
    starts = Starts(limiter(clock), clock)
    assert starts.limiter.limit is None
    await starts.calls(1000)
    assert len(starts.times) == 1000 and set(starts.times.values()) == {clock.now}
    for i in range(1000):
        starts.permits[i].succeeded()
    assert starts.limiter.limit is None and starts.limiter.waits == 0


async def test_a_new_limiter_starts_unlimited_whatever_another_learnt() -> None:
    clock = FakeClock(start=0.0)
    first = limiter(clock)
    (await first.acquire()).failed(rate_limited(retry_after=0.0))
    assert first.limit == 1
    assert limiter(clock).limit is None  # a new process, or a restore


async def test_an_overload_lowers_the_limit_to_a_share_of_the_calls_not_refused() -> None:
    clock = FakeClock(start=0.0)
    starts = Starts(limiter(clock), clock)
    await starts.calls(300)
    # The provider takes 20 of the burst and refuses the other 280.
    for i in range(20, 300):
        starts.permits[i].failed(rate_limited(retry_after=2.0))
    await settle()
    assert starts.limiter.limit == int(20 * DECREASE_FACTOR) == 14
    assert starts.limiter.overloads == 280
    assert starts.limiter.paused_until == 2.0
    await starts.calls(30)
    for i in range(20):
        starts.permits[i].succeeded()  # while calls wait: one round trip, +1
    assert starts.limiter.limit == 15
    await clock.advance(1.999)
    assert len(starts.times) == 300  # nobody starts during the pause
    await clock.advance(0.001)
    assert len(starts.times) == 300 + 15


async def test_refusals_of_calls_in_flight_at_a_decrease_lower_it_further() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock)
    starts = Starts(lim, clock)
    await starts.calls(10)
    starts.permits[0].failed(rate_limited(retry_after=0.0))
    assert lim.limit == int(9 * DECREASE_FACTOR) == 6  # 9 in flight not refused
    starts.permits[1].failed(rate_limited(retry_after=0.0))  # in flight at the decrease
    assert lim.limit == int(8 * DECREASE_FACTOR) == 5
    for i in range(2, 10):
        starts.permits[i].succeeded()
    await starts.calls(2)  # start after the decrease: a refusal is a new overload
    starts.permits[10].failed(rate_limited(retry_after=0.0))
    assert lim.limit == 1  # the one other call in flight, x 0.7, at least 1


async def test_after_an_overload_the_limit_grows_by_one_per_round_trip() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock)
    starts = Starts(lim, clock)
    await starts.calls(8)
    starts.permits[7].failed(rate_limited(retry_after=0.0))
    assert lim.limit == int(7 * DECREASE_FACTOR) == 4
    await starts.calls(200)
    done = {7}
    limits = []
    for _ in range(4):  # four round trips: every call in flight answers
        for i in [i for i in sorted(starts.permits) if i not in done]:
            starts.permits[i].succeeded()
            done.add(i)
        await settle()
        limits.append(lim.limit)
    assert limits == [5, 6, 7, 8]
    assert lim.in_flight == 8


async def test_adaptive_does_not_grow_while_the_limit_is_not_reached() -> None:
    clock = FakeClock()
    lim = limiter(clock)
    starts = Starts(lim, clock)
    await starts.calls(12)
    starts.permits[11].failed(rate_limited(retry_after=0.0))
    for i in range(11):
        starts.permits[i].release()
    assert lim.limit == 7
    for _ in range(100):
        permit = await lim.acquire()
        permit.succeeded()
    assert lim.limit == 7


async def test_waiting_calls_start_spread_over_the_latency_not_in_waves() -> None:
    clock = FakeClock(start=0.0)
    starts = Starts(limiter(clock), clock)
    await starts.calls(12)
    starts.permits[11].failed(rate_limited(retry_after=0.0))  # the limit: 11 x 0.7 = 7
    await starts.calls(20)
    await clock.advance(2.0)
    for i in range(8):
        starts.permits[i].succeeded()  # a round trip of 2 s: the limit grows to 8
    await settle()
    assert starts.limiter.limit == 8 and starts.limiter.in_flight == 4
    await clock.advance(2.0)
    # The five places free go 2 s / 8 places apart, not at once.
    assert [starts.times[12 + i] for i in range(5)] == pytest.approx(
        [2.0 + i * 2.0 / 8 for i in range(5)]
    )
    assert 17 not in starts.times


async def test_calls_that_find_no_queue_are_not_spread() -> None:
    clock = FakeClock(start=0.0)
    starts = Starts(limiter(clock), clock)
    await starts.calls(12)
    starts.permits[11].failed(rate_limited(retry_after=0.0))  # the limit: 7
    await clock.advance(2.0)
    for i in range(11):
        starts.permits[i].succeeded()
    await starts.calls(7)
    assert [starts.times[i] for i in range(12, 19)] == [2.0] * 7


async def test_without_retry_after_an_overload_pauses_for_the_default() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock)
    permit = await lim.acquire()
    permit.failed(ChatModelError("busy", status_code=529, retryable=True, kind="server"))
    assert lim.paused_until == OVERLOAD_PAUSE_S
    starts = Starts(lim, clock)
    await starts.calls(1)
    await clock.advance(2 * OVERLOAD_PAUSE_S)
    assert starts.times[0] == OVERLOAD_PAUSE_S


async def test_a_retry_after_of_an_hour_pauses_at_most_max_pause() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock)
    (await lim.acquire()).failed(rate_limited(retry_after=3600.0))
    assert lim.paused_until == MAX_PAUSE_S


async def test_a_retry_after_of_an_hour_pauses_at_most_the_callers_max_pause() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock)
    (await lim.acquire()).failed(rate_limited(retry_after=3600.0), max_pause_s=1.0)
    assert lim.paused_until == 1.0
    await clock.advance(1.0)
    (await lim.acquire()).failed(rate_limited(retry_after=90.0), max_pause_s=120)
    assert lim.paused_until == 91.0  # a cap above MAX_PAUSE_S lets a longer retry-after be


async def test_a_pause_holds_a_call_at_most_its_own_max_pause() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock)
    (await lim.acquire()).failed(rate_limited(retry_after=3600.0))  # no cap: 60 s
    starts = Starts(lim, clock)
    capped = asyncio.ensure_future(lim.acquire(max_pause_s=2.0))
    await clock.advance(1.999)
    assert not capped.done()
    await clock.advance(0.001)
    assert capped.done() and clock.now == 2.0
    capped.result().succeeded()
    await starts.calls(1)  # no cap: waits out the pause
    await clock.advance(50.0)
    assert not starts.times
    await clock.advance(8.0)
    assert starts.times[0] == MAX_PAUSE_S


async def test_other_errors_neither_lower_the_limit_nor_pause() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock)
    (await lim.acquire()).failed(ChatModelError("bad", status_code=400, kind="bad_request"))
    (await lim.acquire()).failed(ChatModelError("down", status_code=503, kind="server"))
    assert lim.limit is None and lim.paused_until is None
    assert lim.overloads == 0


async def test_a_fixed_concurrency_stays_but_an_overload_still_pauses() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock, max_concurrent_requests=3)
    (await lim.acquire()).failed(rate_limited(retry_after=5.0))
    assert lim.limit == 3 and lim.paused_until == 5.0


async def test_not_adaptive_an_overload_is_only_counted() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock, requests_per_second=10, adaptive=False)
    assert lim.limit is None
    (await lim.acquire()).failed(rate_limited(retry_after=5.0))
    assert lim.paused_until is None and lim.overloads == 1 and not lim.paces_overloads


async def test_an_answer_saying_a_limit_is_used_up_lowers_the_limit_and_pauses() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock)
    starts = Starts(lim, clock)
    await starts.calls(10)
    # The provider took call 0, and its headers say the next request would be refused.
    starts.permits[0].limit_used_up(1.5)
    assert lim.limit == int(10 * DECREASE_FACTOR) == 7  # every call in flight was taken
    assert lim.paused_until == 1.5 and lim.used_up == 1 and lim.overloads == 0
    starts.permits[1].limit_used_up(1.5)  # in flight at the decrease: no second one
    assert lim.limit == 7 and lim.used_up == 2
    for i in range(10):
        starts.permits[i].succeeded()  # the answers that lowered it add nothing
    await starts.calls(1)
    await clock.advance(1.499)
    assert 10 not in starts.times  # held until the provider takes requests again
    await clock.advance(0.001)
    assert starts.times[10] == 1.5
    starts.permits[10].limit_used_up(0.0)  # started after the decrease: a new one
    assert lim.limit == 1


async def test_a_used_up_limit_pauses_at_most_the_callers_max_pause() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock)
    (await lim.acquire(max_pause_s=2.0)).limit_used_up(3600.0)
    assert lim.paused_until == 2.0


async def test_a_used_up_limit_after_the_answer_was_reported_is_ignored() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock)
    permit = await lim.acquire()
    permit.succeeded()
    permit.limit_used_up(5.0)
    assert lim.limit is None and lim.paused_until is None and lim.used_up == 0


async def test_not_adaptive_a_used_up_limit_is_only_counted() -> None:
    clock = FakeClock(start=0.0)
    lim = limiter(clock, max_concurrent_requests=3, adaptive=False)
    (await lim.acquire()).limit_used_up(5.0)
    assert lim.limit == 3 and lim.paused_until is None and lim.used_up == 1


# ---------------------------------------------------------------------------- classification


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ChatModelError("x", status_code=429, kind="rate_limit"), True),
        (ChatModelError("x", status_code=529, kind="server"), True),
        (ChatModelError("x", kind="overloaded"), True),
        (ChatModelError("x", kind="rate_limit"), True),
        (ChatModelError("x", status_code=503, kind="server"), False),
        (ChatModelError("x", kind="timeout"), False),
        (RuntimeError("429"), False),
    ],
)
def test_is_overload(error: BaseException, expected: bool) -> None:
    assert is_overload(error) is expected


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="requests_per_second"):
        RequestLimits(requests_per_second=0)
    with pytest.raises(ValueError, match="max_concurrent_requests"):
        RequestLimits(max_concurrent_requests=0)
    with pytest.raises(ValidationError):
        FunctionChatModelConnection(requests_per_second=float("inf"))
    with pytest.raises(ValidationError):
        FunctionChatModelConnection(tokens_per_minute=0)


def test_estimate_counts_text_at_four_characters_media_flat_and_max_tokens() -> None:
    messages = [
        ChatMessage.system("x" * 40),  # 40
        ChatMessage.user(
            [
                TextBlock(text="y" * 20),
                ImageBlock(url="https://e.x/a.png", mime_type="image/png"),
            ]
        ),  # 20 + one image
        ChatMessage.assistant("", tool_calls=[ToolCallBlock(id="c", name="f", input={"a": 1})]),
    ]
    tool = ToolMetadata(name="lookup", description="d" * 14, args_schema={})  # 6 + 14 + 2
    call_chars = len(str({"a": 1}))
    chars = 40 + 20 + call_chars + 6 + 14 + 2
    expected_text = -(-chars // 4)
    assert estimate_tokens(messages, [tool], {}) == expected_text + 1000
    assert estimate_tokens(messages, [tool], {"max_tokens": 500}) == expected_text + 1500
    assert estimate_tokens(messages, None, {"max_output_tokens": 7}, output_guess=99) == (
        -(-(40 + 20 + call_chars) // 4) + 1000 + 7
    )
    assert estimate_tokens(messages, None, {}, output_guess=99) == (
        -(-(40 + 20 + call_chars) // 4) + 1000 + 99
    )


# ---------------------------------------------------------------------------- registry, sending


def test_one_limiter_per_connection_object() -> None:
    a = FunctionChatModelConnection(max_concurrent_requests=2)
    b = FunctionChatModelConnection(max_concurrent_requests=2)
    assert a.request_gate is None  # until the runtime (or this) gives it one
    assert limiter_for(a) is limiter_for(a)
    assert isinstance(a.request_gate, LimiterGate) and a.request_gate.limiter is limiter_for(a)
    assert limiter_for(a) is not limiter_for(b)
    assert limiter_for(FunctionChatModelConnection()) is None  # limits nothing


def test_a_pickled_connection_leaves_its_gate_behind() -> None:
    connection = FunctionChatModelConnection(max_concurrent_requests=2)
    limiter_for(connection)
    copy = pickle.loads(pickle.dumps(connection))
    assert copy.request_gate is None and connection.request_gate is not None
    deep = connection.model_copy(deep=True)  # a copy in this process shares the limiter
    assert limiter_for(deep) is limiter_for(connection)


async def test_a_setup_sends_through_the_gate_which_reports_waits_overloads_and_usage() -> None:
    clock = FakeClock(start=0.0)
    replies: list[Any] = [
        rate_limited(retry_after=3.0),
        ChatResult(
            message=ChatMessage.assistant("ok"), usage=Usage(input_tokens=5, output_tokens=7)
        ),
    ]

    def answer(messages: Any, tools: Any) -> Any:
        reply = replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    connection = FunctionChatModelConnection(
        function=answer, adaptive_limit=True, tokens_per_minute=6000
    )
    lim = RequestLimiter(
        RequestLimits(adaptive=True, tokens_per_minute=6000), clock=clock, sleep=clock.sleep
    )
    use_limiter(connection, lim)
    assert limiter_for(connection) is lim
    model = BaseChatModelSetup(connection="c", get_resource=lambda name, kind: connection)
    with report_limits() as report, pytest.raises(ChatModelError):
        await model.achat([ChatMessage.user("hi")])
    assert report.overloads == 1 and report.paced and report.limiter is lim
    with report_limits() as report:
        task = asyncio.ensure_future(model.achat([ChatMessage.user("hi")], max_tokens=10))
        await clock.advance(3.0)
        result = await task
    assert result.message.text == "ok"
    assert report.waits == 1 and report.wait_s == 3.0 and report.overloads == 0
    assert lim.output_tokens_guess() == 7
