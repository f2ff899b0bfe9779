"""Agent metrics copied into (fake) Flink metric groups, as changes since the last flush."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flink_agents.runtime.flink.flink_metrics import FlinkMetricsBridge
from flink_agents.runtime.metrics import InMemoryMetricGroup


class FakeFlinkGroup:
    def __init__(self) -> None:
        self.groups: dict[str, FakeFlinkGroup] = {}
        self.key_groups: dict[tuple[str, str], FakeFlinkGroup] = {}
        self.counters: dict[str, FakeCounter] = {}
        self.meters: dict[str, FakeMeter] = {}
        self.gauges: dict[str, FakeGauge] = {}

    def add_group(self, name: str, extra: str | None = None) -> FakeFlinkGroup:
        if extra is not None:  # PyFlink: a key group with a value group under it
            return self.key_groups.setdefault((name, extra), FakeFlinkGroup())
        return self.groups.setdefault(name, FakeFlinkGroup())

    def counter(self, name: str) -> Any:
        assert name not in self.counters, "a Flink metric is registered once"
        return self.counters.setdefault(name, FakeCounter())

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Any:
        assert name not in self.meters
        return self.meters.setdefault(name, FakeMeter(time_span_in_seconds))

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


class FakeMeter:
    def __init__(self, time_span_in_seconds: int) -> None:
        self.time_span_in_seconds = time_span_in_seconds
        self.marks: list[int] = []

    def mark_event(self, value: int = 1) -> None:
        self.marks.append(value)


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


def test_meters_and_key_value_groups_reach_flink() -> None:
    source = InMemoryMetricGroup()
    target = FakeFlinkGroup()
    bridge = FlinkMetricsBridge(source, target)
    tenant = source.get_sub_group("tenant", "acme")
    tenant.get_meter("requests").mark(4)
    tenant.get_sub_group("model", "gpt").get_counter("calls").inc()
    bridge.flush()

    flink_tenant = target.key_groups[("tenant", "acme")]
    assert "tenant" not in target.groups  # a key/value group, not a group named after the key
    requests = flink_tenant.meters["requests"]
    assert requests.time_span_in_seconds == 60  # Flink's MeterView computes the rate
    assert requests.marks == [4]
    assert flink_tenant.key_groups[("model", "gpt")].counters["calls"].count == 1

    tenant.get_meter("requests").mark()
    bridge.flush()
    bridge.flush()
    assert requests.marks == [4, 1]  # the events since the last flush, once


def test_a_histogram_reaches_flink_as_its_window_says() -> None:
    source = InMemoryMetricGroup()
    target = FakeFlinkGroup()
    bridge = FlinkMetricsBridge(source, target)
    histogram = source.get_histogram("sizeBytes", window_size=2)
    for value in (900.0, 10.0, 30.0):
        histogram.update(value)
    bridge.flush()
    assert target.counters["sizeBytesCount"].count == 3
    assert target.gauges["sizeBytesMean"].values == [20]
    assert target.gauges["sizeBytesMax"].values == [30]  # 900 fell out of the window


def test_pyflinks_process_mode_group_takes_what_the_bridge_sends() -> None:
    """PyFlink's own metric group (process mode: Beam metrics the Java side turns into
    Flink's): a key/value group, a meter over 60 s, counters and histogram gauges."""
    pytest.importorskip("pyflink")
    from apache_beam.metrics.execution import MetricsContainer
    from apache_beam.runners.worker import statesampler
    from apache_beam.utils import counters
    from pyflink.fn_execution.metrics.process.metric_impl import GenericMetricGroup

    source = InMemoryMetricGroup()
    tenant = source.get_sub_group("tenant", "acme")
    tenant.get_meter("requests").mark(4)
    tenant.get_counter("calls").inc(2)
    tenant.get_histogram("latencyMs").update(12.0)

    container = MetricsContainer("agent")
    sampler = statesampler.StateSampler("agent", counters.CounterFactory())
    statesampler.set_current_tracker(sampler)
    try:
        with sampler.scoped_state("agent", "process", metrics_container=container):
            flink_group: Any = GenericMetricGroup(None, None)  # typed `extra: str = None`
            FlinkMetricsBridge(source, flink_group).flush()
    finally:
        statesampler.set_current_tracker(None)
    updates = container.get_cumulative()
    counted = {(k.metric.namespace, k.metric.name): v for k, v in updates.counters.items()}
    scope = ["tenant", "acme", "MetricGroupType.key", "MetricGroupType.value"]
    assert counted[(json.dumps(scope), "calls")] == 2
    assert counted[(json.dumps([*scope, "60"]), "requests")] == 4  # a MeterView of 60 s
    assert counted[(json.dumps(scope), "latencyMsCount")] == 1
    distributions = {k.metric.name: v for k, v in updates.distributions.items()}
    assert distributions["latencyMsMax"].max == 12


def test_end_of_input_timers_with_nothing_left_push_metrics_at_the_usual_rate() -> None:
    """Every key's end-of-input timer reaches the operator (20,000 keys: 20,000 timers, the
    first drains them all): they copy the agent's metrics to Flink at most once per
    `metrics_interval_s`, as the other callbacks do, not once each."""
    pytest.importorskip("pyflink")
    from flink_agents.runtime.flink.operator import KeyedAgentOperator
    from flink_agents.runtime.scheduler import RunSchedulerStats

    class CountedBridge:
        flushes = 0

        def flush(self) -> None:
            self.flushes += 1

    class NothingLeft:
        def on_end_of_input(self, *args: Any) -> Any:
            return iter(())

    class TimerContext:
        def get_current_key(self) -> str:
            return "k"

        def timer_service(self) -> Any:
            return None

    operator: Any = KeyedAgentOperator(lambda context: None)  # type: ignore[arg-type, return-value]
    bridge = CountedBridge()
    operator._runs, operator._state, operator._current_key = NothingLeft(), object(), object()
    operator._metrics, operator._scheduler = bridge, type("S", (), {"stats": RunSchedulerStats()})
    for _ in range(100):
        assert list(operator._drain(TimerContext())) == []
    assert bridge.flushes == 1
