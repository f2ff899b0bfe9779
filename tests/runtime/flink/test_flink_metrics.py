"""Agent metrics copied into (fake) Flink metric groups, as changes since the last flush."""

from __future__ import annotations

from typing import Any

from flink_agents.runtime.flink.flink_metrics import FlinkMetricsBridge
from flink_agents.runtime.metrics import InMemoryMetricGroup


class FakeFlinkGroup:
    def __init__(self) -> None:
        self.groups: dict[str, FakeFlinkGroup] = {}
        self.counters: dict[str, FakeCounter] = {}
        self.gauges: dict[str, FakeGauge] = {}

    def add_group(self, name: str, extra: str | None = None) -> FakeFlinkGroup:
        return self.groups.setdefault(name, FakeFlinkGroup())

    def counter(self, name: str) -> Any:
        assert name not in self.counters, "a Flink metric is registered once"
        return self.counters.setdefault(name, FakeCounter())

    def distribution(self, name: str) -> Any:
        assert name not in self.gauges
        return self.gauges.setdefault(name, FakeGauge())


class FakeCounter:
    def __init__(self) -> None:
        self.count = 0
        self.calls = 0

    def inc(self, n: int = 1) -> None:
        self.count += n
        self.calls += 1


class FakeGauge:
    def __init__(self) -> None:
        self.values: list[int] = []

    def update(self, value: int) -> None:
        self.values.append(value)


def test_counters_histograms_and_gauges_reach_flink() -> None:
    source = InMemoryMetricGroup()
    target = FakeFlinkGroup()
    bridge = FlinkMetricsBridge(source, target)
    model = source.get_sub_group("chatModel").get_sub_group("gpt")
    model.get_counter("calls").inc(2)
    model.get_histogram("callLatencyMs").update(10.0)
    model.get_histogram("callLatencyMs").update(30.0)
    source.get_gauge("queue").update(7)
    source.get_gauge("label").update("text")  # no Flink form: skipped
    bridge.flush()

    flink_model = target.groups["chatModel"].groups["gpt"]
    assert flink_model.counters["calls"].count == 2
    assert flink_model.counters["callLatencyMsCount"].count == 2
    assert flink_model.gauges["callLatencyMsMean"].values == [20]
    assert flink_model.gauges["callLatencyMsMin"].values == [10]
    assert flink_model.gauges["callLatencyMsMax"].values == [30]
    assert target.gauges["queue"].values == [7]
    assert "label" not in target.gauges

    model.get_counter("calls").inc()
    bridge.flush()
    bridge.flush()
    calls = flink_model.counters["calls"]
    assert (calls.count, calls.calls) == (3, 2)  # one increment per change, by the change
    assert flink_model.gauges["callLatencyMsMean"].values == [20]  # unchanged: not re-sent
