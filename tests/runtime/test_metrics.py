"""`flink_agents.runtime.metrics`: the in-memory metric group and the chat/tool recorders."""

from __future__ import annotations

import pickle
import threading

import pytest

from flink_agents.api import ChatMessage, ChatResult, Usage
from flink_agents.api.metric_group import Counter, Gauge, Histogram, Meter, MetricGroup
from flink_agents.runtime.metrics import (
    USAGE_COUNTERS,
    InMemoryMetricGroup,
    record_chat_call,
    record_chat_error,
    record_chat_retry,
    record_tool_call,
)


def _result(usage: Usage) -> ChatResult:
    return ChatResult(message=ChatMessage.assistant("ok"), usage=usage)


def _empty_histogram() -> dict[str, float]:
    return {"count": 0, "mean": 0.0, "min": 0.0, "max": 0.0}


# ---------------------------------------------------------------------- the group


def test_the_group_implements_the_api_interface() -> None:
    group = InMemoryMetricGroup()
    assert isinstance(group, MetricGroup)
    assert isinstance(group.get_counter("c"), Counter)
    assert isinstance(group.get_histogram("h"), Histogram)
    assert isinstance(group.get_gauge("g"), Gauge)
    assert isinstance(group.get_meter("m"), Meter)
    assert isinstance(group.get_sub_group("s"), InMemoryMetricGroup)
    assert isinstance(group.get_sub_group("model", "gpt"), InMemoryMetricGroup)


def test_a_name_gives_the_same_metric_every_time() -> None:
    group = InMemoryMetricGroup()
    assert group.get_counter("c") is group.get_counter("c")
    assert group.get_counter("c") is not group.get_counter("d")
    assert group.get_histogram("h") is group.get_histogram("h")
    assert group.get_gauge("g") is group.get_gauge("g")
    assert group.get_meter("m") is group.get_meter("m")
    assert group.get_sub_group("s") is group.get_sub_group("s")
    assert group.get_sub_group("s") is not group.get_sub_group("t")
    # A sub-group's metrics are its own.
    assert group.get_sub_group("s").get_counter("c") is not group.get_counter("c")


def test_counters_go_up_and_down() -> None:
    counter = InMemoryMetricGroup().get_counter("c")
    assert counter.get_count() == 0
    counter.inc()
    counter.inc(5)
    counter.dec()
    counter.dec(2)
    assert counter.get_count() == 3


def test_counts_and_windows_are_exact_across_folds() -> None:
    # Additions wait on a deque and are folded in every few hundred or when read: a read
    # between folds, past several folds and of a window longer than one fold agree.
    group = InMemoryMetricGroup()
    counter, histogram = group.get_counter("c"), group.get_histogram("h", window_size=1000)
    for i in range(700):
        counter.inc(2)
        histogram.update(float(i))
        if i == 100:
            assert counter.get_count() == 202
            assert histogram.get_count() == 101 and histogram.get_max() == 100.0
    counter.dec(400)
    assert counter.get_count() == 1000
    assert histogram.get_count() == 700
    assert (histogram.get_min(), histogram.get_max()) == (0.0, 699.0)
    assert histogram.get_mean() == sum(range(700)) / 700


def test_a_count_that_is_no_number_fails_where_it_is_added() -> None:
    counter = InMemoryMetricGroup().get_counter("c")
    counter.inc(2)
    with pytest.raises(TypeError):
        counter.inc(None)  # type: ignore[arg-type]
    assert counter.get_count() == 2


def test_metrics_count_every_update_from_many_threads() -> None:
    # `inc` and `update` take no lock; concurrent updates and reads still lose nothing.
    group = InMemoryMetricGroup()
    counter, histogram = group.get_counter("c"), group.get_histogram("h", window_size=10)
    start = threading.Barrier(9)
    reads: list[int] = []

    def update() -> None:
        start.wait()
        for _ in range(5000):
            counter.inc()
            histogram.update(1.0)

    def read() -> None:
        start.wait()
        for _ in range(200):
            reads.append(counter.get_count())
            histogram.get_mean()

    threads = [threading.Thread(target=update) for _ in range(8)]
    threads.append(threading.Thread(target=read))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.get_count() == 40000 and histogram.get_count() == 40000
    assert reads == sorted(reads)  # a read never goes back
    assert histogram.get_mean() == 1.0


def test_histograms_keep_count_mean_min_and_max() -> None:
    histogram = InMemoryMetricGroup().get_histogram("h")
    # Nothing recorded: all zero.
    assert (histogram.get_count(), histogram.get_mean()) == (0, 0.0)
    assert (histogram.get_min(), histogram.get_max()) == (0.0, 0.0)
    for value in (5.0, 1.0, 9.0, 3.0):  # a new minimum, then a new maximum
        histogram.update(value)
    assert histogram.get_count() == 4
    assert histogram.get_mean() == 4.5
    assert (histogram.get_min(), histogram.get_max()) == (1.0, 9.0)


def test_a_histogram_of_negative_values_starts_from_its_first_value() -> None:
    histogram = InMemoryMetricGroup().get_histogram("h")
    for value in (-3.0, -7.0, -5.0):
        histogram.update(value)
    assert (histogram.get_min(), histogram.get_max()) == (-7.0, -3.0)  # not 0 for either


def test_a_histogram_keeps_statistics_of_its_window() -> None:
    group = InMemoryMetricGroup()
    histogram = group.get_histogram("h", window_size=3)
    for value in (100.0, 1.0, 2.0, 3.0):  # the first falls out of the window
        histogram.update(value)
    assert histogram.get_count() == 4  # the count is of every value
    assert histogram.get_mean() == 2.0
    assert (histogram.get_min(), histogram.get_max()) == (1.0, 3.0)
    # The window is set when the histogram is made; the same name gets the same one.
    assert group.get_histogram("h", window_size=50) is histogram
    assert group.snapshot()["h"] == {"count": 4, "mean": 2.0, "min": 1.0, "max": 3.0}


def test_the_default_window_is_upstreams_hundred_values() -> None:
    histogram = InMemoryMetricGroup().get_histogram("h")
    for value in range(150):
        histogram.update(float(value))
    assert histogram.get_count() == 150
    assert (histogram.get_min(), histogram.get_max()) == (50.0, 149.0)


def test_a_window_holds_at_least_one_value() -> None:
    with pytest.raises(ValueError, match="window_size must be at least 1, not 0"):
        InMemoryMetricGroup().get_histogram("h", window_size=0)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_meter_rates_the_events_of_the_last_minute() -> None:
    clock = FakeClock()
    group = InMemoryMetricGroup(clock)
    meter = group.get_sub_group("s").get_meter("m")  # a sub-group's meters use its clock
    assert (meter.get_count(), meter.get_rate()) == (0, 0.0)
    meter.mark()
    meter.mark(59)
    assert meter.get_rate() == 1.0  # 60 events over Flink's 60-second span
    clock.now += 30
    meter.mark(30)
    assert meter.get_rate() == 1.5
    clock.now += 30  # the first 60 events are a minute old: out of the span
    assert meter.get_rate() == 0.5
    clock.now += 60
    assert meter.get_rate() == 0.0
    assert meter.get_count() == 90  # the count is of every event


def test_key_value_groups_are_apart_from_named_groups() -> None:
    group = InMemoryMetricGroup()
    gpt = group.get_sub_group("model", "gpt")
    assert gpt is group.get_sub_group("model", "gpt")
    assert gpt is not group.get_sub_group("model", "claude")
    assert gpt is not group.get_sub_group("model")
    gpt.get_counter("calls").inc()
    group.get_sub_group("model").get_counter("calls").inc(5)
    assert group.snapshot() == {
        "model": {"calls": 5},
        "model=gpt": {"calls": 1},
        "model=claude": {},
    }


def test_a_plain_group_name_with_an_equals_sign_is_refused() -> None:
    with pytest.raises(ValueError, match=r"must not contain '='.*get_sub_group\(key, value\)"):
        InMemoryMetricGroup().get_sub_group("model=gpt")


def test_gauges_hold_the_last_value() -> None:
    gauge = InMemoryMetricGroup().get_gauge("g")
    assert gauge.get_value() is None
    gauge.update("starting")
    gauge.update(42)
    assert gauge.get_value() == 42


def test_snapshot_nests_sub_groups() -> None:
    group = InMemoryMetricGroup(FakeClock())
    group.get_counter("runs").inc(2)
    group.get_histogram("latencyMs").update(10.0)
    group.get_histogram("latencyMs").update(30.0)
    group.get_gauge("state").update("running")
    group.get_meter("events").mark(6)
    action = group.get_sub_group("action").get_sub_group("triage")
    action.get_counter("executions").inc()
    group.get_sub_group("idle")  # a group with no metrics yet
    assert group.snapshot() == {
        "runs": 2,
        "latencyMs": {"count": 2, "mean": 20.0, "min": 10.0, "max": 30.0},
        "state": "running",
        "events": {"count": 6, "rate": 0.1},
        "action": {"triage": {"executions": 1}},
        "idle": {},
    }


def test_a_snapshot_is_a_copy() -> None:
    group = InMemoryMetricGroup()
    group.get_counter("c").inc()
    snapshot = group.snapshot()
    group.get_counter("c").inc()
    assert snapshot == {"c": 1}
    assert group.snapshot() == {"c": 2}


def test_the_group_pickles_with_its_values_and_keeps_working() -> None:
    group = InMemoryMetricGroup()
    group.get_counter("c").inc(3)
    group.get_sub_group("s").get_histogram("h").update(2.0)
    group.get_gauge("g").update("x")
    group.get_sub_group("k", "v").get_meter("m").mark(3)
    restored = pickle.loads(pickle.dumps(group))
    assert restored.snapshot() == {**group.snapshot(), "k=v": {"m": {"count": 3, "rate": 0.0}}}
    # A restored group (new lock) makes metrics and counts on; a meter's rate starts
    # afresh (another process's clock), its count goes on.
    restored.get_sub_group("k", "v").get_meter("m").mark()
    assert restored.snapshot()["k=v"]["m"]["count"] == 4
    restored.get_counter("c").inc()
    restored.get_counter("new").inc()
    restored.get_sub_group("s").get_sub_group("t").get_counter("d").inc()
    assert restored.snapshot()["c"] == 4 and restored.snapshot()["new"] == 1
    assert restored.snapshot()["s"]["t"] == {"d": 1}
    assert group.snapshot()["c"] == 3  # the original is untouched


# ---------------------------------------------------------------------- recorders


def test_a_chat_call_counts_the_call_its_latency_and_known_tokens() -> None:
    group = InMemoryMetricGroup()
    record_chat_call(
        group, "gpt", _result(Usage(input_tokens=10, output_tokens=0, reasoning_tokens=4)), 0.25
    )
    assert group.snapshot() == {
        "chatModel": {
            "gpt": {
                "calls": 1,
                "callLatencyMs": {"count": 1, "mean": 250.0, "min": 250.0, "max": 250.0},
                "inputTokens": 10,
                "outputTokens": 0,  # reported as zero: counted as zero
                "reasoningTokens": 4,
                # Not reported: not counted, but the call is counted as unknown.
                "cacheReadTokensUnknown": 1,
                "cacheWriteTokensUnknown": 1,
            }
        }
    }


def test_chat_calls_add_up_per_model() -> None:
    group = InMemoryMetricGroup()
    record_chat_call(group, "a", _result(Usage(input_tokens=10)), 0.1)
    record_chat_call(group, "a", _result(Usage(input_tokens=5, cache_read_tokens=3)), 0.3)
    record_chat_call(group, "b", _result(Usage()), None)  # no latency measured
    models = group.snapshot()["chatModel"]
    a = models["a"]
    assert a["calls"] == 2
    assert a["callLatencyMs"]["count"] == 2
    assert a["callLatencyMs"]["mean"] == pytest.approx(200.0)
    assert a["inputTokens"] == 15
    assert a["cacheReadTokens"] == 3 and a["cacheReadTokensUnknown"] == 1
    assert a["outputTokensUnknown"] == 2
    assert "outputTokens" not in a  # never reported: no zero that looks like a count
    b = models["b"]
    assert b["calls"] == 1
    assert b["callLatencyMs"] == _empty_histogram()
    assert {name: b.get(f"{name}Unknown") for name in USAGE_COUNTERS.values()} == dict.fromkeys(
        USAGE_COUNTERS.values(), 1
    )


def test_each_group_keeps_its_own_chat_calls() -> None:
    first, second = InMemoryMetricGroup(), InMemoryMetricGroup()
    record_chat_call(first, "m", _result(Usage(input_tokens=1)), 0.1)
    record_chat_call(second, "m", _result(Usage(input_tokens=2)), 0.1)
    record_chat_call(second, "m", _result(Usage(input_tokens=2)), 0.1)
    assert first.snapshot()["chatModel"]["m"]["calls"] == 1
    assert first.snapshot()["chatModel"]["m"]["inputTokens"] == 1
    assert second.snapshot()["chatModel"]["m"]["calls"] == 2
    assert second.snapshot()["chatModel"]["m"]["inputTokens"] == 4


def test_usage_counters_name_every_token_count() -> None:
    counted = {name for name in Usage.model_fields if name.endswith("_tokens")} - {"total_tokens"}
    assert set(USAGE_COUNTERS) == counted
    assert USAGE_COUNTERS["input_tokens"] == "inputTokens"
    assert USAGE_COUNTERS["cache_write_tokens"] == "cacheWriteTokens"


def test_chat_errors_count_per_kind() -> None:
    group = InMemoryMetricGroup()
    record_chat_error(group, "m", "rate_limit")
    record_chat_error(group, "m", "rate_limit")
    record_chat_error(group, "m", "server")
    assert group.snapshot() == {
        "chatModel": {"m": {"errors": 3, "errorsByKind": {"rate_limit": 2, "server": 1}}}
    }


def test_chat_retries_count_and_their_waits_in_milliseconds() -> None:
    group = InMemoryMetricGroup()
    record_chat_retry(group, "m", 0.5)
    record_chat_retry(group, "m", 1.5)
    assert group.snapshot() == {
        "chatModel": {
            "m": {
                "retries": 2,
                "retryWaitMs": {"count": 2, "mean": 1000.0, "min": 500.0, "max": 1500.0},
            }
        }
    }


def test_tool_calls_count_failures_and_durations() -> None:
    group = InMemoryMetricGroup()
    record_tool_call(group, "lookup", True, 0.002)
    assert group.snapshot() == {
        "tool": {
            "lookup": {
                "calls": 1,  # a success makes no error counter
                "durationMs": {"count": 1, "mean": 2.0, "min": 2.0, "max": 2.0},
            }
        }
    }
    record_tool_call(group, "lookup", False, 0.004)
    record_tool_call(group, "other", False, 0.0)
    tools = group.snapshot()["tool"]
    assert (tools["lookup"]["calls"], tools["lookup"]["errors"]) == (2, 1)
    assert tools["lookup"]["durationMs"]["max"] == 4.0
    assert (tools["other"]["calls"], tools["other"]["errors"]) == (1, 1)


def test_a_name_with_an_equals_sign_is_recorded_not_refused() -> None:
    """A tool name comes from the model's answer: recording it never fails the call."""
    group = InMemoryMetricGroup()
    record_tool_call(group, "a=b", True, 0.001)
    record_chat_error(group, "model=x", "server")
    snapshot = group.snapshot()
    assert snapshot["tool"]["a_b"]["calls"] == 1
    assert snapshot["chatModel"]["model_x"]["errors"] == 1


def test_recorders_work_through_any_metric_group() -> None:
    """The operator records into Flink's groups: the recorders use only the interface."""

    class Recording(MetricGroup):
        def __init__(self, path: str, log: list[str]) -> None:
            self.path, self.log = path, log
            self.inner = InMemoryMetricGroup()

        def get_sub_group(self, name: str, value: str | None = None) -> MetricGroup:
            step = name if value is None else f"{name}={value}"
            return Recording(f"{self.path}/{step}", self.log)

        def get_counter(self, name: str) -> Counter:
            self.log.append(f"counter {self.path}/{name}")
            return self.inner.get_counter(name)

        def get_meter(self, name: str) -> Meter:
            raise AssertionError("no recorder marks a meter")

        def get_histogram(self, name: str, window_size: int = 100) -> Histogram:
            self.log.append(f"histogram {self.path}/{name}")
            return self.inner.get_histogram(name, window_size)

        def get_gauge(self, name: str) -> Gauge:
            raise AssertionError("no recorder sets a gauge")

    log: list[str] = []
    group = Recording("", log)
    record_tool_call(group, "lookup", False, 0.001)
    record_chat_error(group, "m", "server")
    assert log == [
        "counter /tool/lookup/calls",
        "counter /tool/lookup/errors",
        "histogram /tool/lookup/durationMs",
        "counter /chatModel/m/errors",
        "counter /chatModel/m/errorsByKind/server",
    ]
