"""Agent metrics per subtask, published through Flink's metric groups.

Actions record metrics on the run loop's thread; Flink metric objects may only be touched
on the operator thread (in thread mode they are Java objects reached through pemja). So the
agent side writes into an `InMemoryMetricGroup`, and the operator thread calls `flush` from
its callbacks to push the changes into Flink:

- sub-groups -> Flink groups (``add_group(name)``); key/value sub-groups -> Flink's
  key/value groups (``add_group(key, value)``: a user variable ``<key>`` = value);
- counters -> Flink counters (incremented by the change since the last flush);
- meters -> Flink meters (``MeterView`` over `METER_SPAN_S`, marked with the events since
  the last flush: Flink computes the rate);
- numeric gauges -> Flink "distribution" gauges holding the last value (integers);
- histograms -> a Flink counter `<name>Count` and gauges `<name>Mean`, `<name>Min`,
  `<name>Max` over the histogram's window (integers, the unit is in the name, e.g.
  milliseconds). PyFlink has no histogram metric of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from flink_agents.api.metric_group import METER_SPAN_S
from flink_agents.runtime.metrics import InMemoryMetricGroup

__all__ = ["FlinkMetricGroupLike", "FlinkMetricsBridge"]

_Step = str | tuple[str, str]
"""One step down the group tree: a sub-group's name, or a key/value group's pair."""
_Path = tuple[_Step, ...]
_H = TypeVar("_H")


class _FlinkCounter(Protocol):
    def inc(self, n: int = 1) -> None: ...


class _FlinkMeter(Protocol):
    def mark_event(self, value: int = 1) -> None: ...


class _FlinkDistribution(Protocol):
    def update(self, value: int) -> None: ...


class FlinkMetricGroupLike(Protocol):
    """The part of `pyflink.metrics.MetricGroup` used here."""

    def add_group(self, name: str, extra: str | None = None) -> Any: ...

    def counter(self, name: str) -> Any: ...

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Any: ...

    def distribution(self, name: str) -> Any: ...


class FlinkMetricsBridge:
    """Copies an in-memory metric tree into a Flink metric group, on the operator thread."""

    def __init__(
        self,
        source: InMemoryMetricGroup,
        target: FlinkMetricGroupLike,
    ) -> None:
        self._source = source
        self._target = target
        self._groups: dict[_Path, Any] = {(): target}
        self._counters: dict[_Path, _FlinkCounter] = {}
        self._meters: dict[_Path, _FlinkMeter] = {}
        self._distributions: dict[_Path, _FlinkDistribution] = {}
        self._sent_counts: dict[_Path, int] = {}
        self._sent_events: dict[_Path, int] = {}
        self._sent_values: dict[_Path, int] = {}

    def flush(self) -> None:
        """Push every change since the last flush to Flink."""
        try:
            self._flush_group((), self._source)
        except RuntimeError:  # the run loop added a metric mid-copy: the next flush gets it
            return

    def _flush_group(self, path: _Path, group: InMemoryMetricGroup) -> None:
        # The in-memory group keeps counters, gauges and histograms apart; its snapshot
        # does not (an int gauge looks like a counter there), so read them by kind.
        for name, counter in list(getattr(group, "_counters", {}).items()):
            self._add_count((*path, name), counter.get_count())
        for name, meter in list(getattr(group, "_meters", {}).items()):
            self._mark((*path, name), meter.get_count())
        for name, gauge in list(getattr(group, "_gauges", {}).items()):
            value = gauge.get_value()
            if isinstance(value, (int, float)):  # bool is an int
                self._set_value((*path, name), round(value))
            # other gauge values (strings, None) have no Flink form: skipped
        for name, histogram in list(getattr(group, "_histograms", {}).items()):
            count_path = (*path, f"{name}Count")
            count = histogram.get_count()
            if self._sent_counts.get(count_path, 0) == count:
                continue  # nothing recorded since the last flush: its window is as it was
            for stat, value in (
                ("Mean", histogram.get_mean()),
                ("Min", histogram.get_min()),
                ("Max", histogram.get_max()),
            ):
                self._set_value((*path, f"{name}{stat}"), round(value))
            self._add_count(count_path, count)
        for name, sub_group in list(getattr(group, "_groups", {}).items()):
            self._flush_group((*path, name), sub_group)
        for pair, sub_group in list(getattr(group, "_kv_groups", {}).items()):
            self._flush_group((*path, pair), sub_group)

    def _group(self, path: _Path) -> Any:
        group = self._groups.get(path)
        if group is None:
            parent = self._group(path[:-1])
            step = path[-1]
            group = parent.add_group(*step) if isinstance(step, tuple) else parent.add_group(step)
            self._groups[path] = group
        return group

    @staticmethod
    def _name(path: _Path) -> str:
        name = path[-1]
        assert isinstance(name, str)  # a metric's own step is its name
        return name

    def _handle(self, made: dict[_Path, _H], path: _Path, make: Callable[[Any, str], _H]) -> _H:
        """The Flink metric of ``path``, made (``make(group, name)``) on first use."""
        handle = made.get(path)
        if handle is None:
            handle = made[path] = make(self._group(path[:-1]), self._name(path))
        return handle

    def _add_count(self, path: _Path, total: int) -> None:
        delta = total - self._sent_counts.get(path, 0)
        if delta == 0:
            return
        self._handle(self._counters, path, lambda group, name: group.counter(name)).inc(delta)
        self._sent_counts[path] = total

    def _mark(self, path: _Path, total: int) -> None:
        delta = total - self._sent_events.get(path, 0)
        if delta == 0:
            return
        meter = self._handle(
            self._meters, path, lambda group, name: group.meter(name, METER_SPAN_S)
        )
        meter.mark_event(delta)
        self._sent_events[path] = total

    def _set_value(self, path: _Path, value: int) -> None:
        if self._sent_values.get(path) == value:
            return
        gauge = self._handle(
            self._distributions, path, lambda group, name: group.distribution(name)
        )
        gauge.update(value)
        self._sent_values[path] = value
